package main

import (
	"fmt"

	"github.com/slurm-mig/slurm-mig/drift"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

type diffCmd struct {
	sourceFlags
	recordFlags
	GresConf  string `placeholder:"FILE" help:"Compare with this gres.conf (default /etc/slurm/gres.conf when nothing else is compared); a pipe, or - for standard input, works too."`
	SlurmConf string `placeholder:"FILE" help:"Compare the Gres= counts this node's NodeName line declares in FILE (a pipe, or - for standard input)."`
	Running   bool   `help:"Compare the Gres= the running slurmctld has for this node (scontrol show node)."`
	State     string `placeholder:"FILE" help:"Compare the device state slurm-mig env reads with the GPUs (default: ${state_env} or ${state_default}, when it exists and the GPUs are read from NVML)."`
	JSON      bool   `name:"json" help:"Print the result as JSON."`
}

func (c *diffCmd) Run(e *env) error {
	if c.GresConf == slurmconf.Stdin && c.SlurmConf == slurmconf.Stdin {
		return fmt.Errorf("--gres-conf and --slurm-conf cannot both read standard input")
	}
	e.probeSlurm()
	node, err := e.loader.Load(c.From)
	if err != nil {
		return err
	}
	e.nvml.Release() // before reading configs and asking slurmctld
	cfg, err := c.config(e, node)
	if err != nil {
		return err
	}
	state, err := drift.StateToCompare(e.stateFile(c.State, c.From), node, cfg.NodeName)
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
