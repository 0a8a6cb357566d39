package main

import (
	_ "embed"

	"github.com/alecthomas/kong"

	"github.com/slurm-mig/slurm-mig/internal/docgen"
)

// docsCmd prints the man page or a completion script, made from the
// command-line model so that they say what --help says. make dist runs it
// to put them into the packages.
type docsCmd struct {
	Format string `arg:"" enum:"man,bash,zsh,fish" help:"man (roff), bash, zsh or fish."`
}

func (d *docsCmd) Run(e *env, ctx *kong.Context) error {
	page := docgen.Page{Version: e.named(), Manual: "User Commands", Extra: docgen.Sections(manText)}
	return docgen.Write(e.stdout, d.Format, ctx.Model, page)
}

// manText is the man page's exit status, environment, files and examples.
//
//go:embed man.txt
var manText string
