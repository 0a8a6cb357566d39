package main

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/nodegres"
	"github.com/slurm-mig/slurm-mig/internal/nodeload"
	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
)

// sourceFlags choose where the node model comes from: commands pass From
// to e.loader.Load.
type sourceFlags struct {
	From string `type:"nonempty" placeholder:"FILE" help:"Work from a snapshot (slurm-mig snapshot) instead of NVML. Cap minors it lacks are read from mig-minors under --root."`
}

// countFlags name the node and its GRES types: what gen, node and diff
// share with plan, whose counts must read as theirs.
type countFlags struct {
	NodeName   string            `type:"nonempty" placeholder:"NAME" help:"NodeName= to write (default: the short hostname; with --from, the snapshot's)."`
	NoNodeName bool              `help:"Leave NodeName= out."`
	TypeStyle  string            `enum:"model,profile,autodetect" default:"model" placeholder:"STYLE" help:"GRES type names: model (a100, a100_1g.10gb), profile (a100, 1g.10gb), autodetect (the names of Slurm's AutoDetect=nvml). One of: ${enum} (default model)."`
	TypeMap    map[string]string `mapsep:"none" placeholder:"NAME=TYPE" help:"Use TYPE as the model part of types for GPUs whose NVML name or short model is NAME (repeatable)."`
}

// check refuses node name flags that exclude each other, or a name Slurm
// would not read as one node's.
func (f *countFlags) check() error {
	if f.NodeName != "" && f.NoNodeName {
		return errors.New("--node-name and --no-node-name exclude each other")
	}
	return checkNodeName(f.NodeName)
}

// recordFlags shape the GRES records, shared by gen, node and diff so
// that their types and counts always agree.
type recordFlags struct {
	countFlags
	Files        string `enum:"auto,multiple,ci" default:"auto" placeholder:"STYLE" help:"MIG device files: multiple (MultipleFiles=/dev/nvidiaN,GI cap,CI cap; Slurm >= 21.08: 20.11 refuses MIG devices sharing their GPU's file), ci (File=CI cap; every Slurm), or auto (the default): ci for a Slurm older than 21.08, else multiple. One of: ${enum}."`
	NoCores      bool   `help:"Leave out Cores= (the abstract core ids near each GPU, from NVML's CPU affinity and the CPU topology under --root)."`
	NoLinks      bool   `help:"Leave out Links= (active NVLinks between whole GPUs)."`
	Flags        string `type:"nonempty" placeholder:"FLAGS" help:"Write Flags=FLAGS on every line (nvidia_gpu_env, ...); checked against the flags Slurm knows."`
	SlurmVersion string `type:"nonempty" placeholder:"X.Y" help:"The Slurm release that reads the output (default: slurmd -V of this host's Slurm, with --root /). It picks --files auto's style, and output it would refuse or misread is an error, never written."`
}

// records is what the flags ask of the records, once their values are
// checked, before anything is read: the node's name as Slurm reads node
// names, and the Slurm release.
func (f *recordFlags) records() (nodegres.Records, error) {
	r := nodegres.Records{NodeName: f.NodeName, NoNodeName: f.NoNodeName,
		Gres: gresgen.Options{TypeStyle: gresgen.TypeStyle(f.TypeStyle), FileStyle: gresgen.FileStyle(f.Files),
			TypeMap: f.TypeMap, NoCores: f.NoCores, NoLinks: f.NoLinks, Flags: f.Flags}}
	if err := f.check(); err != nil {
		return r, err
	}
	if f.SlurmVersion != "" {
		slurm, err := slurmhost.ParseRelease(f.SlurmVersion)
		if err != nil {
			return r, fmt.Errorf("--slurm-version: %w", err)
		}
		r.Slurm = slurm
	}
	return r, nil
}

// checkNodeName refuses a --node-name that Slurm would not read as one
// node's name; none given is fine (the host names the node).
func checkNodeName(name string) error {
	if name == "" {
		return nil
	}
	if err := nodeload.CheckNodeName(name); err != nil {
		return fmt.Errorf("--node-name: %w", err)
	}
	return nil
}

// renderFlags are what gen and node share: where the node comes from, how
// its records are shaped, where the result goes.
type renderFlags struct {
	sourceFlags
	recordFlags
	outputFlags
	stateFlags
}

// output is where the rendered data goes: file (-o, or node --update's).
// A backup and a JSON report go with a file written, not with printed
// output.
func (r *renderFlags) output(file outputPath) (nodegres.Output, error) {
	out := nodegres.Output{File: string(file), Backup: r.Backup, JSON: r.JSON, State: r.State, NoState: r.NoState}
	switch {
	case out.ToStdout() && (out.Backup || out.JSON):
		return out, errors.New("--backup and --json go with -o FILE (or node --update)")
	case out.ToStdout() && out.State != "":
		return out, errors.New("--state goes with -o FILE (or node --update): printed output writes no device state")
	case out.ToStdout() && out.NoState:
		return out, errors.New("--no-state goes with -o FILE (or node --update): printed output writes no device state")
	case out.State != "" && out.NoState:
		return out, errors.New("--state and --no-state exclude each other")
	}
	return out, nil
}

// outputFlags say where gen and node put what they render.
type outputFlags struct {
	Output     outputPath `short:"o" placeholder:"FILE" help:"Write FILE atomically instead of printing (- prints): unchanged content is not rewritten (gen compares records, not its header); a FILE with lines this command does not write is refused; mode, owner and symlinks are kept; concurrent runs wait for each other."`
	Backup     bool       `help:"With -o (node: or --update), keep the replaced file as FILE.bak."`
	AllowEmpty bool       `help:"Write even when no GPU or MIG device was found (by default that is refused: after an NVML failure an empty gres.conf takes a node's GPUs away)."`
	JSON       bool       `name:"json" help:"With -o (node: or --update), report the result as JSON ({\"path\", \"changed\", \"backup\", \"devices\", \"state\": {\"path\", \"changed\", \"devices\"}}; backup when a file was kept, state when the device state was written)."`
}

// stateFlags say where gen and node write the device state that env
// reads, along with the file they write.
type stateFlags struct {
	State   string `type:"nonempty" placeholder:"FILE" help:"With -o (node: or --update), also write the device state that slurm-mig env reads here (default ${state_env}, else ${state_default}; with --from, none unless this flag is given); a state that cannot be written fails the run, the file untouched, and a file that cannot be written puts the state back."`
	NoState bool   `help:"With -o (node: or --update), do not write the device state."`
}

// outputPath is -o's value: a file, or "-" for standard output, as Unix
// tools take it. An empty name is refused when parsing: it is a script's
// unset variable, not a request to print.
type outputPath string

func (p *outputPath) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("file", &s); err != nil {
		return err
	}
	if s == "" {
		return fmt.Errorf("-o needs a file name (- prints to standard output)")
	}
	*p = outputPath(s)
	return nil
}

// nonemptyMapper decodes string flags tagged type:"nonempty", which name a
// file or whose absence means a default. It refuses "" as -o does: a script's
// unset variable, taken for no flag, would read NVML or this host instead.
type nonemptyMapper struct{}

func (nonemptyMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var s string
	if err := ctx.Scan.PopValueInto("value", &s); err != nil {
		return err
	}
	if s == "" {
		return fmt.Errorf("the value is empty (an unset variable in a script?)")
	}
	target.SetString(s)
	return nil
}
