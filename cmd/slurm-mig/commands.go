package main

import (
	"fmt"
	"io"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// sourceFlags choose where the node model comes from: commands pass From
// to e.loader.Load.
type sourceFlags struct {
	From string `placeholder:"FILE" help:"Work from a snapshot (slurm-mig snapshot) instead of NVML. Cap minors it lacks are read from mig-minors under --root."`
}

// recordFlags shape the GRES records, shared by gen, node and diff so
// that their types and counts always agree.
type recordFlags struct {
	NodeName   string            `placeholder:"NAME" help:"NodeName= to write (default: the short hostname; with --from, the snapshot's)."`
	NoNodeName bool              `help:"Leave NodeName= out."`
	TypeStyle  string            `enum:"model,profile,autodetect" default:"model" help:"GRES type names: model (a100, a100_1g.10gb), profile (a100, 1g.10gb), autodetect (the names of Slurm's AutoDetect=nvml). One of: ${enum}."`
	TypeMap    map[string]string `mapsep:"none" placeholder:"NAME=TYPE" help:"Use TYPE as the model part of types for GPUs whose NVML name or short model is NAME (repeatable)."`
	Files      string            `enum:"auto,multiple,ci" default:"auto" help:"MIG device files: multiple (MultipleFiles=/dev/nvidiaN,GI cap,CI cap; Slurm >= 21.08: 20.11 refuses MIG devices sharing their GPU's file), ci (File=CI cap; every Slurm), or auto: ci for a Slurm older than 21.08, else multiple. One of: ${enum}."`
	NoCores    bool              `help:"Leave out Cores= (the abstract core ids near each GPU, from NVML's CPU affinity and the CPU topology under --root)."`
	NoLinks    bool              `help:"Leave out Links= (active NVLinks between whole GPUs)."`
	Flags      string            `placeholder:"FLAGS" help:"Write Flags=FLAGS on every line (nvidia_gpu_env, ...); checked against the flags Slurm knows."`
	slurmFlags
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
	slurm, from, err := slurmconf.Release(f.SlurmVersion, e.installedSlurm, e.warn)
	if err != nil {
		return nil, err
	}
	cfg, err := gresgen.Generate(node, gresgen.Options{NodeName: name, TypeStyle: gresgen.TypeStyle(f.TypeStyle),
		FileStyle: gresgen.FileStyle(f.Files), TypeMap: f.TypeMap, NoCores: f.NoCores, NoLinks: f.NoLinks, Flags: f.Flags, Warn: e.warn, Slurm: slurm})
	return cfg, slurmconf.ExplainRefusal(err, from)
}

// renderFlags are what gen and node share: where the node comes from, how
// its records are shaped, where the result goes.
type renderFlags struct {
	sourceFlags
	recordFlags
	outputFlags
	stateFlags
}

// render loads the node and builds its config, refusing an empty one
// unless asked; what names the output in that refusal.
func (r *renderFlags) render(e *env, what string) (*discover.Node, *gresgen.Config, error) {
	e.probeSlurm()
	node, err := e.loader.Load(r.From)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := r.config(e, node)
	if err != nil {
		return nil, nil, err
	}
	return node, cfg, cfg.CheckEmpty(what, r.AllowEmpty, e.warn)
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
	return c.write(e, c.Output, cfg.GresConf(e.version, c.Compact), node, cfg)
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
		updated, err := cfg.UpdateSlurmConf(c.Update)
		if err != nil {
			return err
		}
		return c.write(e, outputPath(c.Update), updated, node, cfg)
	}
	var hardware []string
	if c.Full {
		if err := e.loader.Hardware(node); err != nil {
			return fmt.Errorf("node --full: %w", err)
		}
		hardware = append(hardware, node.Hardware.String())
	}
	return c.write(e, c.Output, []byte(cfg.NodeLine(hardware...)+"\n"), node, cfg)
}

type listCmd struct {
	sourceFlags
}

func (c *listCmd) Run(e *env) error {
	node, err := e.loader.Load(c.From)
	if err != nil {
		return err
	}
	return e.print(func(w io.Writer) error { return discover.WriteTable(w, node) })
}

type snapshotCmd struct{}

func (c *snapshotCmd) Run(e *env) error {
	node, err := e.loader.Snapshot() // snapshots are always taken from NVML
	if err != nil {
		return err
	}
	return e.print(func(w io.Writer) error { return discover.WriteSnapshot(w, node) })
}
