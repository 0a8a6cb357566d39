package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/slurm-mig/slurm-mig/atomicfile"
	"github.com/slurm-mig/slurm-mig/fleet"
)

type mergeCmd struct {
	Paths     []string `arg:"" name:"FILE|DIR" help:"gen outputs (gres.conf fragments naming their nodes); a directory means its *.conf files."`
	NodeLines bool     `help:"Print the slurm.conf lines instead: NodeName=<hostlist> Gres=..., nodes with the same counts on one line."`
	Output    string   `short:"o" placeholder:"FILE" help:"Write FILE atomically instead of printing, as gen -o does."`
	Backup    bool     `help:"With -o, keep the replaced file as FILE.bak."`
	JSON      bool     `name:"json" help:"With -o, report the result as JSON ({\"path\", \"changed\", \"backup\", \"nodes\", \"layouts\"})."`
}

func (c *mergeCmd) Run(e *env) error {
	if c.Output == "" && (c.Backup || c.JSON) {
		return fmt.Errorf("--backup and --json go with -o")
	}
	files, err := fleet.Fragments(c.Paths, c.Output)
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
	if c.Output == "" {
		return writeAll(e.stdout, bytes.NewBuffer(data))
	}
	res, err := atomicfile.Write(c.Output, data, atomicfile.Options{Backup: c.Backup})
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
	_, err = fmt.Fprintf(e.stdout, "%s: %s (%d nodes, %d layouts)\n", res.Path, state, f.Nodes(), len(f.Layouts))
	return err
}
