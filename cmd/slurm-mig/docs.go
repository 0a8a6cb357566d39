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
	app := ctx.Model
	switch d.Format {
	case "man":
		return docgen.Man(e.stdout, app, docgen.Page{
			Version: "slurm-mig " + e.version,
			Manual:  "User Commands",
			Extra:   docgen.Sections(manText),
		})
	case "bash":
		return docgen.Bash(e.stdout, app)
	case "zsh":
		return docgen.Zsh(e.stdout, app)
	default:
		return docgen.Fish(e.stdout, app)
	}
}

// manText holds the man page's sections that the model does not: exit
// status, examples, files.
//
//go:embed man.txt
var manText string
