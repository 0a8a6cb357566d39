package main

import (
	"github.com/slurm-mig/slurm-mig/claim"
)

type execCmd struct {
	claimFlags
	Command []string `arg:"" passthrough:"" placeholder:"CMD" help:"The command to run, with its arguments (after --)."`
}

// Run claims, then becomes CMD, which holds the claim as long as it runs.
func (c *execCmd) Run(e *env) error {
	if len(c.Command) > 0 && c.Command[0] == "--" { // kong passes the -- on
		c.Command = c.Command[1:]
	}
	path, err := claim.LookPath(c.Command)
	if err != nil {
		return err
	}
	job, err := claim.Self()
	if err != nil {
		return err
	}
	cl, err := c.claim(e, job, "exec")
	if err != nil {
		return err
	}
	e.nvml.Release() // CMD must not inherit NVML's descriptors
	return claim.Exec(cl, path, c.Command)
}
