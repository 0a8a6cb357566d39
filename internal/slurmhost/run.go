package slurmhost

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// timeoutError is a command that had not finished when its time was up.
type timeoutError struct{ Timeout time.Duration }

func (e *timeoutError) Error() string { return fmt.Sprintf("no answer in %v", e.Timeout) }

// Most a Slurm command may print here: what is asked is one node or one
// job (or a version), a few kB even with a long job comment. Output past
// it is dropped, and the run is an error.
const (
	maxStdout = 4 << 20
	maxStderr = 64 << 10
)

// runBounded runs path with args, without a shell, as RunBounded does, and
// returns its stdout and stderr; more than maxStdout or maxStderr is a
// fileio.TooLargeError naming the command.
func runBounded(path string, args []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	cmd := exec.Command(path, args...)
	// Slurm's commands print times as SLURM_TIME_FORMAT says, and an
	// admin's profile may set it (relative, or a strftime format): the
	// times read here are the standard format's, in UTC.
	cmd.Env = append(os.Environ(), slurmconf.StandardTimes, slurmconf.UTCTimes)
	out, errOut := &capped{name: "stdout", limit: maxStdout}, &capped{name: "stderr", limit: maxStderr}
	cmd.Stdout, cmd.Stderr = out, errOut
	err = RunBounded(cmd, timeout)
	for _, c := range []*capped{out, errOut} {
		if c.over && err == nil {
			err = &fileio.TooLargeError{Path: strings.Join(append([]string{path}, args...), " ") + "'s " + c.name,
				Limit: int64(c.limit), What: "an answer about one node or job"}
		}
	}
	return out.buf.Bytes(), errOut.buf.Bytes(), err
}

// capped keeps the first limit bytes written to it and drops the rest,
// saying so in over. It never fails a write: the command runs on to its
// end or its timeout rather than blocking on a pipe nobody reads.
type capped struct {
	name  string // the stream, for the error
	buf   bytes.Buffer
	limit int
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.limit - c.buf.Len()
	if len(p) > room {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}

// RunBounded runs cmd in its own process group and kills the group at the
// timeout, and once cmd exits: nothing it started outlives it, holding its
// pipes or a lock. The wait for the pipes is bounded too; a timeout says so.
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
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if timedOut.Load() {
		return &timeoutError{timeout}
	}
	return err
}
