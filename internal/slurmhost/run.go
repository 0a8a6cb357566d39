package slurmhost

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// timeoutError is a command that had not finished when its time was up.
type timeoutError struct{ Timeout time.Duration }

func (e *timeoutError) Error() string { return fmt.Sprintf("no answer in %v", e.Timeout) }

// runBounded runs path with args, with no shell, and returns its stdout and
// stderr, bounded as RunBounded runs a command.
func runBounded(path string, args []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	cmd := exec.Command(path, args...)
	// Slurm's commands print times as SLURM_TIME_FORMAT says, and an
	// admin's profile may set it (relative, or a strftime format): the
	// times read here are the standard format's.
	cmd.Env = append(os.Environ(), slurmconf.StandardTimes)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = RunBounded(cmd, timeout)
	return out.Bytes(), errOut.Bytes(), err
}

// RunBounded runs cmd in a process group of its own. At the timeout it
// kills the whole group (a child left holding the pipes would stall the
// read) and returns an error that says so; the wait for the pipes after
// exit is bounded by the timeout too.
func RunBounded(cmd *exec.Cmd, timeout time.Duration) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = timeout
	if err := cmd.Start(); err != nil {
		return err
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		timedOut.Store(true)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	err := cmd.Wait()
	timer.Stop()
	if timedOut.Load() {
		return &timeoutError{timeout}
	}
	return err
}
