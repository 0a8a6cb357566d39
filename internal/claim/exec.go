package claim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/claim/holder"
)

// CommandError is a command exec cannot run, with the exit code shells
// give it: 127 not found, 126 not executable.
type CommandError struct {
	Code int
	Err  error
}

func (e *CommandError) Error() string { return e.Err.Error() }

// ExitCode is the run's exit code.
func (e *CommandError) ExitCode() int { return e.Code }

// LookPath finds the command exec is to run, before anything is claimed.
func LookPath(args []string) (string, error) {
	if len(args) == 0 {
		return "", advice.Hinted(errors.New("exec: no command given"), " (slurm-mig exec [flags] -- CMD [ARGS...])")
	}
	path, err := exec.LookPath(args[0])
	switch {
	case errors.Is(err, fs.ErrPermission): // found, not executable
		return "", &CommandError{Code: 126, Err: err}
	case err != nil:
		return "", &CommandError{Code: 127, Err: err}
	}
	return path, nil
}

// Exec replaces this process (execve) with the command at path, with
// CUDA_VISIBLE_DEVICES set to the claimed devices, and returns only on
// failure. A holder keeps the claim files until job, this process, ends.
func Exec(c *Claim, job Job, argv0, path string, args []string) error {
	h, err := holder.StartApart(c.Files, job, argv0)
	if err != nil {
		return fmt.Errorf("handing the claim to its holder: %w", err)
	}
	c.Close() // the holder has them since it started
	if err := h.Commit(); err != nil {
		return err
	}
	env := []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(c.UUIDs, ",")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") {
			env = append(env, kv)
		}
	}
	err = syscall.Exec(path, args, env)
	return &CommandError{Code: 126, Err: fmt.Errorf("exec %s: %w", path, err)}
}
