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

// migProfiles fills in each GPU's MIG profile table through NVML, within
// the timeout, for snapshots. NVML reads into a copy of the GPUs, so that
// a read that answers after the timeout cannot change the node being
// written; on an error the node is left as it was.
func (l *Loader) migProfiles(node *model.Node) error {
	read := *node
	read.GPUs = append([]model.GPU(nil), node.GPUs...)
	done := make(chan error, 1)
	go func() {
		done <- l.NVML.use(func(lib nvml.Interface) error { return nvmlread.ReadMigProfiles(lib, &read) })
	}()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
		for i := range node.GPUs {
			node.GPUs[i].Profiles = read.GPUs[i].Profiles
		}
		return nil
	case <-time.After(l.Timeout):
		return fmt.Errorf("nvml: no answer within %s (a hung GPU or driver?)", l.Timeout)
	}
}
