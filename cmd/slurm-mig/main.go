// Command slurm-mig writes Slurm's gres.conf and NodeName Gres= counts for
// a node's GPUs and MIG devices. This package is the command line only: it
// hands flags to the library packages and prints what they return.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	v3 "github.com/slurm-mig/slurm-mig/internal/api/snapshot/v3"
	"github.com/slurm-mig/slurm-mig/internal/rebalance"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/alecthomas/kong"

	"github.com/slurm-mig/slurm-mig/internal/claim"
	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/nodegres"
	"github.com/slurm-mig/slurm-mig/internal/nodeload"
)

// version is set at build time (-ldflags "-X main.version=v1.2.3"); a
// module build (go install ...@v1.2.3) reports its module version.
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], &env{
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		newNVML:  func() nvml.Interface { return nvml.New() },
		hostname: os.Hostname,
	}))
}

// env is what commands need from outside (output streams, NVML, the host
// name), which tests replace, and, once parsed, the loader and builder.
type env struct {
	stdout, stderr io.Writer
	newNVML        func() nvml.Interface
	hostname       func() (string, error)
	version        string
	loader         *nodeload.Loader  // owns the run's NVML
	build          *nodegres.Builder // gen, node, diff, state
}

// named is the program's name and version, as --version prints them and
// the files it writes record them.
func (e *env) named() string { return "slurm-mig " + e.version }

// print prints what write writes, all at once after it succeeded.
func (e *env) print(write func(io.Writer) error) error { return cmdline.Print(e.stdout, write) }

// report prints what a write did (nodegres), as merge and diff print
// theirs: whole, as text or JSON.
func (e *env) report(rep *nodegres.Report, asJSON bool) error {
	return cmdline.PrintReport(e.stdout, rep, asJSON)
}

// show prints what a node write returned (nodegres): the data, or the
// report of the file written, as text or JSON.
func (e *env) show(res *nodegres.Result, asJSON bool, err error) error {
	if err != nil {
		return err
	}
	if res.Report == nil {
		_, err := e.stdout.Write(res.Data)
		return err
	}
	return e.report(res.Report, asJSON)
}

// warn is the run's one warning channel: the packages below say through
// it, or return, what the run goes without, and a warning that carries a
// fix is said with its hint (say).
func (e *env) warn(err error) {
	fmt.Fprintf(e.stderr, "slurm-mig: warning: %s\n", cmdline.Clip(say(err)))
}

// warnAll warns of each warning a package returned, in its order.
func (e *env) warnAll(warnings []error) {
	for _, w := range warnings {
		e.warn(w)
	}
}

// warnText is warn for the packages whose warnings are plain text, with
// no fix to word (claim's holder).
func (e *env) warnText(msg string) { e.warn(errors.New(msg)) }

// A command tagged nvml:"" reads NVML unless given --from: NVML's Init
// starts for it before the command line is parsed (readsNVML).
type cli struct {
	Root    string        `type:"nonempty" default:"/" placeholder:"DIR" help:"Read every /proc, /sys and /dev file under DIR (a fixture tree, a chroot, a copy of a GPU node's tree). Printed device paths stay /dev/... With --from, DIR other than / is the snapshot's node: its CPU topology gives the Cores= and hardware a snapshot lacks."`
	Timeout time.Duration `default:"60s" placeholder:"DURATION" help:"Give up, writing nothing, when NVML has not answered in this time (a hung GPU or driver; default 60s)."`
	// -V as Slurm's commands take it (sinfo -V, slurmd -V); -v is verboseFlag.
	ShowVersion kong.VersionFlag `name:"version" short:"V" help:"Print the version and exit (-v alone does too)."`
	Verbose     verboseFlag      `short:"v" hidden:"" help:"Refused: slurm-mig has no verbose mode."`

	Gen       genCmd       `cmd:"" nvml:"" help:"Print gres.conf lines for this node's GPUs and MIG devices."`
	Node      nodeCmd      `cmd:"" nvml:"" help:"Print the slurm.conf NodeName line with Gres= counts that match gen."`
	Diff      diffCmd      `cmd:"" nvml:"" help:"Compare what gen and node would write with gres.conf, slurm.conf or slurmctld; exit 0 same, 1 different, 2 trouble."`
	List      listCmd      `cmd:"" nvml:"" help:"Show a table of GPUs and MIG devices with their device files (--json: the same as JSON, for scripts)."`
	Snapshot  snapshotCmd  `cmd:"" nvml:"" help:"Print everything discovery found, with cap minors, as JSON (snapshot schema ${schema}; older ones are still read) for --from."`
	State     stateCmd     `cmd:"" nvml:"" help:"Write the device state (device files -> UUIDs) that env reads; gen -o and node -o/--update write it too."`
	Env       envCmd       `cmd:"" help:"TaskProlog: print export CUDA_VISIBLE_DEVICES=<UUIDs> for the GPUs Slurm gave this task; never starts NVML."`
	Jobmap    jobmapCmd    `cmd:"" help:"Prolog (--remove: Epilog): write the job's line into the file of each of its GPUs in DIR, the map dcgm-exporter (--format dcgm) or jobstats (--format jobstats) reads; never starts NVML."`
	Free      freeCmd      `cmd:"" nvml:"" help:"Claim an idle MIG device among those the job may use and print its UUID for CUDA_VISIBLE_DEVICES; the claim ends when the job's shell does."`
	Exec      execCmd      `cmd:"" nvml:"" help:"Claim idle MIG devices and run CMD with CUDA_VISIBLE_DEVICES set to them; the claim ends when CMD does."`
	Merge     mergeCmd     `cmd:"" help:"Merge gen outputs of many nodes into one cluster gres.conf (or, with --node-lines, the slurm.conf lines) for configless Slurm."`
	Check     checkCmd     `cmd:"" help:"Read a cluster's gres.conf and slurm.conf as slurmd of a release will, node by node, and report what it would refuse, skip or drain; exit 0 clean, 1 errors or drains, 2 fatal."`
	Plan      planCmd      `cmd:"" nvml:"" help:"Print the slurm.conf NodeName line with the Gres= counts this node will have once mig-parted applies a config (--mig-config FILE --select NAME)."`
	Rebalance rebalanceCmd `cmd:"" help:"Propose MIG configs for nodes whose GPUs are idle, from the pending queue; exit 0 nothing to do, 1 changes proposed. It changes nothing unless given --apply."`
	Holders   holdersCmd   `cmd:"" help:"Say what holds this node's NVIDIA devices open (processes, DCGM, slurmd's own NVML, nvidia_drm); exit 0 nothing but nvidia-persistenced, 1 something. repartition.sh asks before mig-parted runs."`
	Help      helpCmd      `cmd:"" whole:"" help:"Print the help of slurm-mig or of one command."`
	Version   versionCmd   `cmd:"" help:"Print the version."`

	Docs docsCmd `cmd:"" hidden:"" whole:"" help:"Print the man page or a shell completion script, made from this command line's model."`
}

// Validate checks the global flags when the command line is parsed.
func (c *cli) Validate() error {
	if c.Timeout <= 0 {
		return fmt.Errorf("--timeout must be longer than 0, not %s", c.Timeout)
	}
	return nil
}

// run runs the command line args and returns the exit status, as diff(1)
// has them: 0 fine, 1 different (diff), 2 trouble; free and exec add
// theirs (1 none idle, 126 and 127 for CMD).
func run(args []string, e *env) int {
	if len(args) > 0 && args[0] == claim.HolderArg {
		return claim.Hold(args[1:]) // free's holder, re-executed; no CLI
	}
	e.version = cmdline.Version(version)
	nvmlLib := nodeload.NewNVML(e.newNVML)
	if readsNVML(args, cli{}) {
		nvmlLib.Start() // Init overlaps building the parser
	}
	defer nvmlLib.Release() // a run that used NVML shuts it down
	var c cli
	return e.app().Run(&c, args, func() {
		root := hostfs.FS(c.Root)
		e.loader = &nodeload.Loader{Host: nodeload.NewHost(root), NVML: nvmlLib,
			Hostname: e.hostname, Timeout: c.Timeout}
		e.build = &nodegres.Builder{Loader: e.loader, Root: root, Getenv: os.Getenv,
			WrittenBy: e.named()}
	})
}

// app is how the command line is parsed: help names the defaults that
// decide them, and commands get the env.
func (e *env) app() cmdline.App {
	return cmdline.App{Name: "slurm-mig", Stdout: e.stdout, Stderr: e.stderr, Explain: say,
		Description: "Generate Slurm GRES configuration for NVIDIA GPUs and MIG devices.",
		Options: []kong.Option{
			kong.Vars{"version": e.named(), "commands": strings.Join(cmdline.Commands(cli{}), ","), "command_words": strings.Join(cmdline.Commands(cli{}), ", "), "schema": strconv.Itoa(v3.Version), "state_env": "$" + jobenv.StatePathEnv, "state_default": jobenv.DefaultStatePath,
				"queue_format": rebalance.QueueFormat, "nodes_format": rebalance.NodesFormat,
				"history_format": rebalance.HistoryFormat},
			kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
			kong.NamedMapper("nonempty", nonemptyMapper{}),
			kong.Bind(e),
		}}
}
