package gresgen

import (
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Counts are each GPU's Gres= counts, in the node's GPU order, and the
// warnings about their type names that Records gives too.
type Counts struct {
	PerGPU   [][]slurmconf.GresCount
	Warnings []error
}

// Count counts each GPU's devices typed as Records types them, from the
// profiles alone (plan counts MIG devices that do not exist yet).
func Count(n *Node, o Options) (*Counts, error) { return count(n, o, true) }

// GPUCounts are Count's PerGPU, for a caller that says no warnings.
func GPUCounts(n *Node, o Options) ([][]slurmconf.GresCount, error) {
	c, err := count(n, o, false)
	if err != nil {
		return nil, err
	}
	return c.PerGPU, nil
}

// count is Count, with the warnings only when asked for.
func count(n *Node, o Options, warn bool) (*Counts, error) {
	typer, err := newTyper(o)
	if err != nil {
		return nil, err
	}
	per := make([][]slurmconf.GresCount, len(n.GPUs))
	for i := range n.GPUs {
		g := &n.GPUs[i]
		var types []string
		if !g.MigEnabled {
			t, err := typer.gpuType(g)
			if err != nil {
				return nil, err
			}
			types = append(types, t)
		} else {
			for j := range g.MigDevices {
				t, err := typer.migType(g, &g.MigDevices[j])
				if err != nil {
					return nil, err
				}
				types = append(types, t)
			}
		}
		per[i] = countTypes(types)
	}
	c := &Counts{PerGPU: per}
	if warn {
		c.Warnings = append(typer.clashes(), unmatchedTypeMap(n, o.TypeMap)...)
	}
	return c, nil
}

// countTypes counts gpu GRES by type, in the order first seen, as
// slurmconf.CountGres counts records.
func countTypes(types []string) []slurmconf.GresCount {
	var counts []slurmconf.GresCount
	at := map[string]int{}
	for _, t := range types {
		i, ok := at[t]
		if !ok {
			i = len(counts)
			at[t] = i
			counts = append(counts, slurmconf.GresCount{Name: "gpu", Type: t})
		}
		counts[i].Count++
	}
	return counts
}

// SumCounts adds up counts of several GPUs (GPUCounts) into the node's,
// in the order first seen.
func SumCounts(per [][]slurmconf.GresCount) []slurmconf.GresCount {
	var counts []slurmconf.GresCount
	at := map[string]int{}
	for _, cs := range per {
		for _, c := range cs {
			i, ok := at[c.Type]
			if !ok {
				i = len(counts)
				at[c.Type] = i
				counts = append(counts, slurmconf.GresCount{Name: c.Name, Type: c.Type})
			}
			counts[i].Count += c.Count
		}
	}
	return counts
}

// DeviceType is the GRES type of one device of a node: a whole GPU (Mig
// nil) or one of its MIG devices.
type DeviceType struct {
	GPU  *model.GPU
	Mig  *model.MigDevice
	Type string
	// Model is the type the GPU has when whole, whatever the type style
	// makes of its MIG devices' types: a100 for a100_1g.10gb, and for
	// 1g.10gb (--type-style profile) too.
	Model string
}

// DeviceTypes are the types of the node's devices, in the node's order,
// as GPUCounts and Records name them. Warnings are GPUCounts'.
func DeviceTypes(n *Node, o Options) ([]DeviceType, error) {
	typer, err := newTyper(o)
	if err != nil {
		return nil, err
	}
	var out []DeviceType
	for i := range n.GPUs {
		g := &n.GPUs[i]
		whole, err := typer.gpuType(g)
		if err != nil {
			return nil, err
		}
		if !g.MigEnabled {
			out = append(out, DeviceType{GPU: g, Type: whole, Model: whole})
			continue
		}
		for j := range g.MigDevices {
			t, err := typer.migType(g, &g.MigDevices[j])
			if err != nil {
				return nil, err
			}
			out = append(out, DeviceType{GPU: g, Mig: &g.MigDevices[j], Type: t, Model: whole})
		}
	}
	return out, nil
}
