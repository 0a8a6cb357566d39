package nodeload

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/nodeload/nvmlread"
)

// processes fills in the compute processes running on the node's MIG
// devices through NVML, within the timeout, for free, exec and snapshots
// (a snapshot carries its own). On an error the node is left as it was.
func (l *Loader) processes(node *model.Node) error {
	done := make(chan error, 1)
	go func() {
		done <- l.NVML.use(func(lib nvml.Interface) error { return nvmlread.ReadProcesses(lib, node) })
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(l.Timeout):
		return fmt.Errorf("nvml: no answer within %s (a hung GPU or driver?)", l.Timeout)
	}
}
