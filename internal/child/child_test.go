package child

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

func TestRunOutputs(t *testing.T) {
	stdout, stderr, err := Run("/bin/sh", []string{"-c", "echo out; echo err >&2"}, 10*time.Second)
	if err != nil || string(stdout) != "out\n" || string(stderr) != "err\n" {
		t.Errorf("stdout %q, stderr %q, %v", stdout, stderr, err)
	}
	_, _, err = Run("/bin/sh", []string{"-c", "exit 3"}, 10*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit 3: %v", err)
	}
}

// A command that hangs, and whose child holds its stdout, is given up at
// the timeout with its whole process group: killing the command alone
// left the child holding the pipe, and Run waited for as long as the
// child lived.
func TestRunKillsAHungCommandsGroup(t *testing.T) {
	hung := testtools.NewHung(t)
	var err error
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, _, err := Run("/bin/sh", []string{"-c", hung.Script}, 300*time.Millisecond)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run of a hung command did not return in 10s; its timeout is 300ms")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v; its timeout is 300ms", took)
	}
	var timeout *TimeoutError
	if !errors.As(err, &timeout) || err.Error() != "no answer in 300ms" {
		t.Errorf("err = %v, want no answer in 300ms", err)
	}
	hung.CheckKilled(t)
}
