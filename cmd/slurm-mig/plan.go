package main

import (
	"errors"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/accounting"
	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/fleetplan"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

type planCmd struct {
	sourceFlags
	countFlags
	Snapshots []string `arg:"" optional:"" name:"SNAPSHOT|DIR" help:"Plan a fleet: the nodes' snapshots (slurm-mig snapshot), files, or directories of *.json files; each node is named by its snapshot's short hostname, and the grouped NodeName=<hostlist> Gres=... lines are printed, as merge --node-lines prints them. Nodes of the same GPUs may share one snapshot instead: --hardware."`
	Hardware  []string `sep:"none" placeholder:"NODES=SNAPSHOT" help:"Plan a fleet: the nodes of the hostlist NODES have the GPUs of SNAPSHOT's node, each planned as SNAPSHOT (repeatable; in place of a snapshot per node). A config is refused for them where no entry takes a MIG-capable GPU: that GPU keeps each node's own layout, which SNAPSHOT does not know."`
	MigConfig string   `type:"nonempty" required:"" placeholder:"FILE" help:"The mig-parted config file (v1) that mig-parted will apply."`
	Select    string   `type:"nonempty" required:"" placeholder:"NAME" help:"The config of FILE that mig-parted will apply (its --selected-config); in a fleet, that of every node --assign does not name."`
	Assign    string   `type:"nonempty" placeholder:"FILE" help:"With snapshots or --hardware: the config each node gets, one line a node or hostlist and a config name (gpu[001-040] all-balanced), with # comments."`
	SlurmConf string   `type:"nonempty" placeholder:"FILE" help:"With snapshots or --hardware: print instead what in FILE, a slurm.conf, must change, node by node: the Gres= counts declared and planned, and which nodes would drain (more declared than offered); exits 1 when something must change, as diff does."`
	accountingFlags
	JSON bool `name:"json" help:"Print the plan as JSON: {\"node_line\", \"mig_config\", \"select\", \"gpus\": [{\"index\", \"name\", \"entry\": {\"number\", \"line\"} or null when no entry matches and the GPU keeps its layout, \"mig_enabled\", \"mig_devices\": [{\"profile\", \"count\"}], \"gres\": [{\"type\", \"count\"}]}]}; for a fleet {\"node_lines\", \"nodes\": [{\"node\", \"snapshot\" (its own, or --hardware's), and the same}]}; with --slurm-conf {\"slurm_conf\", \"same\", \"nodes\": [{\"node\", \"planned\", \"source\", \"gres\", \"same\", \"counts\", \"drains\"}], \"verdict\"}."`
}

func (c *planCmd) Run(e *env) error {
	if err := c.check(); err != nil {
		return err
	}
	cfg, err := migplan.ReadConfig(c.MigConfig)
	if err != nil {
		return err
	}
	if len(c.Snapshots) > 0 || len(c.Hardware) > 0 {
		return c.fleet(e, cfg)
	}
	if c.Assign != "" || c.SlurmConf != "" || c.Accounting {
		return errors.New("--assign, --slurm-conf and --accounting plan a fleet: give the nodes' snapshots (SNAPSHOT|DIR), or --hardware NODES=SNAPSHOT")
	}
	sel, err := cfg.Select(c.Select)
	if err != nil {
		return err
	}
	node, warnings, err := e.loader.LoadProfiles(c.From)
	e.warnAll(warnings)
	if err != nil {
		return err
	}
	plan, err := migplan.Make(node, sel)
	if err != nil {
		return err
	}
	e.warnAll(plan.Warnings)
	name, err := e.loader.NodeName(node, c.NodeName, c.NoNodeName)
	if err != nil {
		return err
	}
	slurm, err := plan.Counts(name, c.gres())
	if err != nil {
		return err
	}
	e.warnAll(slurm.Warnings)
	return cmdline.PrintReport(e.stdout, slurm, c.JSON)
}

// fleet plans every node of the snapshots and --hardware given.
func (c *planCmd) fleet(e *env, cfg *migplan.Config) error {
	switch {
	case c.From != "":
		return flagError("--from reads one node", "; give a fleet's snapshots as SNAPSHOT|DIR arguments instead")
	case c.NodeName != "" || c.NoNodeName:
		return flagError("a fleet's nodes are named by their snapshots", "; drop --node-name and --no-node-name")
	}
	assign, err := fleetplan.NewAssign(cfg, c.Select)
	if err != nil {
		return err
	}
	if c.Assign != "" {
		if err := assign.Read(c.Assign); err != nil {
			return err
		}
	}
	paths, err := snapshot.Files(c.Snapshots)
	if err != nil {
		return err
	}
	hw, err := readHardware(c.Hardware, assign.Names())
	if err != nil {
		return err
	}
	if err := c.checkUnused(); err != nil {
		return err
	}
	f, warnings, err := fleetplan.Make(fleetplan.Inputs{Snapshots: paths, Hardware: hw, Assign: assign, Gres: c.gres(),
		Name: func(n *model.Node) (string, error) { return e.loader.NodeName(n, "", false) }, Accounting: c.Accounting})
	e.warnAll(warnings)
	if err != nil {
		return err
	}
	var lines *accounting.Lines
	var conf *slurmconf.Accounting
	if c.Accounting {
		if lines, conf, err = c.lines(e, f.AccountingNodes(), c.SlurmConf); err != nil {
			return err
		}
	}
	if c.SlurmConf == "" {
		if lines != nil {
			return cmdline.PrintReport(e.stdout, lines, c.JSON)
		}
		return cmdline.PrintReport(e.stdout, f, c.JSON)
	}
	d, err := f.Diff(c.SlurmConf)
	if err != nil {
		return err
	}
	if err := cmdline.PrintReport(e.stdout, d, c.JSON); err != nil {
		return err
	}
	same := d.Same
	if lines != nil {
		// The accounting lines the plan needs follow the report, and
		// count as a change where slurm.conf lacks them.
		if err := cmdline.PrintReport(e.stdout, lines, c.JSON); err != nil {
			return err
		}
		same = same && !lines.Differs(conf)
	}
	if !same {
		return cmdline.Status(1) // something must change, as diff(1) exits
	}
	return nil
}

// gres are the type flags' options, as gen and node take them.
func (c *planCmd) gres() gresgen.Options {
	return gresgen.Options{TypeStyle: gresgen.TypeStyle(c.TypeStyle), TypeMap: c.TypeMap}
}
