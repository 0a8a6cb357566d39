package main

import (
	"fmt"
	"os"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/drift"
	"github.com/slurm-mig/slurm-mig/jobenv"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

type diffCmd struct {
	sourceFlags
	recordFlags
	GresConf  string `placeholder:"FILE" help:"Compare with this gres.conf (default /etc/slurm/gres.conf when nothing else is compared); a pipe, or - for standard input, works too."`
	SlurmConf string `placeholder:"FILE" help:"Compare the Gres= counts this node's NodeName line declares in FILE (a pipe, or - for standard input)."`
	Running   bool   `help:"Compare the Gres= the running slurmctld has for this node (scontrol show node)."`
	State     string `placeholder:"FILE" help:"Compare the device state slurm-mig env reads with the GPUs (default: $SLURM_MIG_STATE or /run/slurm-mig/devices.json, when it exists and the GPUs are read from NVML)."`
	JSON      bool   `name:"json" help:"Print the result as JSON."`
}

func (c *diffCmd) Run(e *env) error {
	if c.GresConf == slurmconf.Stdin && c.SlurmConf == slurmconf.Stdin {
		return fmt.Errorf("--gres-conf and --slurm-conf cannot both read standard input")
	}
	node, err := c.load(e)
	if err != nil {
		return err
	}
	e.nvml.Release() // before reading configs and asking slurmctld
	cfg, err := c.config(e, node)
	if err != nil {
		return err
	}
	state, err := c.stateInput(e, node, cfg.NodeName)
	if err != nil {
		return err
	}
	rep, err := drift.Compare(drift.Inputs{Config: cfg, GresConf: c.GresConf, SlurmConf: c.SlurmConf, Running: c.Running, State: state})
	if err != nil {
		return err
	}
	write := rep.WriteText
	if c.JSON {
		write = rep.WriteJSON
	}
	if err := e.print(write); err != nil {
		return err
	}
	if !rep.Same {
		return errDifferent{}
	}
	return nil
}

// stateInput is the device state to compare: the one --state names, or
// the default one when it exists and the GPUs are this node's (NVML, not
// a snapshot).
func (c *diffCmd) stateInput(e *env, node *discover.Node, name string) (*drift.StateInput, error) {
	path := c.State
	if path == "" {
		if c.From != "" {
			return nil, nil
		}
		path = jobenv.StatePath("", os.Getenv)
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
	}
	boot := ""
	if c.From == "" {
		boot = jobenv.ReadBootID(e.root)
	}
	want, err := jobenv.NewState(node, name, boot, "")
	if err != nil {
		return nil, err
	}
	return &drift.StateInput{Path: path, Want: want, Asked: c.State != ""}, nil
}
