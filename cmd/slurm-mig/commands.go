package main

import (
	"fmt"
	"io"
	"os"

	"github.com/slurm-mig/slurm-mig/internal/accounting"
	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/drift"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/nodegres"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

type genCmd struct {
	renderFlags
	Compact   bool   `help:"Merge lines that differ only in File= into Slurm ranges (File=/dev/nvidia[0-3])."`
	SlurmConf string `type:"nonempty" placeholder:"FILE" help:"The slurm.conf that slurmd reads with the output (default $SLURM_CONF, else /etc/slurm/slurm.conf when it exists, with --root /): where its GresTypes= names mps or shard, a Slurm older than 23.02.7 splits a MultipleFiles= line into one GPU per file, so --files auto writes ci there and multiple is refused."`
}

func (c *genCmd) Run(e *env) error {
	records, err := c.records()
	if err != nil {
		return err
	}
	if records.Gres.Sharing, err = sharing(c.SlurmConf, e.build.Root); err != nil {
		return err
	}
	out, err := c.output(c.Output)
	if err != nil {
		return err
	}
	built, warnings, err := e.build.Render(c.From, records, "gres.conf", c.AllowEmpty)
	e.warnAll(warnings)
	if err != nil {
		return refusal(err)
	}
	res, err := e.build.WriteGresConf(out, built, e.version, c.Compact)
	return e.show(res, out.JSON, err)
}

type nodeCmd struct {
	renderFlags
	Compact bool   `help:"Accepted as gen takes it; no effect on the node line, whose counts are the same either way."`
	Update  string `type:"nonempty" placeholder:"FILE" help:"Set the gpu items of Gres= on this node's own NodeName= line of FILE, a slurm.conf, in place, keeping every other GRES (mps, shard, nic, ...), key and byte."`
	Full    bool   `help:"Print the whole node line, as slurmd -C does (CPUs, Boards, SocketsPerBoard, CoresPerSocket, ThreadsPerCore, RealMemory), with Gres=."`
	accountingFlags
	SlurmConf string `type:"nonempty" placeholder:"SLURM_CONF" help:"With --accounting, the slurm.conf whose AccountingStorageTRES and partitions the lines keep and fill in (--update's file, with --update)."`
}

func (c *nodeCmd) Run(e *env) error {
	switch {
	case c.Update != "" && c.Output != "":
		return fmt.Errorf("--update and -o exclude each other")
	case c.Update != "" && c.Full:
		return flagError("--update sets only Gres=", "; drop --full")
	case c.Update != "" && c.NoNodeName:
		return flagError("--update needs the node's name", "; drop --no-node-name")
	case c.SlurmConf != "" && !c.Accounting:
		return fmt.Errorf("--slurm-conf goes with --accounting")
	case c.Accounting && c.Output != "":
		return flagError("--accounting prints slurm.conf lines, or sets them with --update SLURM_CONF", "; drop -o")
	case c.Accounting && c.Full:
		return flagError("--accounting prints no node line", "; drop --full")
	case c.Accounting && c.NoNodeName && c.SlurmConf != "":
		return flagError("--accounting --slurm-conf finds the node's partitions by its name", "; drop --no-node-name")
	case c.Accounting && c.Update != "" && c.SlurmConf != "" && c.SlurmConf != c.Update:
		return flagError("--update sets the lines in its own file", "; drop --slurm-conf")
	}
	if err := c.checkUnused(); err != nil {
		return err
	}
	records, err := c.records()
	if err != nil {
		return err
	}
	file := c.Output
	if c.Update != "" {
		file = outputPath(c.Update)
	}
	out, err := c.output(file)
	if err != nil {
		return err
	}
	built, warnings, err := e.build.Render(c.From, records, "node line", c.AllowEmpty)
	e.warnAll(warnings)
	if err != nil {
		return refusal(err)
	}
	var lines *accounting.Lines
	if c.Accounting {
		conf := c.SlurmConf
		if c.Update != "" {
			conf = c.Update
		}
		types, err := nodegres.NodeTypes(built.Node, records.Gres)
		if err != nil {
			return fmt.Errorf("--accounting: %w", err)
		}
		var a *slurmconf.Accounting
		if lines, a, err = c.lines(e, []accounting.Node{{Name: built.Config.NodeName, Types: types}}, conf); err != nil {
			return err
		}
		if c.Update != "" {
			if err := a.Editable(c.Update); err != nil {
				return err
			}
		}
	}
	if c.Update != "" {
		updated, err := built.Config.UpdateSlurmConf(c.Update)
		if err != nil {
			return err
		}
		if lines != nil {
			text, err := slurmconf.SetAccounting(string(updated), c.Update, lines.TRES, lines.Weights())
			if err != nil {
				return err
			}
			updated = []byte(text)
		}
		res, err := e.build.Write(out, updated, built)
		return e.show(res, out.JSON, err)
	}
	if lines != nil {
		return cmdline.PrintReport(e.stdout, lines, c.JSON)
	}
	line, err := e.build.NodeLine(built, c.Full)
	if err != nil {
		return fmt.Errorf("node --full: %w", err) // only the hardware can fail
	}
	res, err := e.build.WriteNodeLine(out, built, line)
	return e.show(res, out.JSON, err)
}

type diffCmd struct {
	sourceFlags
	recordFlags
	GresConf  string `type:"nonempty" placeholder:"FILE" help:"Compare with this gres.conf (default /etc/slurm/gres.conf when nothing else is compared); a pipe, or - for standard input, works too."`
	SlurmConf string `type:"nonempty" placeholder:"FILE" help:"Compare the Gres= counts this node's NodeName line declares in FILE (a pipe, or - for standard input)."`
	Running   bool   `help:"Compare the Gres= the running slurmctld has for this node (scontrol show node)."`
	State     string `type:"nonempty" placeholder:"FILE" help:"Compare the device state slurm-mig env reads with the GPUs (default: ${state_env} or ${state_default}, when it exists and the GPUs are read from NVML)."`
	JSON      bool   `name:"json" help:"Print the result as JSON."`
}

func (c *diffCmd) Run(e *env) error {
	in := drift.Inputs{GresConf: c.GresConf, SlurmConf: c.SlurmConf, Running: c.Running}
	if c.SlurmConf == "" {
		in.SlurmdConf = hostSlurmConf(e.build.Root)
	}
	if in.ReadStdinTwice() {
		return fmt.Errorf("--gres-conf and --slurm-conf cannot both read standard input")
	}
	records, err := c.records()
	if err != nil {
		return err
	}
	slurmd := c.SlurmConf
	if slurmd == "" {
		slurmd = in.SlurmdConf
	}
	if slurmd != slurmconf.Stdin {
		// diff renders what gen writes for this slurm.conf.
		if records.Gres.Sharing, err = sharing(slurmd, "/"); err != nil {
			return err
		}
	}
	if c.NoNodeName && (c.SlurmConf != "" || c.Running) {
		return flagError("comparing with slurm.conf or slurmctld needs the node's name", "; drop --no-node-name")
	}
	rep, warnings, err := e.build.Diff(c.From, records, c.State, in)
	e.warnAll(warnings)
	if err != nil {
		return refusal(err)
	}
	_, rep.Hint = fixWords(rep.Fix)
	if err := cmdline.PrintReport(e.stdout, cmdline.Clipped{Report: rep}, c.JSON); err != nil {
		return err
	}
	if !rep.Same {
		return cmdline.Status(1) // different, as diff(1) exits
	}
	return nil
}

// hostSlurmConf is the slurm.conf this host's slurmd reads, where none is
// named: $SLURM_CONF, else /etc/slurm/slurm.conf when it exists; "" under
// another --root, whose files are another machine's.
func hostSlurmConf(root hostfs.FS) string {
	if root != "/" {
		return ""
	}
	if p := os.Getenv("SLURM_CONF"); p != "" {
		return p
	}
	if _, err := os.Stat("/etc/slurm/slurm.conf"); err == nil {
		return "/etc/slurm/slurm.conf"
	}
	return ""
}

// sharing reports whether the slurm.conf that slurmd reads with the
// output (file, else hostSlurmConf) configures mps or shard.
func sharing(file string, root hostfs.FS) (bool, error) {
	if file == "" {
		file = hostSlurmConf(root)
	}
	if file == "" {
		return false, nil
	}
	types, err := slurmconf.ReadGresTypes(file)
	return slurmconf.ConfiguresSharing(types), err
}

type listCmd struct {
	sourceFlags
	JSON bool `name:"json" help:"Print the devices as JSON, for scripts: {\"hostname\", \"gpus\": [{\"index\", \"minor\", \"name\", \"uuid\", \"pci_bus_id\", \"mig_enabled\", \"mig_pending\", \"files\", \"mig_devices\": [{\"gpu_instance_id\", \"compute_instance_id\", \"profile\", \"uuid\", \"files\"}]}]}; files are the device files a job of the device is given, none for a GPU in MIG mode."`
}

func (c *listCmd) Run(e *env) error {
	node, warnings, err := e.loader.Load(c.From)
	e.warnAll(warnings)
	if err != nil {
		return err
	}
	if c.JSON {
		return e.print(func(w io.Writer) error { return writeListing(w, node) })
	}
	return e.print(func(w io.Writer) error { return writeTable(w, node) })
}

type snapshotCmd struct{}

func (c *snapshotCmd) Run(e *env) error {
	node, warnings, err := e.loader.Snapshot() // snapshots are always taken from NVML
	e.warnAll(warnings)
	if err != nil {
		return err
	}
	return e.print(func(w io.Writer) error { return snapshot.Write(w, node) })
}

// stateCmd writes only the device state: for configless nodes, whose
// gres.conf and slurm.conf are the controller's.
type stateCmd struct {
	sourceFlags
	NodeName string `type:"nonempty" placeholder:"NAME" help:"The node's Slurm NodeName, which env checks against SLURMD_NODENAME (default: the short hostname; with --from, the snapshot's)."`
	State    string `type:"nonempty" placeholder:"FILE" help:"Where to write it (default ${state_env}, else ${state_default})."`
	JSON     bool   `name:"json" help:"Report the result as JSON ({\"path\", \"changed\", \"devices\"})."`
}

func (c *stateCmd) Run(e *env) error {
	if err := checkNodeName(c.NodeName); err != nil {
		return err
	}
	if c.From != "" && c.State == "" {
		// As gen -o and node -o with --from: the default place is this
		// node's own state, which its TaskProlog reads.
		return flagError("state --from writes the snapshot's devices",
			fmt.Sprintf(": name the file with --state (the default, %s, is this node's own state, which env reads)", jobenv.StatePath("", os.Getenv)))
	}
	rep, warnings, err := e.build.WriteState(c.From, c.NodeName, c.State)
	e.warnAll(warnings)
	if err != nil {
		return err
	}
	return e.report(rep, c.JSON)
}
