package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/slurm-mig/slurm-mig/atomicfile"
	"github.com/slurm-mig/slurm-mig/gresgen"
)

// outputFlags say where gen and node put what they render.
type outputFlags struct {
	Output     string `short:"o" placeholder:"FILE" help:"Write FILE atomically instead of printing: unchanged content is not rewritten; mode, owner and symlinks are kept; concurrent runs wait for each other."`
	Backup     bool   `help:"With -o or --update, keep the replaced file as FILE.bak."`
	AllowEmpty bool   `help:"Write even when no GPU or MIG device was found (by default that is refused: after an NVML failure an empty gres.conf takes a node's GPUs away)."`
	JSON       bool   `name:"json" help:"With -o or --update, report the result as JSON ({\"path\", \"changed\", \"backup\", \"devices\"})."`
}

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
}

// write prints data or, given a file (-o, node --update), writes it
// atomically and reports the write.
func (o *outputFlags) write(e *env, file string, data []byte, devices int) error {
	if file == "" {
		if o.Backup || o.JSON {
			return fmt.Errorf("--backup and --json go with -o (or node --update)")
		}
		_, err := e.stdout.Write(data)
		return err
	}
	e.nvml.Release() // before waiting on the lock and the disk
	res, err := atomicfile.Write(file, data, atomicfile.Options{Backup: o.Backup})
	if err != nil {
		return err
	}
	r := writeResult{Path: res.Path, Changed: res.Changed, Backup: res.Backup, Devices: devices}
	if o.JSON {
		return e.print(func(w io.Writer) error { return json.NewEncoder(w).Encode(r) })
	}
	state := map[bool]string{false: "unchanged", true: "changed"}[r.Changed]
	_, err = fmt.Fprintf(e.stdout, "%s: %s (%d devices)\n", r.Path, state, r.Devices)
	return err
}
