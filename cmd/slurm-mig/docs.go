package main

import (
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
			Extra:   manSections,
		})
	case "bash":
		return docgen.Bash(e.stdout, app)
	case "zsh":
		return docgen.Zsh(e.stdout, app)
	default:
		return docgen.Fish(e.stdout, app)
	}
}

// manSections are the parts of the man page that the model does not hold.
var manSections = []docgen.Section{
	{Title: "Exit status", Text: `0 success (for diff: no difference); 1 diff found a difference; 2 trouble: a bad command line, unreadable input, an NVML error. On an error nothing is written.`},
	{Title: "Examples", Text: `Print gres.conf lines and the slurm.conf line for this node:

  slurm-mig gen
  slurm-mig node

Write gres.conf atomically, only when it changed, keeping a backup:

  slurm-mig gen -o /etc/slurm/gres.conf --backup

Try it without a GPU, on a captured node:

  slurm-mig --root DIR gen --from DIR/snapshot.json`},
	{Title: "Files", Text: `/proc/driver/nvidia-caps/mig-minors (the cap minors), /dev/nvidia*, /dev/nvidia-caps/nvidia-cap* (the device files written into gres.conf), libnvidia-ml.so.1 (NVML, from the NVIDIA driver).

/run/slurm-mig/claims (free and exec's claims; see --claims).

/usr/share/doc/slurm-mig/examples/ holds a systemd unit, hooks for mig-parted and Ansible, a TaskProlog, and a tmpfiles.d file for the claims directory; installing the package enables none of them.`},
	{Title: "See also", Text: `gres.conf(5), slurm.conf(5), slurmd(8), nvidia-smi(1)`},
}
