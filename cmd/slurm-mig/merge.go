package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/slurm-mig/slurm-mig/atomicfile"
	"github.com/slurm-mig/slurm-mig/fleet"
)

type mergeCmd struct {
	Paths     []string   `arg:"" name:"FILE|DIR" help:"gen outputs (gres.conf fragments naming their nodes), files or pipes; a directory means its *.conf files."`
	NodeLines bool       `help:"Print the slurm.conf lines instead: NodeName=<hostlist> Gres=..., nodes with the same counts on one line."`
	Output    outputPath `short:"o" placeholder:"FILE" help:"Write FILE atomically instead of printing (- prints), as gen -o does."`
	Backup    bool       `help:"With -o, keep the replaced file as FILE.bak."`
	JSON      bool       `name:"json" help:"With -o, report the result as JSON ({\"path\", \"changed\", \"backup\", \"nodes\", \"layouts\"})."`
}

func (c *mergeCmd) Run(e *env) error {
	output := ""
	if !c.Output.toStdout() {
		output = string(c.Output)
	} else if c.Backup || c.JSON {
		return fmt.Errorf("--backup and --json go with -o FILE")
	}
	files, err := fleet.Fragments(c.Paths, output)
	if err != nil {
		return err
	}
	f, err := fleet.Read(files)
	if err != nil {
		return err
	}
	data := f.GresConf(e.version)
	if c.NodeLines {
		data = f.NodeLines()
	}
	if output == "" {
		return writeAll(e.stdout, bytes.NewBuffer(data))
	}
	res, err := atomicfile.Write(output, data, atomicfile.Options{Backup: c.Backup})
	if err != nil {
		return err
	}
	if c.JSON {
		out, err := json.Marshal(struct {
			Path    string `json:"path"`
			Changed bool   `json:"changed"`
			Backup  string `json:"backup,omitempty"`
			Nodes   int    `json:"nodes"`
			Layouts int    `json:"layouts"`
		}{res.Path, res.Changed, res.Backup, f.Nodes(), len(f.Layouts)})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", out)
		return err
	}
	state := "unchanged"
	if res.Changed {
		state = "changed"
	}
	_, err = fmt.Fprintf(e.stdout, "%s: %s (%s, %s)\n", res.Path, state, countOf(f.Nodes(), "node"), countOf(len(f.Layouts), "layout"))
	return err
}
