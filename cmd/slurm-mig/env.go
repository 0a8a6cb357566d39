package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/slurm-mig/slurm-mig/atomicfile"
	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/jobenv"
)

// envCmd is Slurm's TaskProlog. It has no nvml:"" tag: it never starts
// NVML, whose UUIDs it takes from the device state.
type envCmd struct {
	From      string `placeholder:"SNAPSHOT" help:"Take the UUIDs from a snapshot (slurm-mig snapshot) instead of the device state."`
	State     string `placeholder:"FILE" help:"The device state to read (default $SLURM_MIG_STATE, else /run/slurm-mig/devices.json)."`
	SlurmConf string `placeholder:"FILE" help:"The slurm.conf with this node's Gres= (default $SLURM_CONF, else /etc/slurm/slurm.conf, else slurmd's configless cache /run/slurm/conf/slurm.conf)."`
	GresConf  string `placeholder:"FILE" help:"The gres.conf slurmd reads (default: gres.conf beside slurm.conf)."`
}

func (c *envCmd) Run(e *env) error {
	lines, err := jobenv.Run(jobenv.Options{SlurmConf: c.SlurmConf, GresConf: c.GresConf, State: c.State, Snapshot: c.From, Root: e.root}, os.LookupEnv)
	if err != nil {
		return fmt.Errorf("env: %w", err)
	}
	return e.print(func(w io.Writer) error {
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		return nil
	})
}

// stateFlags say where gen and node write the device state that env
// reads, along with the file they write.
type stateFlags struct {
	State   string `placeholder:"FILE" help:"With -o or --update, also write the device state that slurm-mig env reads here (default $SLURM_MIG_STATE, else /run/slurm-mig/devices.json)."`
	NoState bool   `help:"With -o or --update, do not write the device state."`
}

// stateCmd writes only the device state: for configless nodes, whose
// gres.conf and slurm.conf are the controller's.
type stateCmd struct {
	sourceFlags
	NodeName string `placeholder:"NAME" help:"The node's Slurm NodeName, which env checks against SLURMD_NODENAME (default: the short hostname; with --from, the snapshot's)."`
	State    string `placeholder:"FILE" help:"Where to write it (default $SLURM_MIG_STATE, else /run/slurm-mig/devices.json)."`
	JSON     bool   `name:"json" help:"Report the result as JSON ({\"path\", \"changed\", \"devices\"})."`
}

func (c *stateCmd) Run(e *env) error {
	node, err := c.load(e)
	if err != nil {
		return err
	}
	name, err := e.loader.NodeName(node, c.NodeName, false)
	if err != nil {
		return err
	}
	e.nvml.Release()
	res, err := writeState(e, c.State, node, name, c.From == "")
	if err != nil {
		return err
	}
	return report(e, res, c.JSON)
}

// writeState writes the node's device state atomically, world-readable
// (env runs as the job's user). live says the UUIDs were read from NVML
// now, so the state records this boot.
func writeState(e *env, flag string, node *discover.Node, name string, live bool) (writeResult, error) {
	path := jobenv.StatePath(flag, os.Getenv)
	boot := ""
	if live {
		boot = jobenv.ReadBootID(e.root)
	}
	st, err := jobenv.NewState(node, name, boot, "slurm-mig "+e.version)
	if err != nil {
		return writeResult{}, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return writeResult{}, fmt.Errorf("writing the device state: %w", err)
	}
	res, err := atomicfile.Write(path, st.Encode(), atomicfile.Options{})
	if err != nil {
		return writeResult{}, err
	}
	return writeResult{Path: res.Path, Changed: res.Changed, Devices: st.Usable()}, nil
}
