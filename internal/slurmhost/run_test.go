package slurmhost

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

func TestRunOutputs(t *testing.T) {
	stdout, stderr, err := runBounded("/bin/sh", []string{"-c", "echo out; echo err >&2"}, 10*time.Second)
	if err != nil || string(stdout) != "out\n" || string(stderr) != "err\n" {
		t.Errorf("stdout %q, stderr %q, %v", stdout, stderr, err)
	}
	_, _, err = runBounded("/bin/sh", []string{"-c", "exit 3"}, 10*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit 3: %v", err)
	}
}

// A command that prints without end (a scontrol answering with a job's
// megabytes of comment, or a wrapper gone wrong) is read up to a bound:
// the run is an error naming the command and the stream, and no more
// than the bound is kept.
func TestRunOutputBounded(t *testing.T) {
	for _, c := range []struct{ script, stream string }{
		{"head -c 5000000 /dev/zero", "stdout"},
		{"head -c 70000 /dev/zero >&2", "stderr"},
	} {
		stdout, stderr, err := runBounded("/bin/sh", []string{"-c", c.script}, 20*time.Second)
		var tl *fileio.TooLargeError
		if !errors.As(err, &tl) || !strings.Contains(err.Error(), c.script+"'s "+c.stream) {
			t.Errorf("%s: err = %v, want one naming the command's %s as too large", c.script, err, c.stream)
		}
		if len(stdout) > maxStdout || len(stderr) > maxStderr {
			t.Errorf("%s: kept %d and %d bytes, more than the bounds", c.script, len(stdout), len(stderr))
		}
	}
	// At the bound exactly, nothing is refused.
	stdout, _, err := runBounded("/bin/sh", []string{"-c", fmt.Sprintf("head -c %d /dev/zero", maxStdout)}, 20*time.Second)
	if err != nil || len(stdout) != maxStdout {
		t.Errorf("%d bytes: %d read, %v", maxStdout, len(stdout), err)
	}
}

// Slurm's commands run with the standard time format and in UTC whatever
// the caller's environment says (an admin's profile may set relative, the
// host a zone with summer time): the registration checks compare
// scontrol's SlurmdStartTime as ISO times, and local ones repeat an hour
// in autumn.
func TestRunPrintsStandardTimes(t *testing.T) {
	t.Setenv("SLURM_TIME_FORMAT", "relative")
	t.Setenv("TZ", "America/New_York")
	t.Setenv("SLURM_MIG_TEST_KEPT", "kept")
	stdout, _, err := runBounded("/bin/sh", []string{"-c", `echo "$SLURM_TIME_FORMAT $TZ $SLURM_MIG_TEST_KEPT"; date -d @1793511000 +%H:%M`}, 10*time.Second)
	if err != nil || string(stdout) != "standard UTC0 kept\n05:30\n" {
		t.Errorf("the command saw SLURM_TIME_FORMAT, TZ and another variable, then a time, as %q (%v), want standard, UTC0, the rest kept, and 05:30", stdout, err)
	}
}

// A command that hangs, and whose child holds its stdout, is given up at
// the timeout with its whole process group: killing the command alone
// left the child holding the pipe, and Run waited for as long as the
// child lived. On a loaded machine 300ms may end the command before it
// started its child; it is then run again with twice the time.
func TestRunKillsAHungCommandsGroup(t *testing.T) {
	hung := testtools.NewHung(t)
	for timeout := 300 * time.Millisecond; ; timeout *= 2 {
		var err error
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, _, err := runBounded("/bin/sh", []string{"-c", hung.Script}, timeout)
			done <- err
		}()
		select {
		case err = <-done:
		case <-time.After(10*time.Second + 2*timeout):
			t.Fatalf("Run of a hung command did not return in %v; its timeout is %v", 10*time.Second+2*timeout, timeout)
		}
		if took := time.Since(start); took > 5*time.Second+2*timeout {
			t.Errorf("Run took %v; its timeout is %v", took, timeout)
		}
		var te *timeoutError
		if want := "no answer in " + timeout.String(); !errors.As(err, &te) || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
		if hung.Started() || timeout > 5*time.Second {
			break
		}
	}
	hung.CheckKilled(t)
}

// A command that exits at once, while a child it left behind holds its
// output a while longer (2s, as a loaded node can delay the last read),
// is read whole: a WaitDelay of one second failed it with "WaitDelay
// expired before I/O complete".
func TestRunReadsOutputHeldPastExit(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	stdout, _, err := runBounded("/bin/sh", []string{"-c", "echo out; (" + sleep + " 2; echo late) &"}, 20*time.Second)
	if err != nil || string(stdout) != "out\nlate\n" {
		t.Errorf("stdout %q, %v; want out and late, no error", stdout, err)
	}
}
