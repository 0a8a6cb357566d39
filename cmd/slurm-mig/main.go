// Command slurm-mig writes Slurm's gres.conf and NodeName Gres= counts for
// a node's GPUs and MIG devices, read through NVML.
//
// This package is the command line only: each command is a Run method that
// loads the node (nodeload.Loader), calls the library packages, and
// prints or writes what they return.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/alecthomas/kong"

	"github.com/slurm-mig/slurm-mig/claim"
	"github.com/slurm-mig/slurm-mig/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/cliparse"
	"github.com/slurm-mig/slurm-mig/jobenv"
	"github.com/slurm-mig/slurm-mig/nodeload"
	"github.com/slurm-mig/slurm-mig/slurmconf"
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

// Exit codes, as diff(1) uses them: 0 fine, 1 different (diff), 2 trouble.
const (
	exitOK        = 0
	exitDifferent = 1
	exitError     = 2
)

// env is what commands need from outside: output streams, the NVML
// library and the host name, which tests replace; and, made once a run,
// the loader of the node's model.
type env struct {
	stdout, stderr io.Writer
	newNVML        func() nvml.Interface
	hostname       func() (string, error)
	version        string
	nvml           *nodeload.NVML   // the run's NVML library
	loader         *nodeload.Loader // set once the command line is parsed
	root           hostfs.FS        // --root
	// installedSlurm waits for slurmd -V (probeSlurm); nil when not asked.
	installedSlurm func() (slurmconf.Version, error)
}

// warn is the run's one warning channel: the library packages say what
// they did without through it.
func (e *env) warn(msg string) { fmt.Fprintf(e.stderr, "slurm-mig: warning: %s\n", msg) }

// A command tagged nvml:"" reads NVML unless given --from: NVML's Init
// starts for it before the command line is parsed (nodeload.ReadsNVML).
type cli struct {
	Root    string           `default:"/" placeholder:"DIR" help:"Read every /proc, /sys and /dev file under DIR (a fixture tree or a chroot). Printed device paths stay /dev/..."`
	Timeout time.Duration    `default:"60s" help:"Give up, writing nothing, when NVML has not answered in this time (a hung GPU or driver)."`
	Version kong.VersionFlag `help:"Print the version and exit."`

	Gen      genCmd      `cmd:"" nvml:"" help:"Print gres.conf lines for this node's GPUs and MIG devices."`
	Node     nodeCmd     `cmd:"" nvml:"" help:"Print the slurm.conf NodeName line with Gres= counts that match gen."`
	Diff     diffCmd     `cmd:"" nvml:"" help:"Compare what gen and node would write with gres.conf, slurm.conf or slurmctld; exit 0 same, 1 different, 2 trouble."`
	List     listCmd     `cmd:"" nvml:"" help:"Show a table of GPUs and MIG devices with their device files."`
	Snapshot snapshotCmd `cmd:"" nvml:"" help:"Print everything discovery found, with cap minors, as JSON (schema v1) for --from."`
	State    stateCmd    `cmd:"" nvml:"" help:"Write the device state (device files -> UUIDs) that env reads; gen -o and node -o/--update write it too."`
	Env      envCmd      `cmd:"" help:"TaskProlog: print export CUDA_VISIBLE_DEVICES=<UUIDs> for the GPUs Slurm gave this task; never starts NVML."`
	Free     freeCmd     `cmd:"" nvml:"" help:"Claim an idle MIG device among those the job may use and print its UUID for CUDA_VISIBLE_DEVICES; the claim ends when the job's shell does."`
	Exec     execCmd     `cmd:"" nvml:"" help:"Claim idle MIG devices and run CMD with CUDA_VISIBLE_DEVICES set to them; the claim ends when CMD does."`
	Merge    mergeCmd    `cmd:"" help:"Merge gen outputs of many nodes into one cluster gres.conf (or, with --node-lines, the slurm.conf lines) for configless Slurm."`

	Docs docsCmd `cmd:"" hidden:"" whole:"" help:"Print the man page or a shell completion script, made from this command line's model."`
}

// helpVars are the defaults that cli's help names, taken from the
// constants that decide them.
func helpVars() kong.Vars {
	return kong.Vars{"state_env": "$" + jobenv.StatePathEnv, "state_default": jobenv.DefaultStatePath}
}

// Validate checks the global flags when the command line is parsed.
func (c *cli) Validate() error {
	if c.Timeout <= 0 {
		return fmt.Errorf("--timeout must be longer than 0, not %s", c.Timeout)
	}
	return nil
}

// errExit carries kong's exit code (after --help, --version) out of Parse.
type errExit int

// errDifferent makes run exit 1 without printing an error.
type errDifferent struct{}

func (errDifferent) Error() string { return "different" }

func run(args []string, e *env) (code int) {
	if len(args) > 0 && args[0] == claim.HolderArg {
		return claim.Hold(args[1:]) // free's holder, re-executed; no CLI
	}
	e.version = buildVersion()
	e.nvml = nodeload.NewNVML(e.newNVML)
	if nodeload.ReadsNVML(args, cli{}) {
		e.nvml.Start() // Init overlaps building the parser
	}
	defer func() {
		if r := recover(); r != nil {
			exit, ok := r.(errExit)
			if !ok {
				panic(r)
			}
			code = int(exit)
		}
	}()
	var c cli
	ctx, err := cliparse.One(&c, args, e.parse)
	if err != nil {
		ctx, err = e.parse(&c, args)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "slurm-mig: %v (see slurm-mig --help)\n", err)
		return exitError
	}
	e.root = hostfs.FS(c.Root)
	e.loader = &nodeload.Loader{Host: nodeload.NewHost(hostfs.FS(c.Root)), NVML: e.nvml,
		Hostname: e.hostname, Timeout: c.Timeout, Warn: e.warn}
	if err := ctx.Run(); err != nil {
		if errors.As(err, new(errDifferent)) {
			return exitDifferent
		}
		fmt.Fprintf(e.stderr, "slurm-mig: %s\n", oneLine(err))
		if coded := (interface{ ExitCode() int })(nil); errors.As(err, &coded) {
			return coded.ExitCode() // free and exec: 1 none idle, 126/127 CMD
		}
		return exitError
	}
	return exitOK
}

// parse parses args into target, cli or a part of it (cliparse.One).
func (e *env) parse(target any, args []string) (*kong.Context, error) {
	parser, err := kong.New(target,
		kong.Name("slurm-mig"),
		kong.Description("Generate Slurm GRES configuration for NVIDIA GPUs and MIG devices."),
		kong.Writers(e.stdout, e.stderr),
		kong.Vars{"version": "slurm-mig " + e.version}, helpVars(),
		kong.Exit(func(code int) { panic(errExit(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Bind(e),
	)
	if err != nil {
		panic(err) // the CLI definition itself is wrong
	}
	return parser.Parse(args)
}

// oneLine keeps an error to one line, so logs of hooks stay readable.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return version
}

// print runs write into a buffer and prints the whole output at once,
// after every step succeeded, so a failure never leaves half a config on
// stdout.
func (e *env) print(write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	if _, err := e.stdout.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}
