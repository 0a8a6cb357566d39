package slurmhost

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// ErrNoSlurm says that no Slurm command to ask for its version is
// installed (on PATH, or, with PATH empty, in the usual places).
var ErrNoSlurm = errors.New("no slurmd or scontrol on PATH")

// InstalledVersion asks the installed Slurm its version, with slurmd -V or,
// without slurmd, scontrol -V, and returns the command; one that has not
// answered in 10 seconds is killed and the version is unknown.
func InstalledVersion() (slurmconf.Version, string, error) {
	return installedVersion(10 * time.Second)
}

// installedVersion is InstalledVersion with the time it waits for an
// answer, which tests shorten.
func installedVersion(timeout time.Duration) (slurmconf.Version, string, error) {
	for _, name := range []string{"slurmd", "scontrol"} {
		path, err := lookSlurm(name)
		if err != nil {
			continue
		}
		asked := name + " -V"
		// A slurmd -V that hangs, or leaves a child holding its output,
		// is given up at the timeout with its whole process group.
		out, _, err := runBounded(path, []string{"-V"}, timeout)
		if err != nil {
			return slurmconf.Version{}, asked, fmt.Errorf("%s: %v", asked, err)
		}
		v, err := slurmconf.ParseVersion(string(out))
		if err != nil {
			return slurmconf.Version{}, asked, fmt.Errorf("%s: %v", asked, err)
		}
		return v, asked, nil
	}
	return slurmconf.Version{}, "", ErrNoSlurm
}

// Probe waits for the answer of a Slurm asked for its version: the
// version and the command that answered (InstalledVersion).
type Probe func() (slurmconf.Version, string, error)

// ProbeInstalled asks the Slurm installed here for its version
// (InstalledVersion) in the background, so that the answer comes while
// the node is read, and returns the wait for it.
func ProbeInstalled() Probe {
	type answer struct {
		v     slurmconf.Version
		asked string
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		v, asked, err := InstalledVersion()
		done <- answer{v, asked, err}
	}()
	var a answer
	wait := sync.OnceFunc(func() { a = <-done })
	return func() (slurmconf.Version, string, error) {
		wait()
		return a.v, a.asked, a.err
	}
}

// ParseRelease reads a release the admin names, X.Y or X.Y.Z, checked whole
// (24.11.0.1 is refused), unlike slurmd -V's looser answer.
func ParseRelease(s string) (slurmconf.Version, error) {
	v, err := slurmconf.ParseVersion(s)
	if err != nil || !releaseWord.MatchString(s) {
		return slurmconf.Version{}, fmt.Errorf("Slurm release %q is not X.Y or X.Y.Z (24.11, 23.02.7)", s)
	}
	return v, nil
}

var releaseWord = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)

// Release is the release that reads the output: given if known, else what
// probe finds (nil: none), with the command that answered; a probe that
// fails is a warning (advice.SlurmVersion) and the zero Version.
func Release(given slurmconf.Version, probe Probe) (v slurmconf.Version, from string, warning error) {
	if given.Known() {
		return given, "", nil
	}
	if probe == nil {
		return slurmconf.Version{}, "", nil
	}
	v, asked, err := probe()
	switch {
	case errors.Is(err, ErrNoSlurm):
		return slurmconf.Version{}, "", nil
	case err != nil:
		return slurmconf.Version{}, "", advice.Wrap(fmt.Errorf("%v: writing for a Slurm of unknown version", err), advice.SlurmVersion)
	}
	return v, asked, nil
}
