package main

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// readHardware reads the --hardware NODES=SNAPSHOT declarations of rebalance
// and plan: hostlist expanded, snapshot read, declaration named as given.
// Their hostlists count against names, the run's budget.
func readHardware(specs []string, names *slurmconf.NameBudget) ([]migplan.Hardware, error) {
	var hw []migplan.Hardware
	for _, spec := range specs {
		list, file, ok := strings.Cut(spec, "=")
		if !ok || list == "" || file == "" {
			return nil, fmt.Errorf("--hardware %q: want NODES=SNAPSHOT", spec)
		}
		nodes, err := names.Expand(list)
		if err != nil {
			shown := spec // as given, unless it is long: errors are one short line
			if len(spec) > 64 {
				shown = slurmconf.QuoteShort(spec)
			}
			return nil, fmt.Errorf("--hardware %s: %v", shown, err)
		}
		snap, err := snapshot.Load(file)
		if err != nil {
			return nil, err
		}
		hw = append(hw, migplan.Hardware{Spec: "--hardware " + spec, Nodes: nodes, Snapshot: snap})
	}
	return hw, nil
}
