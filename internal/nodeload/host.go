package nodeload

import (
	"sync"

	"github.com/slurm-mig/slurm-mig/capmap"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/topology"
)

// Host reads what the node model needs from the node's files rather than
// from NVML: the CPU topology (for Cores= and the node's hardware) and the
// MIG cap minors. Each is read at most once, when first needed.
type Host struct {
	fs       hostfs.FS
	topology func() (*topology.Topology, error)
	capMap   func() (*capmap.Map, error)
}

// NewHost reads the node's files in fs.
func NewHost(fs hostfs.FS) *Host {
	return &Host{
		fs:       fs,
		topology: sync.OnceValues(func() (*topology.Topology, error) { return topology.Load(fs) }),
		capMap:   sync.OnceValues(func() (*capmap.Map, error) { return capmap.Load(string(fs)) }),
	}
}
