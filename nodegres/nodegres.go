// Package nodegres makes what gen, node and diff say of one node: its
// gres.conf records and Gres= counts, built from the node's model with its
// NodeName, Cores= and the Slurm release that reads them; and puts them
// where the run asks, printed or written (-o, --update) with the device
// state that env reads.
package nodegres

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/drift"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/hostfs"
	"github.com/slurm-mig/slurm-mig/jobenv"
	"github.com/slurm-mig/slurm-mig/nodefiles"
	"github.com/slurm-mig/slurm-mig/nodeload"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Builder builds and puts out one run's config.
type Builder struct {
	Loader *nodeload.Loader
	// Root is the tree the node's files are read under (--root). Only at
	// / is this host's Slurm the one that reads the output.
	Root hostfs.FS
	// Getenv names the device state's default place ($SLURM_MIG_STATE).
	Getenv    func(string) string
	WrittenBy string    // "slurm-mig v1.2.3", recorded in the device state
	Stdout    io.Writer // where the output goes, unless to a file
	// Print prints what write writes, all at once after it succeeded.
	Print func(write func(io.Writer) error) error
	Warn  func(string) // the run's one warning channel

	installed slurmconf.Probe // the wait for slurmd -V (or scontrol -V)
}

// Records say how to shape the records: the flags gen, node and diff
// share, so that their types and counts always agree.
type Records struct {
	NodeName   string // "" names the node after its host
	NoNodeName bool
	// SlurmVersion is the release that reads the output (X.Y); "" asks
	// this host's Slurm (probeSlurm), or none under another --root.
	SlurmVersion string
	// Gres shapes the records; Config sets its NodeName, Slurm and Warn.
	Gres gresgen.Options
}

// probeSlurm starts asking this host's Slurm for its version, to overlap
// reading the node; only commands that render ask (env runs once per
// task and must start nothing). Under a --root other than / the files
// are another machine's, whose Slurm is not this one: no probe.
func (b *Builder) probeSlurm() {
	if b.Root == "/" && b.installed == nil {
		b.installed = slurmconf.ProbeInstalled()
	}
}

// Config builds the node's gres.conf records and Gres= counts.
func (b *Builder) Config(node *discover.Node, r Records) (*gresgen.Config, error) {
	name, err := b.Loader.NodeName(node, r.NodeName, r.NoNodeName)
	if err != nil {
		return nil, err
	}
	if !r.Gres.NoCores {
		b.Loader.Cores(node)
	}
	slurm, from, err := slurmconf.Release(r.SlurmVersion, b.installed, b.Warn)
	if err != nil {
		return nil, err
	}
	o := r.Gres
	o.NodeName, o.Slurm, o.Warn = name, slurm, b.Warn
	cfg, err := gresgen.Generate(node, o)
	return cfg, slurmconf.ExplainRefusal(err, from)
}

// Built is a node's model, from NVML or a snapshot, and its config.
type Built struct {
	Node   *discover.Node
	Config *gresgen.Config
	From   string // the snapshot; "" for NVML
}

// Render loads the node (from a snapshot, or NVML when from is "") and
// builds its config, refusing an empty one unless allowEmpty; what names
// the output in that refusal.
func (b *Builder) Render(from string, r Records, what string, allowEmpty bool) (*Built, error) {
	b.probeSlurm()
	node, err := b.Loader.Load(from)
	if err != nil {
		return nil, err
	}
	cfg, err := b.Config(node, r)
	if err != nil {
		return nil, err
	}
	return &Built{Node: node, Config: cfg, From: from}, cfg.CheckEmpty(what, allowEmpty, b.Warn)
}

// NodeLine is the node's slurm.conf NodeName line with its Gres= counts;
// full puts in the hardware as well, as slurmd -C reads it.
func (b *Builder) NodeLine(built *Built, full bool) ([]byte, error) {
	var hardware []string
	if full {
		if err := b.Loader.Hardware(built.Node); err != nil {
			return nil, err
		}
		hardware = append(hardware, built.Node.Hardware.String())
	}
	return []byte(built.Config.NodeLine(hardware...) + "\n"), nil
}

// Output says where gen and node put what they render.
type Output struct {
	File   string // "" or "-": standard output
	Backup bool   // keep the replaced file as File.bak
	JSON   bool   // report the write as JSON
	// State is where the device state goes with the file ("": its
	// default place); NoState writes none.
	State   string
	NoState bool
}

// ToStdout reports whether the output goes to standard output.
func (o Output) ToStdout() bool { return o.File == "" || o.File == "-" }

// WriteGresConf puts out the node's gres.conf, as Write does; a file there
// already is unchanged when it holds the same records, whatever its
// header says, and refused when it holds a line gen does not write
// (gresgen.Config.Unchanged).
func (b *Builder) WriteGresConf(out Output, built *Built, version string, compact bool) error {
	return b.write(out, built.Config.GresConf(version, compact), built, built.Config.Unchanged)
}

// WriteNodeLine puts out the node's slurm.conf line (node -o), as Write
// does. node -o writes the whole file, so a file there with anything but
// this node's line, with keys the new one has, is refused and left as it
// is (slurmconf.ForeignNodeLine): node --update is the way to set Gres=
// among other keys and lines.
func (b *Builder) WriteNodeLine(out Output, built *Built, full bool) error {
	line, err := b.NodeLine(built, full)
	if err != nil {
		return fmt.Errorf("node --full: %w", err)
	}
	var keys []string
	for _, w := range strings.Fields(string(line)) {
		key, _, _ := strings.Cut(w, "=")
		keys = append(keys, key)
	}
	mine := func(node string) bool { return node == built.Config.NodeName }
	return b.write(out, line, built, func(path string) (bool, error) {
		var foreign *slurmconf.ForeignLine
		switch err := slurmconf.ForeignNodeLine(path, mine, keys); {
		case errors.As(err, &foreign):
			return false, fmt.Errorf("%s, which node -o does not write: it replaces the whole file, so it refuses to drop it (node --update sets Gres= in place; or move %s away)", foreign, path)
		case err != nil:
			return false, fmt.Errorf("node -o cannot tell what it would replace in %s: %w", path, err)
		}
		return false, nil // the same bytes are unchanged, as atomicfile finds
	})
}

// Write prints data or, given a file (-o FILE, node --update), writes it
// atomically, with the device state unless NoState (a state that cannot
// be written fails the run, the file untouched), and reports the write.
func (b *Builder) Write(out Output, data []byte, built *Built) error {
	return b.write(out, data, built, nil)
}

// write is Write, with unchanged to look at the file there now
// (nodefiles.Files.Unchanged).
func (b *Builder) write(out Output, data []byte, built *Built, unchanged func(string) (bool, error)) error {
	if out.ToStdout() {
		if out.Backup || out.JSON {
			return fmt.Errorf("--backup and --json go with -o FILE (or node --update)")
		}
		_, err := b.Stdout.Write(data)
		return err
	}
	b.Loader.Done() // before waiting on the lock and the disk
	files := nodefiles.Files{Path: out.File, Data: data, Devices: built.Config.Devices(), Backup: out.Backup, Unchanged: unchanged}
	if !out.NoState {
		files.State = b.state(out.State, built.From, built.Node, built.Config.NodeName)
	}
	rep, err := files.Write()
	if err != nil {
		return err
	}
	return b.report(rep, out.JSON)
}

// WriteState loads the node and writes only its device state, where file
// says (""; its default place), for configless nodes, whose gres.conf and
// slurm.conf are the controller's.
func (b *Builder) WriteState(from, nodeName, file string, asJSON bool) error {
	node, err := b.Loader.Load(from)
	if err != nil {
		return err
	}
	name, err := b.Loader.NodeName(node, nodeName, false)
	if err != nil {
		return err
	}
	b.Loader.Done()
	rep, err := b.state(file, from, node, name).Write()
	if err != nil {
		return err
	}
	return b.report(rep, asJSON)
}

// Diff loads the node, builds its config, and compares it with what in
// names, and with the device state that stateFile names (or the default
// one, for a node read from NVML).
func (b *Builder) Diff(from string, r Records, stateFile string, in drift.Inputs) (*drift.Report, error) {
	if in.GresConf == slurmconf.Stdin && in.SlurmConf == slurmconf.Stdin {
		return nil, fmt.Errorf("--gres-conf and --slurm-conf cannot both read standard input")
	}
	b.probeSlurm()
	node, err := b.Loader.Load(from)
	if err != nil {
		return nil, err
	}
	b.Loader.Done() // before reading configs and asking slurmctld
	if in.Config, err = b.Config(node, r); err != nil {
		return nil, err
	}
	if in.State, err = drift.StateToCompare(b.stateFile(stateFile, from), node, in.Config.NodeName); err != nil {
		return nil, err
	}
	return drift.Compare(in)
}

// stateFile is the device state file that flag names (or the default
// one), for the node read from NVML or, given a snapshot, from it.
func (b *Builder) stateFile(flag, from string) jobenv.StateFile {
	return jobenv.StateFile{Flag: flag, Getenv: b.Getenv, Live: from == "", Root: b.Root}
}

// state is the node's device state, to write where flag says.
func (b *Builder) state(flag, from string, node *discover.Node, name string) *nodefiles.State {
	return &nodefiles.State{File: b.stateFile(flag, from), Node: node, Name: name, WrittenBy: b.WrittenBy}
}

// report says what was written: JSON, or a line a file.
func (b *Builder) report(rep *nodefiles.Report, asJSON bool) error {
	if asJSON {
		return b.Print(rep.WriteJSON)
	}
	return b.Print(rep.WriteText)
}
