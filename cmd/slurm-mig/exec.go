package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/slurm-mig/slurm-mig/claim"
)

type execCmd struct {
	claimFlags
	Command []string `arg:"" passthrough:"" placeholder:"CMD" help:"The command to run, with its arguments (after --)."`
}

// Run claims, then becomes CMD (execve, no child): the claim files stay
// open across exec, so the claim lasts exactly as long as CMD, signals
// reach CMD directly, and its exit status is the run's.
func (c *execCmd) Run(e *env) error {
	if len(c.Command) > 0 && c.Command[0] == "--" { // kong passes the -- on
		c.Command = c.Command[1:]
	}
	if len(c.Command) == 0 {
		return fmt.Errorf("exec: no command given (slurm-mig exec [flags] -- CMD [ARGS...])")
	}
	path, err := exec.LookPath(c.Command[0])
	if err != nil {
		return &codedError{code: exitNotFound, err: err}
	}
	job, err := claim.Self()
	if err != nil {
		return err
	}
	cl, err := c.claim(e, job, "exec")
	if err != nil {
		return err
	}
	e.nvml.Release() // CMD must not inherit NVML's descriptors
	if err := claim.Inherit(cl); err != nil {
		return err
	}
	env := []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(cl.UUIDs, ",")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") {
			env = append(env, kv)
		}
	}
	err = syscall.Exec(path, c.Command, env)
	return &codedError{code: exitNotExecutable, err: fmt.Errorf("exec %s: %w", path, err)}
}

// Exit codes of free and exec besides 0 and 2: no idle device (try
// later), and, as shells have them, CMD not executable or not found.
const (
	exitBusy          = 1
	exitNotExecutable = 126
	exitNotFound      = 127
)

// codedError is an error with its own exit code.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }

// exitCode is the exit code for a run that failed with err.
func exitCode(err error) int {
	var coded *codedError
	switch {
	case errors.As(err, &coded):
		return coded.code
	case errors.As(err, new(*claim.NoneIdleError)):
		return exitBusy
	}
	return exitError
}
