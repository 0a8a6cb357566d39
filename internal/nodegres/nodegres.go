// Package nodegres builds what gen, node and diff say of one node (its
// gres.conf records and Gres= counts) and writes it with the device state,
// returning the data or the write's report, and the warnings.
package nodegres

import (
	"errors"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/accounting"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/drift"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/nodeload"
	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
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
	WrittenBy string // "slurm-mig v1.2.3", recorded in the device state

	installed slurmhost.Probe // the wait for slurmd -V (or scontrol -V)
}

// Records say how to shape the records: the flags gen, node and diff
// share, so that their types and counts always agree.
type Records struct {
	// NodeName is the node's name, checked as Slurm reads node names
	// (nodeload.CheckNodeName); "" names the node after its host, unless
	// NoNodeName leaves NodeName= out.
	NodeName   string
	NoNodeName bool
	// Slurm is the release that reads the output, as the admin named it
	// (slurmhost.ParseRelease); the zero Version asks this host's Slurm
	// (probeSlurm), or none under another root.
	Slurm slurmconf.Version
	// Gres shapes the records; Config sets its NodeName and Slurm.
	Gres gresgen.Options
}

// probeSlurm starts asking this host's Slurm for its version, overlapping
// the read of the node; under a --root other than / there is no probe.
func (b *Builder) probeSlurm() {
	if b.Root == "/" && b.installed == nil {
		b.installed = slurmhost.ProbeInstalled()
	}
}

// Config builds the node's gres.conf records and Gres= counts, with the
// warnings of what they go without (a warning may carry the fix that
// would help: advice, which the command line words).
func (b *Builder) Config(node *model.Node, r Records) (*gresgen.Config, []error, error) {
	name, err := b.Loader.NodeName(node, r.NodeName, r.NoNodeName)
	if err != nil {
		return nil, nil, err
	}
	var warnings []error
	if !r.Gres.NoCores {
		warnings = b.Loader.Cores(node)
	}
	slurm, from, warning := slurmhost.Release(r.Slurm, b.installed)
	if warning != nil {
		warnings = append(warnings, warning)
	}
	o := r.Gres
	o.NodeName, o.Slurm = name, slurm
	cfg, err := gresgen.Generate(node, o)
	var refused *slurmconf.RefusedError
	if errors.As(err, &refused) {
		refused.From = from // which command said the release, for the message
	}
	if err == nil {
		warnings = append(warnings, cfg.Warnings...)
		// A node whose shares cannot be known (no profile table) notes
		// none: merge --accounting names the fragment that lacks them.
		if types, terr := NodeTypes(node, o); terr == nil {
			for _, t := range types {
				cfg.Shares = append(cfg.Shares, accounting.ShareLine(t))
			}
		}
	}
	return cfg, warnings, err
}

// NodeTypes are the node's gpu types with their shares of their GPUs,
// named as the records name them.
func NodeTypes(node *model.Node, o gresgen.Options) ([]accounting.Type, error) {
	devs, err := gresgen.DeviceTypes(node, o)
	if err != nil {
		return nil, err
	}
	return accounting.NodeTypes(node, devs)
}

// Built is a node's model, from NVML or a snapshot, and its config.
type Built struct {
	Node   *model.Node
	Config *gresgen.Config
	From   string // the snapshot; "" for NVML
}

// Render loads the node (from a snapshot, or NVML when from is "") and
// builds its config, refusing an empty one unless allowEmpty; what names
// the output in that refusal. The warnings come with an error too.
func (b *Builder) Render(from string, r Records, what string, allowEmpty bool) (*Built, []error, error) {
	b.probeSlurm()
	node, warnings, err := b.Loader.Load(from)
	if err != nil {
		return nil, warnings, err
	}
	b.Loader.TryProfiles(node)
	cfg, more, err := b.Config(node, r)
	warnings = append(warnings, more...)
	if err != nil {
		return nil, warnings, err
	}
	warning, err := cfg.CheckEmpty(what, allowEmpty)
	if warning != nil {
		warnings = append(warnings, warning)
	}
	return &Built{Node: node, Config: cfg, From: from}, warnings, err
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
	Backup bool   // keep the replaced file as File.bak; only with a file
	JSON   bool   // report the write as JSON; only with a file
	// State is where the device state goes with the file ("": its
	// default place, for a node read from NVML only: WritesState);
	// NoState writes none.
	State   string
	NoState bool
}

// WritesState reports whether a file written from the node read from goes
// with the device state: from NVML, or from a snapshot only where State
// names a place (its UUIDs are not this node's GPUs').
func (o Output) WritesState(from string) bool {
	return !o.NoState && (from == "" || o.State != "")
}

// ToStdout reports whether the output goes to standard output.
func (o Output) ToStdout() bool { return o.File == "" || o.File == "-" }

// Result is what a write leaves the command line to print: Data, when
// the output is standard output, else the Report of the file written.
type Result struct {
	Data   []byte
	Report *Report
}

// WriteGresConf puts out the node's gres.conf as Write does; a file with
// the same records is unchanged, one with a line gen does not write refused.
func (b *Builder) WriteGresConf(out Output, built *Built, version string, compact bool) (*Result, error) {
	return b.write(out, built.Config.GresConf(version, compact), built, built.Config.Unchanged)
}

// WriteNodeLine puts out the node's slurm.conf line as Write does; a file
// there with any other line or key, or one that cannot be read, is refused
// (advice.NodeLineForeignLine, NodeLineUnreadable).
func (b *Builder) WriteNodeLine(out Output, built *Built, line []byte) (*Result, error) {
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
			return false, advice.Wrap(foreign, advice.NodeLineForeignLine, path)
		case err != nil:
			return false, advice.Wrap(err, advice.NodeLineUnreadable, path)
		}
		return false, nil // the same bytes are unchanged, as atomicfile finds
	})
}

// Write returns data to print or, given a file, writes it atomically with
// the device state unless NoState (whose failure fails the run, the file
// untouched), and returns the write's report.
func (b *Builder) Write(out Output, data []byte, built *Built) (*Result, error) {
	return b.write(out, data, built, nil)
}

// write is Write, with unchanged to look at the file there now
// (Files.Unchanged).
func (b *Builder) write(out Output, data []byte, built *Built, unchanged func(string) (bool, error)) (*Result, error) {
	if out.ToStdout() {
		return &Result{Data: data}, nil
	}
	b.Loader.Done() // before waiting on the lock and the disk
	files := Files{Path: out.File, Data: data, Devices: built.Config.Devices(), Backup: out.Backup, Unchanged: unchanged}
	if out.WritesState(built.From) {
		files.State = b.state(out.State, built.From, built.Node, built.Config.NodeName)
	}
	rep, err := files.Write()
	if err != nil {
		return nil, err
	}
	return &Result{Report: rep}, nil
}

// WriteState loads the node and writes only its device state (file, or
// its default place), for configless nodes; it returns the report and the
// load's warnings, which come with an error too.
func (b *Builder) WriteState(from, nodeName, file string) (*Report, []error, error) {
	node, warnings, err := b.Loader.Load(from)
	if err != nil {
		return nil, warnings, err
	}
	name, err := b.Loader.NodeName(node, nodeName, false)
	if err != nil {
		return nil, warnings, err
	}
	b.Loader.Done()
	rep, err := b.state(file, from, node, name).Write()
	return rep, warnings, err
}

// Diff compares the node's config with in's files and with its device
// state (stateFile, or the default for NVML); the caller checks that one
// file at most reads stdin. Warnings come with an error too.
func (b *Builder) Diff(from string, r Records, stateFile string, in drift.Inputs) (*drift.Report, []error, error) {
	b.probeSlurm()
	node, warnings, err := b.Loader.Load(from)
	if err != nil {
		return nil, warnings, err
	}
	b.Loader.Done() // before reading configs and asking slurmctld
	var more []error
	in.Config, more, err = b.Config(node, r)
	warnings = append(warnings, more...)
	if err != nil {
		return nil, warnings, err
	}
	// The release gen wrote for (Config warned already where slurmd -V
	// failed).
	in.Release, _, _ = slurmhost.Release(r.Slurm, b.installed)
	if in.State, err = drift.StateToCompare(b.stateFile(stateFile, from), node, in.Config.NodeName); err != nil {
		return nil, warnings, err
	}
	rep, err := drift.Compare(in)
	return rep, warnings, err
}

// stateFile is the device state file that flag names (or the default
// one), for the node read from NVML or, given a snapshot, from it.
func (b *Builder) stateFile(flag, from string) jobenv.StateFile {
	return jobenv.StateFile{Flag: flag, Getenv: b.Getenv, Live: from == "", Root: b.Root}
}

// state is the node's device state, to write where flag says.
func (b *Builder) state(flag, from string, node *model.Node, name string) *State {
	return &State{File: b.stateFile(flag, from), Node: node, Name: name, WrittenBy: b.WrittenBy}
}
