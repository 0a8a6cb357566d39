package main

import (
	"errors"
	"fmt"
)

// releaseRefusal is a Slurm release's refusal of what gen or node would
// write (slurmconf.RefusedError), seen through the one method cmd needs.
type releaseRefusal interface {
	error
	Refusal() (release, from string, ciFilesRead bool)
}

// explainRefusal makes a release's refusal the line an admin reads in a
// hook's log: the refusal, that nothing was written, the flag that writes
// what the release reads, and which command said the release unless the
// admin named it with --slurm-version. Other errors pass as they are.
func explainRefusal(err error) error {
	var refused releaseRefusal
	if !errors.As(err, &refused) {
		return err
	}
	release, from, ciFilesRead := refused.Refusal()
	tail := ""
	if ciFilesRead {
		tail = "; --files ci writes what every Slurm reads"
	}
	if from != "" {
		tail += fmt.Sprintf(" (%s said %s; --slurm-version X.Y names the Slurm that reads it)", from, release)
	}
	return fmt.Errorf("%w; nothing was written%s", err, tail)
}
