package main

import "github.com/slurm-mig/slurm-mig/slurmconf"

// slurmFlags name the Slurm that reads the output.
type slurmFlags struct {
	SlurmVersion string `placeholder:"X.Y" help:"The Slurm release that reads the output (default: slurmd -V of this host's Slurm, with --root /). It picks --files auto's style, and output it would refuse or misread is an error, never written."`
}

// probeSlurm starts asking this host's Slurm for its version, to overlap
// reading the node; only commands that render ask (env runs once per
// task and must start nothing). With a --root other than / the files are
// another machine's, whose Slurm is not this one: no probe.
func (e *env) probeSlurm() {
	if e.root == "/" && e.installedSlurm == nil {
		e.installedSlurm = slurmconf.ProbeInstalled()
	}
}
