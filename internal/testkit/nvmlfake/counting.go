package nvmlfake

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// ShutdownCounter wraps a library and counts the Shutdown calls that
// reach it: tests pin when a run hands NVML back.
type ShutdownCounter struct {
	nvml.Interface
	Shutdowns int
}

func (c *ShutdownCounter) Shutdown() nvml.Return {
	c.Shutdowns++
	return c.Interface.Shutdown()
}
