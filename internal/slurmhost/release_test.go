package slurmhost

import (
	"errors"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

func TestRelease(t *testing.T) {
	v2411 := func() (slurmconf.Version, string, error) {
		return slurmconf.Version{Major: 24, Minor: 11}, "slurmd -V", nil
	}
	for _, tc := range []struct {
		given     slurmconf.Version
		probe     Probe
		want      slurmconf.Version
		from      string
		wantWarns int
	}{
		{slurmconf.Version{Major: 20, Minor: 11}, v2411, slurmconf.Version{Major: 20, Minor: 11}, "", 0},
		{slurmconf.Version{}, v2411, slurmconf.Version{Major: 24, Minor: 11}, "slurmd -V", 0},
		{slurmconf.Version{}, nil, slurmconf.Version{}, "", 0},
		{slurmconf.Version{}, func() (slurmconf.Version, string, error) {
			return slurmconf.Version{Major: 22, Minor: 5}, "scontrol -V", nil
		}, slurmconf.Version{Major: 22, Minor: 5}, "scontrol -V", 0},
		{slurmconf.Version{}, func() (slurmconf.Version, string, error) { return slurmconf.Version{}, "", ErrNoSlurm }, slurmconf.Version{}, "", 0},
		{slurmconf.Version{}, func() (slurmconf.Version, string, error) {
			return slurmconf.Version{}, "slurmd -V", errors.New("slurmd -V: exit status 1")
		}, slurmconf.Version{}, "", 1},
	} {
		v, from, warning := Release(tc.given, tc.probe)
		if v.Major != tc.want.Major || v.Minor != tc.want.Minor || from != tc.from || (warning != nil) != (tc.wantWarns == 1) {
			t.Errorf("Release(%v): %v %q, warning %v; want %v %q", tc.given, v, from, warning, tc.want, tc.from)
		}
	}
}

// A probe that fails is a warning that says so and leaves naming the
// release to the command line's words (advice.SlurmVersion).
func TestReleaseWarnsOfAFailedProbe(t *testing.T) {
	failed := func() (slurmconf.Version, string, error) {
		return slurmconf.Version{}, "slurmd -V", errors.New("slurmd -V: exit status 1")
	}
	_, _, warned := Release(slurmconf.Version{}, failed)
	var a *advice.Error
	if want := "slurmd -V: exit status 1: writing for a Slurm of unknown version"; !errors.As(warned, &a) || a.Fix != advice.SlurmVersion || warned.Error() != want {
		t.Errorf("warning %v; want %q with advice.SlurmVersion", warned, want)
	}
}

// The release the admin names is X.Y or X.Y.Z.
func TestParseRelease(t *testing.T) {
	if v, err := ParseRelease("20.11"); err != nil || v != (slurmconf.Version{Major: 20, Minor: 11, Micro: -1}) {
		t.Errorf(`ParseRelease("20.11"): %v, %v`, v, err)
	}
	for _, bad := range []string{"2x", "24.11.0.1", "24.11.0-1", "slurm 24.11", "24.13", " 24.11"} {
		if _, err := ParseRelease(bad); err == nil || err.Error() != `Slurm release "`+bad+`" is not X.Y or X.Y.Z (24.11, 23.02.7)` {
			t.Errorf("ParseRelease(%q): %v", bad, err)
		}
	}
	if v, err := ParseRelease("23.02.7"); err != nil || v != (slurmconf.Version{Major: 23, Minor: 2, Micro: 7}) {
		t.Errorf(`ParseRelease("23.02.7"): %v, %v`, v, err)
	}
}

// A `slurmd -V` that hangs, and whose child holds its stdout, is given up
// at the timeout with its whole process group: killing slurmd alone left
// the grandchild holding the pipe, and the probe waited for as long as the
// grandchild lived.
func TestInstalledVersionKillsAHungProbe(t *testing.T) {
	hung := testtools.NewHung(t)
	hung.Command(t, "slurmd")

	type answer struct {
		asked string
		err   error
	}
	// On a loaded machine 300ms may end the probe before the hung slurmd
	// started its child; it is then run again with twice the time.
	for timeout := 300 * time.Millisecond; ; timeout *= 2 {
		done := make(chan answer, 1)
		start := time.Now()
		go func() {
			_, asked, err := installedVersion(timeout)
			done <- answer{asked, err}
		}()
		var a answer
		select {
		case a = <-done:
		case <-time.After(10*time.Second + 2*timeout):
			t.Fatalf("the probe of a hung slurmd -V did not return in %v; its timeout is %v", 10*time.Second+2*timeout, timeout)
		}
		if took := time.Since(start); took > 5*time.Second+2*timeout {
			t.Errorf("the probe took %v; its timeout is %v", took, timeout)
		}
		if want := "slurmd -V: no answer in " + timeout.String(); a.asked != "slurmd -V" || a.err == nil || a.err.Error() != want {
			t.Errorf("asked %q, err %v; want %s", a.asked, a.err, want)
		}
		if hung.Started() || timeout > 5*time.Second {
			break
		}
	}
	hung.CheckKilled(t)
}
