package main

import (
	"fmt"
	"io"
	"os"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/jobenv"
	"github.com/slurm-mig/slurm-mig/nodefiles"
)

// envCmd is Slurm's TaskProlog. It has no nvml:"" tag: it never starts
// NVML, whose UUIDs it takes from the device state.
type envCmd struct {
	From      string `placeholder:"SNAPSHOT" help:"Take the UUIDs from a snapshot (slurm-mig snapshot) instead of the device state."`
	State     string `placeholder:"FILE" help:"The device state to read (default ${state_env}, else ${state_default})."`
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
	State   string `placeholder:"FILE" help:"With -o or --update, also write the device state that slurm-mig env reads here (default ${state_env}, else ${state_default})."`
	NoState bool   `help:"With -o or --update, do not write the device state."`
}

// stateFile is the device state file flag names (or the default one),
// for the node read from NVML or, given --from, from a snapshot.
func (e *env) stateFile(flag, from string) jobenv.StateFile {
	return jobenv.StateFile{Flag: flag, Getenv: os.Getenv, Live: from == "", Root: e.root}
}

// deviceState is the node's device state, to write where stateFile says.
func (e *env) deviceState(flag, from string, node *discover.Node, name string) *nodefiles.State {
	return &nodefiles.State{File: e.stateFile(flag, from), Node: node, Name: name, WrittenBy: "slurm-mig " + e.version}
}

// stateCmd writes only the device state: for configless nodes, whose
// gres.conf and slurm.conf are the controller's.
type stateCmd struct {
	sourceFlags
	NodeName string `placeholder:"NAME" help:"The node's Slurm NodeName, which env checks against SLURMD_NODENAME (default: the short hostname; with --from, the snapshot's)."`
	State    string `placeholder:"FILE" help:"Where to write it (default ${state_env}, else ${state_default})."`
	JSON     bool   `name:"json" help:"Report the result as JSON ({\"path\", \"changed\", \"devices\"})."`
}

func (c *stateCmd) Run(e *env) error {
	node, err := e.loader.Load(c.From)
	if err != nil {
		return err
	}
	name, err := e.loader.NodeName(node, c.NodeName, false)
	if err != nil {
		return err
	}
	e.nvml.Release()
	rep, err := e.deviceState(c.State, c.From, node, name).Write()
	if err != nil {
		return err
	}
	return e.report(rep, c.JSON)
}
