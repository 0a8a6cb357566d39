package slurmhost

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// timeoutError is a command that had not finished when its time was up.
type timeoutError struct{ Timeout time.Duration }

func (e *timeoutError) Error() string { return fmt.Sprintf("no answer in %v", e.Timeout) }

// runBounded runs path with args, with no shell, and returns its stdout and
// stderr. At the timeout it kills the command's whole process group (a child
// left holding the pipes would stall the read) and returns a *timeoutError;
// the wait for the pipes after exit is bounded by the timeout too.
func runBounded(path string, args []string, timeout time.Duration) (stdout, stderr []byte, err error) {
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
		err = &timeoutError{timeout}
	}
	return out.Bytes(), errOut.Bytes(), err
}
