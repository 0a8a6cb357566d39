package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/slurm-mig/slurm-mig/jobenv"
)

// envCmd is Slurm's TaskProlog. It has no nvml:"" tag: it never starts
// NVML, whose UUIDs it takes from the device state.
type envCmd struct {
	From      string `type:"nonempty" placeholder:"SNAPSHOT" help:"Take the UUIDs from a snapshot (slurm-mig snapshot) instead of the device state."`
	State     string `type:"nonempty" placeholder:"FILE" help:"The device state to read (default ${state_env}, else ${state_default})."`
	SlurmConf string `type:"nonempty" placeholder:"FILE" help:"The slurm.conf with this node's Gres= (default $SLURM_CONF, else /etc/slurm/slurm.conf, else slurmd's configless cache /run/slurm/conf/slurm.conf)."`
	GresConf  string `type:"nonempty" placeholder:"FILE" help:"The gres.conf slurmd reads (default: gres.conf beside slurm.conf)."`
}

func (c *envCmd) Run(e *env) error {
	lines, err := jobenv.Run(jobenv.Options{SlurmConf: c.SlurmConf, GresConf: c.GresConf, State: c.State, Snapshot: c.From, Root: e.build.Root}, os.LookupEnv)
	if err != nil {
		return fmt.Errorf("env: %w", err)
	}
	return e.print(func(w io.Writer) error {
		_, err := io.WriteString(w, strings.Join(append(lines, ""), "\n"))
		return err
	})
}
