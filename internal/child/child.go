// Package child runs the short commands whose answer slurm-mig waits for
// (slurmd -V, scontrol show node), with no shell and bounded in time.
package child

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// TimeoutError is a command that had not finished when its time was up.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string { return fmt.Sprintf("no answer in %v", e.Timeout) }

// Run runs path with args and returns what it printed on stdout and on
// stderr. A command still running after timeout is killed, and with it
// its whole process group: killing the command alone would leave any
// child it started holding the output pipes open, and the wait for their
// end would last as long as that child. The command runs in a process
// group of its own for that. The error is a *TimeoutError at the
// timeout, else what exec gives (an *exec.ExitError for a non-zero exit).
//
// WaitDelay bounds the wait for the pipes once the command has exited or
// been killed, for a child that left the group, or one left behind by a
// command that exited. It is as long as the timeout: on a loaded node the
// last of the output can take more than a second to be read after the
// command exits, and a shorter bound then fails a command that answered
// ("WaitDelay expired before I/O complete") or cuts its answer short. A
// command is thus given up in at most twice its timeout.
func Run(path string, args []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = timeout
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = &TimeoutError{timeout}
	}
	return out.Bytes(), errOut.Bytes(), err
}
