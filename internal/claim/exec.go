package claim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
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
		return "", errors.New("exec: no command given (slurm-mig exec [flags] -- CMD [ARGS...])")
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

// Exec replaces this process with the command at path (execve, no child)
// with CUDA_VISIBLE_DEVICES set to the claimed devices. The claim files
// stay open across exec, so the claim lasts exactly as long as the
// command (and any child it hands them to), signals reach the command
// itself, and its exit status is the run's. It returns only on failure.
func Exec(c *Claim, path string, args []string) error {
	for _, f := range c.Files {
		if _, err := unixClearCloexec(f); err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
	}
	env := []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(c.UUIDs, ",")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(path, args, env)
	return &CommandError{Code: 126, Err: fmt.Errorf("exec %s: %w", path, err)}
}
