package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/jobmap"
	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// mapFlags say where a job's GPU indices are mapped from: what env and
// jobmap share, so that both name the same devices.
type mapFlags struct {
	From      string `type:"nonempty" placeholder:"SNAPSHOT" help:"Take the UUIDs from a snapshot (slurm-mig snapshot) instead of the device state."`
	State     string `type:"nonempty" placeholder:"FILE" help:"The device state to read (default ${state_env}, else ${state_default})."`
	SlurmConf string `type:"nonempty" placeholder:"FILE" help:"The slurm.conf with this node's Gres= (default $SLURM_CONF, else /etc/slurm/slurm.conf, else slurmd's configless cache /run/slurm/conf/slurm.conf)."`
	GresConf  string `type:"nonempty" placeholder:"FILE" help:"The gres.conf slurmd reads (default: gres.conf beside slurm.conf)."`
}

func (f *mapFlags) options(root hostfs.FS) jobenv.Options {
	return jobenv.Options{SlurmConf: f.SlurmConf, GresConf: f.GresConf, State: f.State, Snapshot: f.From, Root: root, Release: installedRelease}
}

// installedRelease is the release of this node's slurmd, which env and
// jobmap ask only where slurmd's numbering depends on it.
func installedRelease() (slurmconf.Version, error) {
	v, _, err := slurmhost.InstalledVersion()
	return v, err
}

// envCmd is Slurm's TaskProlog. It has no nvml:"" tag: it never starts
// NVML, whose UUIDs it takes from the device state.
type envCmd struct {
	mapFlags
}

func (c *envCmd) Run(e *env) error {
	lines, err := jobenv.Run(c.options(e.build.Root), os.LookupEnv)
	if err != nil {
		return fmt.Errorf("env: %w", err)
	}
	return e.print(func(w io.Writer) error {
		_, err := io.WriteString(w, strings.Join(append(lines, ""), "\n"))
		return err
	})
}

// jobmapCmd is Slurm's Prolog (and, with --remove, its Epilog). Like
// env, it never starts NVML.
type jobmapCmd struct {
	mapFlags
	Dir          string `required:"" type:"nonempty" placeholder:"DIR" help:"The job map directory, one per exporter (dcgm-exporter's --hpc-job-mapping-dir, jobstats' /run/gpustat); made mode 0755 if missing."`
	Format       string `default:"dcgm" enum:"dcgm,jobstats" help:"Whose map DIR is: dcgm (dcgm-exporter: files <index> and <index>.<GPU instance id>, a JOBID line per job) or jobstats (files <index> and MIG-<UUID>, a JOBID UID line per job)."`
	Remove       bool   `help:"Epilog: take the job's lines out (a file left with none is removed). Without it, Prolog: add them."`
	NoController bool   `help:"Never ask slurmctld (scontrol show job -d) for the GPUs of a job on a node with several GPU types, where Slurm gives the Prolog one type's indices only."`
}

func (c *jobmapCmd) Run(e *env) error {
	format, err := jobmap.ParseFormat(c.Format)
	if err != nil {
		return fmt.Errorf("jobmap: %w", err)
	}
	opts := jobmap.Options{Dir: c.Dir, Format: format, Remove: c.Remove, Map: c.options(e.build.Root)}
	if !c.NoController {
		opts.JobGPUs = slurmhost.JobGPUs
	}
	warnings, err := jobmap.Run(opts, os.LookupEnv)
	e.warnAll(warnings)
	if err != nil {
		return fmt.Errorf("jobmap: %w", err)
	}
	return nil
}
