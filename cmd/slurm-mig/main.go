// Command slurm-mig writes Slurm's gres.conf and NodeName Gres= counts for
// a node's GPUs and MIG devices, read through NVML.
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

	"github.com/slurm-mig/slurm-mig/discover"
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

// Exit codes, as diff(1) uses them: 0 fine, 2 trouble (1 is kept for
// "different" in comparisons).
const (
	exitOK    = 0
	exitError = 2
)

// env is what commands need from outside: output streams, the NVML
// library and the host name, which tests replace.
type env struct {
	stdout, stderr io.Writer
	newNVML        func() nvml.Interface
	hostname       func() (string, error)
	version        string
	nvmlLib        *runNVML            // set once NVML's Init has started
	host           *discover.HostFiles // the files under --root, each read once a run
}

func (e *env) warn(msg string) { fmt.Fprintf(e.stderr, "slurm-mig: warning: %s\n", msg) }

type cli struct {
	Root    string           `default:"/" placeholder:"DIR" help:"Read every /proc, /sys and /dev file under DIR (a fixture tree or a chroot). Printed device paths stay /dev/..."`
	Timeout time.Duration    `default:"60s" help:"Give up, writing nothing, when NVML has not answered in this time (a hung GPU or driver)."`
	Version kong.VersionFlag `help:"Print the version and exit."`

	Gen      genCmd      `cmd:"" help:"Print gres.conf lines for this node's GPUs and MIG devices."`
	Node     nodeCmd     `cmd:"" help:"Print the slurm.conf NodeName line with Gres= counts that match gen."`
	Diff     diffCmd     `cmd:"" help:"Compare what gen and node would write with gres.conf, slurm.conf or slurmctld; exit 0 same, 1 different, 2 trouble."`
	List     listCmd     `cmd:"" help:"Show a table of GPUs and MIG devices with their device files."`
	Snapshot snapshotCmd `cmd:"" help:"Print everything discovery found, with cap minors, as JSON (schema v1) for --from."`

	Docs docsCmd `cmd:"" hidden:"" help:"Print the man page or a shell completion script, made from this command line's model."`
}

// errExit carries kong's exit code (after --help, --version) out of Parse.
type errExit int

func run(args []string, e *env) (code int) {
	e.version = buildVersion()
	stdout, stderr := e.stdout, e.stderr
	if readsNVML(args) {
		e.nvmlLib = startNVML(e.newNVML())
	}
	var c cli
	parser, err := kong.New(&c,
		kong.Name("slurm-mig"),
		kong.Description("Generate Slurm GRES configuration for NVIDIA GPUs and MIG devices."),
		kong.Writers(stdout, stderr),
		kong.Vars{"version": "slurm-mig " + e.version},
		kong.Exit(func(code int) { panic(errExit(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Bind(e),
	)
	if err != nil {
		panic(err) // the CLI definition itself is wrong
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
	ctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "slurm-mig: %v (see slurm-mig --help)\n", err)
		return exitError
	}
	e.host = discover.NewHostFiles(c.Root)
	if err := ctx.Run(&c); err != nil {
		if errors.As(err, new(errDifferent)) {
			return exitDifferent
		}
		fmt.Fprintf(stderr, "slurm-mig: %s\n", oneLine(err))
		return exitError
	}
	return exitOK
}

// oneLine keeps an error to one line, so logs of hooks stay readable.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return version
}

// writeAll writes the whole output at once, after every step succeeded,
// so a failure never leaves half a config on stdout.
func writeAll(w io.Writer, buf *bytes.Buffer) error {
	_, err := w.Write(buf.Bytes())
	if err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}
