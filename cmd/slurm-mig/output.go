package main

import (
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/nodefiles"
)

// outputFlags say where gen and node put what they render.
type outputFlags struct {
	Output     outputPath `short:"o" placeholder:"FILE" help:"Write FILE atomically instead of printing (- prints): unchanged content is not rewritten; mode, owner and symlinks are kept; concurrent runs wait for each other."`
	Backup     bool       `help:"With -o or --update, keep the replaced file as FILE.bak."`
	AllowEmpty bool       `help:"Write even when no GPU or MIG device was found (by default that is refused: after an NVML failure an empty gres.conf takes a node's GPUs away)."`
	JSON       bool       `name:"json" help:"With -o or --update, report the result as JSON ({\"path\", \"changed\", \"backup\", \"devices\"})."`
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

// toStdout reports whether the output goes to standard output.
func (p outputPath) toStdout() bool { return p == "" || p == "-" }

// write prints data or, given a file (-o FILE, node --update), writes it
// atomically, with the device state unless --no-state, and reports the
// write.
func (r *renderFlags) write(e *env, file outputPath, data []byte, node *discover.Node, cfg *gresgen.Config) error {
	if file.toStdout() {
		if r.Backup || r.JSON {
			return fmt.Errorf("--backup and --json go with -o FILE (or node --update)")
		}
		_, err := e.stdout.Write(data)
		return err
	}
	e.nvml.Release() // before waiting on the lock and the disk
	files := nodefiles.Files{Path: string(file), Data: data, Devices: cfg.Devices(), Backup: r.Backup}
	if !r.NoState {
		files.State = e.deviceState(r.State, r.From, node, cfg.NodeName)
		files.State.Warn = e.warn
	}
	rep, err := files.Write()
	if err != nil {
		return err
	}
	return e.report(rep, r.JSON)
}

// report says what was written: JSON, or a line a file.
func (e *env) report(rep *nodefiles.Report, asJSON bool) error {
	if asJSON {
		return e.print(rep.WriteJSON)
	}
	return e.print(rep.WriteText)
}
