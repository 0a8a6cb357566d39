package main

import (
	"errors"
	"fmt"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// slurmFlags name the Slurm that reads the output.
type slurmFlags struct {
	SlurmVersion string `placeholder:"X.Y" help:"The Slurm release that reads the output (default: slurmd -V of this host's Slurm, with --root /). It picks --files auto's style, and output it would refuse or misread is an error, never written."`
}

// installedSlurm asks this host's slurmd for its version (slurmd -V) in
// the background, while the node is read, and returns the wait for the
// answer. With a --root other than / the files are another machine's,
// whose Slurm is not this one: nil.
func installedSlurm(root string) func() (slurmconf.Version, error) {
	if root != "/" {
		return nil
	}
	type answer struct {
		v   slurmconf.Version
		err error
	}
	done := make(chan answer, 1)
	go func() {
		v, _, err := slurmconf.InstalledVersion()
		done <- answer{v, err}
	}()
	var a *answer
	return func() (slurmconf.Version, error) {
		if a == nil {
			got := <-done
			a = &got
		}
		return a.v, a.err
	}
}

// slurmRelease is the Slurm release the output is for: --slurm-version,
// else the one installed here; the zero Version when neither is known.
// from says which, for messages.
func (f *slurmFlags) slurmRelease(e *env) (v slurmconf.Version, from string, err error) {
	if f.SlurmVersion != "" {
		v, err := slurmconf.ParseVersion(f.SlurmVersion)
		if err != nil {
			return v, "", fmt.Errorf("--slurm-version: %w", err)
		}
		return v, "--slurm-version", nil
	}
	if e.installedSlurm == nil {
		return slurmconf.Version{}, "", nil
	}
	v, err = e.installedSlurm()
	switch {
	case errors.Is(err, slurmconf.ErrNoSlurm):
		return v, "", nil
	case err != nil:
		e.warn(fmt.Sprintf("%v: writing for a Slurm of unknown version (--slurm-version names it)", err))
		return v, "", nil
	}
	return v, "slurmd -V", nil
}

// refusedHint adds to an error saying that the Slurm release would refuse
// the output where that release came from, and what it reads instead.
func refusedHint(err error, from string) error {
	var refused *slurmconf.RefusedError
	if !errors.As(err, &refused) {
		return err
	}
	fix := "; --slurm-version X.Y names the Slurm that reads it"
	if refused.SharedFiles {
		fix = "; --files ci writes File= of each MIG device's CI cap, which every Slurm reads" + fix
	}
	return fmt.Errorf("%w; nothing was written (Slurm %s: %s)%s", err, refused.Version, from, fix)
}
