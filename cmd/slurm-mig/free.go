package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/claim"
	"github.com/slurm-mig/slurm-mig/discover"
)

// claimFlags are what free and exec share: which MIG devices, and where
// claims live.
type claimFlags struct {
	sourceFlags
	Count   int    `default:"1" placeholder:"N" help:"Claim N MIG devices, all or none (free prints them comma-separated)."`
	Profile string `placeholder:"PROFILE" help:"Only MIG devices of this profile (1g.10gb)."`
	Claims  string `default:"/run/slurm-mig/claims" env:"SLURM_MIG_CLAIMS" placeholder:"DIR" help:"Directory of the node's claims, shared by all users (created mode 1777 if missing)."`
}

// claim discovers the node with the compute processes on its MIG
// devices, and claims idle ones among those the job may use.
func (f *claimFlags) claim(e *env, g *cli, job claim.Job, command string) (*claim.Claim, error) {
	if f.Count < 1 || f.Count > 256 {
		return nil, fmt.Errorf("--count %d: want 1 to 256", f.Count)
	}
	node, err := f.load(e, g)
	if err != nil {
		return nil, err
	}
	if f.From == "" { // a snapshot carries its processes
		if err := withinTimeout(g, func() error { return discover.ReadProcesses(e.nvml(), node) }); err != nil {
			return nil, err
		}
	}
	visible, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	req := claim.Request{Count: f.Count, Profile: f.Profile, Visible: visible, VisibleSet: set}
	devs, warnings, err := claim.Candidates(node, req)
	for _, w := range warnings {
		e.warn(w)
	}
	if err != nil {
		return nil, err
	}
	dir, err := claim.OpenDir(f.Claims)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return claim.Take(dir, devs, req, claim.Info{Job: job, SchedulerJob: schedulerJob(), Command: command}, g.Timeout)
}

// schedulerJob is the job id the scheduler exported, for claim files.
func schedulerJob() string {
	for _, v := range []string{"LSB_JOBID", "PBS_JOBID", "SLURM_JOB_ID", "JOB_ID"} {
		if id := os.Getenv(v); id != "" {
			return id
		}
	}
	return ""
}

type freeCmd struct {
	claimFlags
	PID int `placeholder:"PID" help:"End the claim when process PID ends (default: the shell that ran slurm-mig, also through $(...))."`
}

func (c *freeCmd) Run(e *env, g *cli) error {
	job, err := claim.FindJob(c.PID)
	if err != nil {
		return err
	}
	cl, err := c.claim(e, g, job, "free")
	if err != nil {
		return err
	}
	defer cl.Close()
	holder, err := claim.Handoff(cl, job, os.Args[0])
	if err != nil {
		return fmt.Errorf("starting the claim's holder: %w", err)
	}
	if _, err := fmt.Fprintln(e.stdout, strings.Join(cl.UUIDs, ",")); err != nil {
		holder.Kill() // nobody learnt the devices: give them back
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// withinTimeout runs a step that calls NVML, giving up after --timeout
// as discovery does.
func withinTimeout(g *cli, step func() error) error {
	done := make(chan error, 1)
	go func() { done <- step() }()
	select {
	case err := <-done:
		return err
	case <-time.After(g.Timeout):
		return fmt.Errorf("nvml: no answer within %s (a hung GPU or driver?)", g.Timeout)
	}
}
