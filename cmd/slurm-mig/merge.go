package main

import (
	"fmt"
	"io"

	"github.com/slurm-mig/slurm-mig/internal/atomicfile"
	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/fleet"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

type mergeCmd struct {
	Paths     []string   `arg:"" name:"FILE|DIR" help:"gen outputs (gres.conf fragments naming their nodes), files or pipes; a directory means its *.conf files."`
	NodeLines bool       `help:"Print the slurm.conf lines instead: NodeName=<hostlist> Gres=..., nodes with the same counts on one line."`
	Output    outputPath `short:"o" placeholder:"FILE" help:"Write FILE atomically instead of printing (- prints), as gen -o does."`
	Backup    bool       `help:"With -o, keep the replaced file as FILE.bak."`
	JSON      bool       `name:"json" help:"With -o, report the result as JSON ({\"path\", \"changed\", \"backup\", \"nodes\", \"layouts\"})."`
	accountingFlags
	SlurmConf string `type:"nonempty" placeholder:"SLURM_CONF" help:"With --accounting, the slurm.conf whose AccountingStorageTRES and partitions the lines keep and fill in. With --accounting, -o FILE is a slurm.conf whose AccountingStorageTRES and partitions' TRESBillingWeights are set in place, every other byte kept."`
}

func (c *mergeCmd) Run(e *env) error {
	output := string(c.Output)
	if output == "-" {
		output = ""
	}
	if output == "" && (c.Backup || c.JSON) {
		return fmt.Errorf("--backup and --json go with -o FILE")
	}
	if err := c.checkUnused(); err != nil {
		return err
	}
	switch {
	case c.SlurmConf != "" && !c.Accounting:
		return fmt.Errorf("--slurm-conf goes with --accounting")
	case c.Accounting && c.NodeLines:
		return fmt.Errorf("--accounting and --node-lines exclude each other")
	case c.Accounting && output != "" && c.SlurmConf != "" && c.SlurmConf != output:
		return flagError("with --accounting, -o sets the lines in its own file", "; drop --slurm-conf")
	}
	f, err := fleet.Merge(c.Paths, output)
	if err != nil {
		return err
	}
	if c.Accounting {
		return c.accounting(e, f, output)
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
	return cmdline.PrintReport(e.stdout, cmdline.Clipped{Report: rep}, c.JSON)
}

// accounting prints the fleet's accounting lines, or sets them in the
// slurm.conf output.
func (c *mergeCmd) accounting(e *env, f *fleet.Fleet, output string) error {
	nodes, err := f.AccountingNodes()
	if err != nil {
		return err
	}
	conf := c.SlurmConf
	if output != "" {
		conf = output
	}
	lines, _, err := c.lines(e, nodes, conf)
	if err != nil {
		return err
	}
	if output == "" {
		return cmdline.PrintReport(e.stdout, lines, c.JSON)
	}
	data, err := slurmconf.SetAccountingFile(output, lines.TRES, lines.Weights())
	if err != nil {
		return err
	}
	res, err := atomicfile.Write(output, data, atomicfile.Options{Backup: c.Backup})
	if err != nil {
		return err
	}
	return cmdline.PrintReport(e.stdout, &fleet.Written{Result: res, Nodes: f.Nodes(), Layouts: len(f.Layouts)}, c.JSON)
}
