package main

import (
	"fmt"

	"github.com/alecthomas/kong"
)

// helpCmd is --help as a word, as git and go take it (`slurm-mig help gen`);
// it needs the whole model (whole:""), and Command is a pointer so that
// kong checks the enum only when one is given.
type helpCmd struct {
	Command *string `arg:"" optional:"" enum:"${commands}" help:"The command whose help to print (default: slurm-mig's own). One of: ${command_words}."`
}

func (h *helpCmd) Run(ctx *kong.Context) error {
	var args []string
	if h.Command != nil {
		args = []string{*h.Command}
	}
	traced, err := kong.Trace(ctx.Kong, args)
	if err == nil {
		err = traced.Error
	}
	if err != nil {
		return err
	}
	return traced.PrintUsage(false)
}

// versionCmd is --version as a word.
type versionCmd struct{}

func (v *versionCmd) Run(e *env) error {
	_, err := fmt.Fprintln(e.stdout, e.named())
	return err
}

// verboseFlag is -v: alone it prints the version; anywhere else it is most
// likely Slurm's --verbose and is refused, lest a hook's `gen -v -o FILE`
// exit 0 having written nothing.
type verboseFlag bool

func (verboseFlag) BeforeReset(ctx *kong.Context, vars kong.Vars) error {
	if len(ctx.Args) == 1 && ctx.Args[0] == "-v" {
		fmt.Fprintln(ctx.Stdout, vars["version"])
		ctx.Exit(0)
	}
	return fmt.Errorf("-v, --verbose: there is no verbose mode; -V or --version prints the version")
}
