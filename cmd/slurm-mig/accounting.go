package main

import (
	"fmt"

	"github.com/slurm-mig/slurm-mig/internal/accounting"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// accountingFlags ask node, merge and plan for the slurm.conf lines that
// bill and account each MIG device by its size (docs/accounting.md).
type accountingFlags struct {
	Accounting bool   `help:"Print the slurm.conf accounting lines instead: AccountingStorageTRES= with gres/gpu and every GPU type of the nodes (the site's other TRES kept, with --slurm-conf), and TRESBillingWeights= for each partition holding the nodes (a PartitionName=DEFAULT line without --slurm-conf), each type billing its share of its GPU times the GPU's --gpu-weight (docs/accounting.md)."`
	Share      string `enum:"compute,memory" default:"compute" help:"With --accounting, a MIG device's share of its GPU: compute (its compute slices of the GPU's 7: seven 1g.10gb bill one GPU) or memory (its memory slices of the GPU's 8: a 1g.10gb bills 1/8, a 1g.20gb 2/8). One of: ${enum}."`
	GPUWeight  string `name:"gpu-weight" default:"1" placeholder:"WEIGHTS" help:"With --accounting, what a whole GPU bills: one number for every model (1.5), or MODEL=NUMBER per model, MODEL being the type a whole GPU of it has (h100=2,a100=1), with a bare number for the models not named."`
}

// options are the flags as accounting takes them.
func (f *accountingFlags) options() (accounting.Options, error) {
	w, err := accounting.ParseGPUWeights(f.GPUWeight)
	if err != nil {
		return accounting.Options{}, fmt.Errorf("--gpu-weight: %w", err)
	}
	b, err := accounting.ParseBasis(f.Share)
	if err != nil {
		return accounting.Options{}, fmt.Errorf("--share: %w", err)
	}
	return accounting.Options{Basis: b, Weights: w}, nil
}

// lines works out the accounting lines of nodes, against the slurm.conf
// at conf when not "" (its AccountingStorageTRES and partitions), and
// warns of nodes no partition holds.
func (f *accountingFlags) lines(e *env, nodes []accounting.Node, conf string) (*accounting.Lines, *slurmconf.Accounting, error) {
	o, err := f.options()
	if err != nil {
		return nil, nil, err
	}
	var a *slurmconf.Accounting
	if conf != "" {
		if a, err = slurmconf.ReadAccounting(conf); err != nil {
			return nil, nil, err
		}
	}
	l, err := accounting.Make(nodes, o, a)
	if err != nil {
		return nil, nil, err
	}
	if len(l.Unpartitioned) > 0 {
		e.warn(fmt.Errorf("%s: no partition holds node %s: its types are accounted, and billed by no partition's weights", conf, slurmconf.CompressHostlist(l.Unpartitioned)))
	}
	return l, a, nil
}

// checkUnused refuses accounting flags given without --accounting: a
// --gpu-weight that does nothing is a mistake.
func (f *accountingFlags) checkUnused() error {
	if !f.Accounting && (f.Share != "compute" || f.GPUWeight != "1") {
		return fmt.Errorf("--share and --gpu-weight go with --accounting")
	}
	return nil
}
