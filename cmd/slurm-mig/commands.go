package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/jobenv"
	"github.com/slurm-mig/slurm-mig/nvmlread"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// sourceFlags choose where the node model comes from.
type sourceFlags struct {
	From string `placeholder:"FILE" help:"Work from a snapshot (slurm-mig snapshot) instead of NVML. Cap minors it lacks are read from mig-minors under --root."`
}

// load is how a command gets the node's model: the snapshot --from names,
// or NVML; cap minors from the files under --root.
func (s *sourceFlags) load(e *env) (*discover.Node, error) {
	node, err := e.loader.Load(s.From)
	if nvmlread.NoNVMLLibrary(err) {
		err = fmt.Errorf("%w (use --from SNAPSHOT on hosts without it)", err)
	}
	return node, err
}

// recordFlags shape the GRES records, shared by gen, node and diff so
// that their types and counts always agree.
type recordFlags struct {
	NodeName   string            `placeholder:"NAME" help:"NodeName= to write (default: the short hostname; with --from, the snapshot's)."`
	NoNodeName bool              `help:"Leave NodeName= out."`
	TypeStyle  string            `enum:"model,profile,autodetect" default:"model" help:"GRES type names: model (a100, a100_1g.10gb), profile (a100, 1g.10gb), autodetect (the names of Slurm's AutoDetect=nvml). One of: ${enum}."`
	TypeMap    map[string]string `mapsep:"none" placeholder:"NAME=TYPE" help:"Use TYPE as the model part of types for GPUs whose NVML name or short model is NAME (repeatable)."`
	Files      string            `enum:"multiple,ci" default:"multiple" help:"MIG device files: multiple (MultipleFiles=/dev/nvidiaN,GI cap,CI cap; Slurm >= 20.11) or ci (File=CI cap; older Slurm). One of: ${enum}."`
	NoCores    bool              `help:"Leave out Cores= (the abstract core ids near each GPU, from NVML's CPU affinity and the CPU topology under --root)."`
	NoLinks    bool              `help:"Leave out Links= (active NVLinks between whole GPUs)."`
	Flags      string            `placeholder:"FLAGS" help:"Write Flags=FLAGS on every line (nvidia_gpu_env, ...); checked against the flags Slurm knows."`
}

// config builds the node's gres.conf records and Gres= counts.
func (f *recordFlags) config(e *env, node *discover.Node) (*gresgen.Config, error) {
	name, err := e.loader.NodeName(node, f.NodeName, f.NoNodeName)
	if err != nil {
		return nil, err
	}
	if !f.NoCores {
		e.loader.Cores(node)
	}
	return gresgen.Generate(node, gresgen.Options{NodeName: name, TypeStyle: gresgen.TypeStyle(f.TypeStyle),
		FileStyle: gresgen.FileStyle(f.Files), TypeMap: f.TypeMap, NoCores: f.NoCores, NoLinks: f.NoLinks, Flags: f.Flags, Warn: e.warn})
}

// renderFlags are what gen and node share: where the node comes from, how
// its records are shaped, where the result goes.
type renderFlags struct {
	sourceFlags
	recordFlags
	outputFlags
	stateFlags
}

// stateWriter writes the node's device state with the file, unless
// --no-state. Where it goes by default (not --state, not
// $SLURM_MIG_STATE), failing to write it is a warning, not a failure of
// the file already written: env then refuses GPU tasks for want of it.
func (r *renderFlags) stateWriter(e *env, node *discover.Node, name string) func() (*writeResult, error) {
	if r.NoState {
		return nil
	}
	return func() (*writeResult, error) {
		res, err := writeState(e, r.State, node, name, r.From == "")
		if err != nil && r.State == "" && os.Getenv(jobenv.StatePathEnv) == "" {
			e.warn(fmt.Sprintf("device state not written (slurm-mig env needs it; --no-state if this node runs no TaskProlog): %v", err))
			return nil, nil
		}
		return &res, err
	}
}

// render loads the node and builds its config, refusing an empty one
// unless asked; what names the output in that refusal.
func (r *renderFlags) render(e *env, what string) (*discover.Node, *gresgen.Config, error) {
	node, err := r.load(e)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := r.config(e, node)
	if err != nil {
		return nil, nil, err
	}
	return node, cfg, r.checkEmpty(e, cfg, what)
}

type genCmd struct {
	renderFlags
	Compact bool `help:"Merge lines that differ only in File= into Slurm ranges (File=/dev/nvidia[0-3])."`
}

func (c *genCmd) Run(e *env) error {
	node, cfg, err := c.render(e, "gres.conf")
	if err != nil {
		return err
	}
	return c.write(e, c.Output, cfg.GresConf(e.version, c.Compact), cfg.Devices(), c.stateWriter(e, node, cfg.NodeName))
}

type nodeCmd struct {
	renderFlags
	Compact bool   `help:"Accepted as gen takes it; no effect on the node line, whose counts are the same either way."`
	Update  string `placeholder:"SLURM_CONF" help:"Set Gres= on this node's own NodeName= line of SLURM_CONF in place, keeping every other byte."`
	Full    bool   `help:"Print the whole node line, as slurmd -C does (CPUs, Boards, SocketsPerBoard, CoresPerSocket, ThreadsPerCore, RealMemory), with Gres=."`
}

func (c *nodeCmd) Run(e *env) error {
	switch {
	case c.Update != "" && c.Output != "":
		return fmt.Errorf("--update and -o exclude each other")
	case c.Update != "" && c.Full:
		return fmt.Errorf("--update sets only Gres=; drop --full")
	}
	node, cfg, err := c.render(e, "node line")
	if err != nil {
		return err
	}
	if c.Update != "" {
		return c.update(e, cfg, c.stateWriter(e, node, cfg.NodeName))
	}
	var hardware []string
	if c.Full {
		if err := e.loader.Hardware(node); err != nil {
			return fmt.Errorf("node --full: %w", err)
		}
		hardware = append(hardware, node.Hardware.String())
	}
	return c.write(e, c.Output, []byte(cfg.NodeLine(hardware...)+"\n"), cfg.Devices(), c.stateWriter(e, node, cfg.NodeName))
}

// update rewrites the Gres= of the node's line in a slurm.conf.
func (c *nodeCmd) update(e *env, cfg *gresgen.Config, state func() (*writeResult, error)) error {
	if cfg.NodeName == "" {
		return fmt.Errorf("--update needs the node's name; drop --no-node-name")
	}
	updated, err := slurmconf.UpdateNodeGresFile(c.Update, cfg.NodeName, slurmconf.GresList(cfg.Counts))
	if err != nil {
		return err
	}
	return c.write(e, outputPath(c.Update), updated, cfg.Devices(), state)
}

type listCmd struct {
	sourceFlags
}

func (c *listCmd) Run(e *env) error {
	node, err := c.load(e)
	if err != nil {
		return err
	}
	return e.print(func(w io.Writer) error { return discover.WriteTable(w, node) })
}

type snapshotCmd struct{}

func (c *snapshotCmd) Run(e *env) error {
	node, err := e.loader.Load("") // snapshots are always taken from NVML
	if err != nil {
		return err
	}
	// The compute processes only tell free --from what was busy: without
	// them the snapshot still describes the node.
	if err := e.loader.Processes(node); errors.As(err, new(*nvmlread.NVMLError)) {
		e.warn(fmt.Sprintf("%v; the snapshot records no compute processes", err))
	} else if err != nil {
		return err
	}
	e.loader.ForSnapshot(node)
	return e.print(func(w io.Writer) error { return discover.WriteSnapshot(w, node) })
}
