package rollout

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
)

// Command is the site's change command, run with sh -c and, besides its
// own environment, NODE (the node's name), SELECT (the config to apply)
// and MIG_CONFIG: the variables scripts/repartition/repartition.sh reads.
type Command struct {
	Shell     string
	MigConfig string
	Timeout   time.Duration
	// Hold is passed to the command as its fd 3: the journal's lock, held
	// until the command and all it started are gone.
	Hold *os.File
	// Output keeps the output of node's last run (the journal's
	// NODE.out).
	Output func(node string) string
}

// Change runs the command for node and config. A command that has not
// finished in Timeout is killed with its process group; its output goes
// to Output(node), and the error quotes its last line.
func (c Command) Change(node, config string) error {
	out, err := os.OpenFile(c.Output(node), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command("/bin/sh", "-c", c.Shell)
	cmd.Env = append(os.Environ(), "NODE="+node, "SELECT="+config, "MIG_CONFIG="+c.MigConfig)
	cmd.Stdout, cmd.Stderr = out, out
	if c.Hold != nil {
		cmd.ExtraFiles = []*os.File{c.Hold}
	}
	if err = slurmhost.RunBounded(cmd, c.Timeout); err == nil {
		return nil
	}
	last := lastLine(c.Output(node))
	var exit *exec.ExitError
	if errors.As(err, &exit) && last != "" {
		return fmt.Errorf("the change command: %v: %s (%s)", err, last, c.Output(node))
	}
	return fmt.Errorf("the change command: %v (%s)", err, c.Output(node))
}

// lastLine is the last non-blank line of a file of output, at most 300
// bytes of it.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 4096)
	size, _ := f.Seek(0, 2)
	off := max(0, size-int64(len(buf)))
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 300 {
		last = last[:300] + "..."
	}
	return last
}
