package main

import (
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/kongrun"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
)

type planCmd struct {
	sourceFlags
	countFlags
	MigConfig string `type:"nonempty" required:"" placeholder:"FILE" help:"The mig-parted config file (v1) that mig-parted will apply."`
	Select    string `type:"nonempty" required:"" placeholder:"NAME" help:"The config of FILE that mig-parted will apply (its --selected-config)."`
	JSON      bool   `name:"json" help:"Print the plan as JSON: {\"node_line\", \"mig_config\", \"select\", \"gpus\": [{\"index\", \"name\", \"entry\": {\"number\", \"line\"} or null when no entry matches and the GPU keeps its layout, \"mig_enabled\", \"mig_devices\": [{\"profile\", \"count\"}], \"gres\": [{\"type\", \"count\"}]}]}."`
}

func (c *planCmd) Run(e *env) error {
	if err := c.check(); err != nil {
		return err
	}
	cfg, err := migplan.ReadConfig(c.MigConfig)
	if err != nil {
		return err
	}
	sel, err := cfg.Select(c.Select)
	if err != nil {
		return err
	}
	node, err := e.loader.LoadProfiles(c.From)
	if err != nil {
		return err
	}
	plan, err := migplan.Make(node, sel, e.warn)
	if err != nil {
		return err
	}
	name, err := e.loader.NodeName(node, c.NodeName, c.NoNodeName)
	if err != nil {
		return err
	}
	slurm, err := plan.Counts(name, gresgen.Options{TypeStyle: gresgen.TypeStyle(c.TypeStyle), TypeMap: c.TypeMap, Warn: e.warn})
	if err != nil {
		return err
	}
	return kongrun.PrintReport(e.stdout, slurm, c.JSON)
}
