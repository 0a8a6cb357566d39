package main

import (
	"fmt"

	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/grescheck"
	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

type checkCmd struct {
	GresConf     string   `type:"nonempty" required:"" placeholder:"FILE" help:"The gres.conf to check, as the controller serves it."`
	SlurmConf    string   `type:"nonempty" placeholder:"FILE" help:"The slurm.conf whose NodeName lines name the nodes and declare their Gres= counts."`
	Node         []string `placeholder:"NAME" help:"Check this node (repeat for more; default: every node slurm.conf declares, else every node gres.conf names)."`
	SlurmVersion string   `type:"nonempty" placeholder:"X.Y[.Z]" help:"The Slurm release whose slurmd reads the files (default: slurmd -V of this host's Slurm)."`
	JSON         bool     `name:"json" help:"Print the result as JSON: {\"nodes\": [{\"node\", \"gres\": [{\"name\", \"type\", \"count\", \"files\", \"cores\", \"links\", \"flags\"}], \"problems\": [{\"pos\", \"severity\", \"message\"}]}], \"verdict\"}."`
}

func (c *checkCmd) Run(e *env) error {
	for _, n := range c.Node {
		if n == "" {
			return fmt.Errorf("--node: expected a node name, got an empty value")
		}
	}
	var given slurmconf.Version
	if c.SlurmVersion != "" {
		v, err := slurmhost.ParseRelease(c.SlurmVersion)
		if err != nil {
			return fmt.Errorf("--slurm-version: %w", err)
		}
		given = v
	}
	version, _, warning := slurmhost.Release(given, slurmhost.ProbeInstalled())
	if warning != nil {
		e.warn(warning)
	}
	rep, err := grescheck.Check(grescheck.Inputs{GresConf: c.GresConf, SlurmConf: c.SlurmConf, Nodes: c.Node, Version: version})
	if err != nil {
		return err
	}
	if err := cmdline.PrintReport(e.stdout, cmdline.Clipped{Report: rep}, c.JSON); err != nil {
		return err
	}
	if rep.Status != 0 {
		return cmdline.Status(rep.Status)
	}
	return nil
}
