package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/slurm-mig/slurm-mig/atomicfile"
	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/jobenv"
)

// envCmd is Slurm's TaskProlog: it never starts NVML (readsNVML knows).
type envCmd struct {
	From      string `placeholder:"SNAPSHOT" help:"Take the UUIDs from a snapshot (slurm-mig snapshot) instead of the state file."`
	State     string `placeholder:"FILE" help:"The device state to read (default $SLURM_MIG_STATE, else /run/slurm-mig/devices.json)."`
	SlurmConf string `placeholder:"FILE" help:"The slurm.conf with this node's Gres= (default $SLURM_CONF, else /etc/slurm/slurm.conf, else slurmd's configless cache /run/slurm/conf/slurm.conf)."`
	GresConf  string `placeholder:"FILE" help:"The gres.conf slurmd reads (default: gres.conf beside slurm.conf)."`
}

func (c *envCmd) Run(e *env, g *cli) error {
	lines, err := jobenv.Run(jobenv.Options{SlurmConf: c.SlurmConf, GresConf: c.GresConf, State: c.State, Snapshot: c.From, Root: g.Root}, os.LookupEnv)
	if err != nil {
		return fmt.Errorf("env: %w", err)
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l + "\n")
	}
	return writeAll(e.stdout, &buf)
}

// stateFlags say where gen, node and state write the device state that
// env reads.
type stateFlags struct {
	State   string `placeholder:"FILE" help:"With -o or --update, also write the device state that slurm-mig env reads here (default $SLURM_MIG_STATE, else /run/slurm-mig/devices.json)."`
	NoState bool   `help:"With -o or --update, do not write the device state."`
}

// stateCmd writes only the state: for configless nodes, whose gres.conf
// and slurm.conf are the controller's.
type stateCmd struct {
	sourceFlags
	NodeName string `placeholder:"NAME" help:"The node's Slurm NodeName, which env checks against SLURMD_NODENAME (default: the short hostname; with --from, the snapshot's)."`
	State string `placeholder:"FILE" help:"Where to write it (default $SLURM_MIG_STATE, else /run/slurm-mig/devices.json)."`
	JSON  bool   `name:"json" help:"Report the result as JSON ({\"path\", \"changed\", \"devices\"})."`
}

func (c *stateCmd) Run(e *env, g *cli) error {
	node, err := c.load(e, g)
	if err != nil {
		return err
	}
	rf := recordFlags{NodeName: c.NodeName} // its checks and default
	name, err := rf.nodeName(e, node)
	if err != nil {
		return err
	}
	e.releaseNVML()
	res, err := writeState(g.Root, c.State, node, name, e.version, c.From == "")
	if err != nil {
		return err
	}
	return report(e, res, c.JSON)
}

// writeState writes the node's device state atomically, world-readable
// (env runs as the job's user). live says the UUIDs were read from NVML
// now, so the state records this boot.
func writeState(root, flag string, node *discover.Node, name, version string, live bool) (writeResult, error) {
	path := jobenv.StatePath(flag, os.Getenv)
	boot := ""
	if live {
		boot = jobenv.ReadBootID(root)
	}
	st, err := jobenv.NewState(node, name, boot, "slurm-mig "+version)
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
	n := 0
	for _, d := range st.Devices {
		if !d.MIG {
			n++
		}
	}
	return writeResult{Path: res.Path, Changed: res.Changed, Devices: n}, nil
}
