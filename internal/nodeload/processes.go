package nodeload

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/nodeload/nvmlread"
)

// processes fills in the compute processes running on the node's MIG
// devices through NVML, within the timeout, for free, exec and snapshots
// (a snapshot carries its own). On an error the node is left as it was.
func (l *Loader) processes(node *model.Node) error {
	return l.withNVML(func(lib nvml.Interface) error { return nvmlread.ReadProcesses(lib, node) })
}

// migProfiles fills in each GPU's MIG profile table through NVML, within
// the timeout, into a copy: on an error the node is left as it was.
func (l *Loader) migProfiles(node *model.Node) error {
	read := *node
	read.GPUs = append([]model.GPU(nil), node.GPUs...)
	if err := l.withNVML(func(lib nvml.Interface) error { return nvmlread.ReadMigProfiles(lib, &read) }); err != nil {
		return err
	}
	for i := range node.GPUs {
		node.GPUs[i].Profiles = read.GPUs[i].Profiles
	}
	return nil
}
