package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/alecthomas/kong"

	"github.com/slurm-mig/slurm-mig/atomicfile"
	"github.com/slurm-mig/slurm-mig/gresgen"
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

// checkEmpty refuses to render nothing unless asked to.
func (o *outputFlags) checkEmpty(e *env, cfg *gresgen.Config, what string) error {
	switch {
	case len(cfg.Records) > 0:
	case o.AllowEmpty:
		e.warn("no GPU or MIG device to offer Slurm on this node")
	default:
		return fmt.Errorf("no GPU or MIG device found; refusing to write an empty %s (pass --allow-empty if this node really has none)", what)
	}
	return nil
}

// writeResult is what -o reports.
type writeResult struct {
	Path    string `json:"path"`
	Changed bool   `json:"changed"`
	Backup  string `json:"backup,omitempty"`
	Devices int    `json:"devices"`
	// State is the device state for slurm-mig env, written with the file.
	State *writeResult `json:"state,omitempty"`
}

// write prints data or, given a file (-o FILE, node --update), writes it
// atomically and reports the write. state, when not nil, then writes the
// device state, which describes the GPUs as they are now, whether the
// file changed or not.
func (o *outputFlags) write(e *env, file outputPath, data []byte, devices int, state func() (*writeResult, error)) error {
	if file.toStdout() {
		if o.Backup || o.JSON {
			return fmt.Errorf("--backup and --json go with -o FILE (or node --update)")
		}
		_, err := e.stdout.Write(data)
		return err
	}
	e.nvml.Release() // before waiting on the lock and the disk
	res, err := atomicfile.Write(string(file), data, atomicfile.Options{Backup: o.Backup})
	if err != nil {
		return err
	}
	r := writeResult{Path: res.Path, Changed: res.Changed, Backup: res.Backup, Devices: devices}
	if state != nil {
		if r.State, err = state(); err != nil {
			return err
		}
	}
	return report(e, r, o.JSON)
}

// report says what was written: JSON, or a line a file.
func report(e *env, r writeResult, asJSON bool) error {
	if asJSON {
		return e.print(func(w io.Writer) error { return json.NewEncoder(w).Encode(r) })
	}
	changed := map[bool]string{false: "unchanged", true: "changed"}
	return e.print(func(w io.Writer) error {
		fmt.Fprintf(w, "%s: %s (%s)\n", r.Path, changed[r.Changed], gresgen.DeviceCount(r.Devices))
		if r.State != nil {
			fmt.Fprintf(w, "%s: %s (device state for slurm-mig env)\n", r.State.Path, changed[r.State.Changed])
		}
		return nil
	})
}
