package main

import (
	"errors"
	"fmt"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// releaseRefusal is a Slurm release's refusal of what gen or node would
// write (slurmconf.RefusedError), seen through the one method cmd needs.
type releaseRefusal interface {
	error
	Refusal() (release, from string, ciFilesRead bool)
}

// refusal gives a release's refusal the hint an admin reads in a hook's
// log (refused); other errors pass as they are.
func refusal(err error) error {
	var r releaseRefusal
	if !errors.As(err, &r) {
		return err
	}
	return &refused{err, r}
}

// refused is a release's refusal of what gen, node or diff would write;
// its hint says nothing was written, the flag that writes what the release
// reads, and which command said the release unless --slurm-version did.
type refused struct {
	err error
	r   releaseRefusal
}

func (e *refused) Error() string { return e.err.Error() }
func (e *refused) Unwrap() error { return e.err }

func (e *refused) Hint() string {
	release, from, ciFilesRead := e.r.Refusal()
	hint := "; nothing was written"
	if ciFilesRead {
		hint += "; --files ci writes what every Slurm reads"
	}
	if from != "" {
		hint += fmt.Sprintf(" (%s said %s; --slurm-version X.Y names the Slurm that reads it)", from, release)
	}
	return hint
}

// flagError refuses a command line whose flags go ill together: msg says
// why, and hint (with its leading "; ") which flag to drop or what instead.
func flagError(msg, hint string) error { return advice.Hinted(errors.New(msg), hint) }
