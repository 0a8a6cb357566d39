package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/claim"
)

// claimFlags are what free and exec share: which MIG devices, and where
// claims live.
type claimFlags struct {
	sourceFlags
	Count   int    `default:"1" placeholder:"N" help:"Claim N MIG devices, all or none (free prints them comma-separated)."`
	Profile string `type:"nonempty" placeholder:"PROFILE" help:"Only MIG devices of this profile (1g.10gb)."`
	Claims  string `type:"nonempty" default:"/run/slurm-mig/claims" env:"SLURM_MIG_CLAIMS" placeholder:"DIR" help:"Directory of the node's claims, shared by all users (created mode 1777 if missing)."`
}

// claim discovers the node with the compute processes on its MIG
// devices, and claims idle ones among those the job may use.
func (f *claimFlags) claim(e *env, job claim.Job, command string) (*claim.Claim, error) {
	if f.Count < 1 || f.Count > claim.MaxDevices {
		return nil, fmt.Errorf("--count %d: want 1 to %d", f.Count, claim.MaxDevices)
	}
	node, warnings, err := e.loader.LoadBusy(f.From)
	e.warnAll(warnings)
	if err != nil {
		return nil, err
	}
	req := claim.Request{Count: f.Count, Profile: f.Profile, Dir: f.Claims, Job: job, Command: command, Timeout: e.loader.Timeout}
	req.Visible, req.VisibleSet = os.LookupEnv("CUDA_VISIBLE_DEVICES")
	return claim.Devices(node, req, e.warn)
}

type freeCmd struct {
	claimFlags
	PID int `placeholder:"PID" help:"End the claim when process PID ends (default: the shell that ran slurm-mig, also through $(...))."`
}

func (c *freeCmd) Run(e *env) error {
	job, err := claim.FindJob(c.PID)
	if err != nil {
		return err
	}
	// The job's holder starts now (where this is the job's first call),
	// while this call and the others of a burst choose their devices.
	holder := claim.Dial(job, os.Args[0], e.warnText)
	defer holder.Close()
	cl, err := c.claim(e, job, "free")
	if err != nil {
		return err
	}
	defer cl.Close()
	return holder.HandOut(cl.Files, func() error {
		if _, err := fmt.Fprintln(e.stdout, strings.Join(cl.UUIDs, ",")); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
		return nil
	})
}

type execCmd struct {
	claimFlags
	Command []string `arg:"" passthrough:"" placeholder:"CMD" help:"The command to run, with its arguments (after --)."`
}

// Run claims, hands the claim to a holder that ends it when CMD ends, then
// becomes CMD.
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
	e.loader.Done() // CMD must not inherit NVML's descriptors
	return claim.Exec(cl, job, os.Args[0], path, c.Command)
}
