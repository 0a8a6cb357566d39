package nodeload

import (
	"fmt"

	"github.com/slurm-mig/slurm-mig/internal/cpulist"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// resolveTopology fills in each GPU's Cores and, if asked, the Hardware
// from the host's CPU topology, keeping what a snapshot carries; sysfs is
// read only when something is missing.
func resolveTopology(n *model.Node, host *Host, hardware bool) error {
	need := hardware && n.Hardware == nil
	for i := range n.GPUs {
		need = need || (n.GPUs[i].CPUAffinity != "" && n.GPUs[i].Cores == "")
	}
	if !need {
		return nil
	}
	topo, err := host.topology()
	if err != nil {
		return fmt.Errorf("CPU topology: %w", err)
	}
	if hardware && n.Hardware == nil {
		hw, err := topo.Hardware(host.fs)
		if err != nil {
			return fmt.Errorf("CPU topology: %w", err)
		}
		n.Hardware = &hw
	}
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if g.CPUAffinity == "" || g.Cores != "" {
			continue
		}
		cores, err := topo.AbstractCores(g.CPUAffinity)
		if err != nil {
			return fmt.Errorf("%s: cpu_affinity %q: %w", g.Label(), g.CPUAffinity, err)
		}
		g.Cores = cpulist.Format(cores)
	}
	return nil
}
