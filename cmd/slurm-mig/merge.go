package main

import (
	"fmt"
	"io"

	"github.com/slurm-mig/slurm-mig/internal/fleet"
	"github.com/slurm-mig/slurm-mig/internal/kongrun"
)

type mergeCmd struct {
	Paths     []string   `arg:"" name:"FILE|DIR" help:"gen outputs (gres.conf fragments naming their nodes), files or pipes; a directory means its *.conf files."`
	NodeLines bool       `help:"Print the slurm.conf lines instead: NodeName=<hostlist> Gres=..., nodes with the same counts on one line."`
	Output    outputPath `short:"o" placeholder:"FILE" help:"Write FILE atomically instead of printing (- prints), as gen -o does."`
	Backup    bool       `help:"With -o, keep the replaced file as FILE.bak."`
	JSON      bool       `name:"json" help:"With -o, report the result as JSON ({\"path\", \"changed\", \"backup\", \"nodes\", \"layouts\"})."`
}

func (c *mergeCmd) Run(e *env) error {
	output := string(c.Output)
	if output == "-" {
		output = ""
	}
	if output == "" && (c.Backup || c.JSON) {
		return fmt.Errorf("--backup and --json go with -o FILE")
	}
	f, err := fleet.Merge(c.Paths, output)
	if err != nil {
		return err
	}
	var rep *fleet.Written
	switch {
	case output == "" && c.NodeLines:
		return e.print(func(w io.Writer) error { _, err := w.Write(f.NodeLines()); return err })
	case output == "":
		return e.print(func(w io.Writer) error { _, err := w.Write(f.GresConf(e.version)); return err })
	case c.NodeLines:
		rep, err = f.WriteNodeLines(output, c.Backup)
	default:
		rep, err = f.WriteGresConf(output, e.version, c.Backup)
	}
	if err != nil {
		return err
	}
	return kongrun.PrintReport(e.stdout, kongrun.Clipped{Report: rep}, c.JSON)
}
