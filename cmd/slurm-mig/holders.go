package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/gpuusers"
)

type holdersCmd struct {
	JSON bool `name:"json" help:"Print the holders as JSON: {\"users\": [{\"pid\", \"command\", \"devices\", \"what\", \"harmless\"}], \"modules\": [{\"name\", \"users\", \"used_by\"}], \"unreadable\"}."`
}

func (c *holdersCmd) Run(e *env) error {
	r, err := gpuusers.Find(e.build.Root, os.Getpid())
	if err != nil {
		return err
	}
	if err := cmdline.PrintReport(e.stdout, holders(r), c.JSON); err != nil {
		return err
	}
	if r.Busy() {
		return cmdline.Status(1)
	}
	return nil
}

// holders prints a report, a line a holder.
type holders gpuusers.Report

func (h holders) WriteText(w io.Writer) error {
	lines := gpuusers.Report(h).Lines()
	if len(lines) == 0 {
		lines = []gpuusers.Line{{Text: "nothing holds the NVIDIA devices"}}
	}
	for _, l := range lines {
		// A line's hint follows it, as say puts an error's after it.
		if _, err := fmt.Fprintln(w, l.Text+l.Hint); err != nil {
			return err
		}
	}
	return nil
}

func (h holders) WriteJSON(w io.Writer) error {
	r := gpuusers.Report(h)
	if r.Users == nil {
		r.Users = []gpuusers.User{}
	}
	if r.Modules == nil {
		r.Modules = []gpuusers.Module{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
