package rollout

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
)

// maxOutput bounds the file of a node's change command output.
const maxOutput = 1 << 20

// Command is the site's change command, run with sh -c and, besides its
// own environment, NODE (the node's name), SELECT (the config to apply)
// and MIG_CONFIG: the variables scripts/repartition/repartition.sh reads.
type Command struct {
	Shell     string
	MigConfig string
	Timeout   time.Duration
	// Hold is passed to the command as its fd 3: the journal's lock, held
	// until the command ends; what it leaves running is killed then.
	Hold *os.File
	// Output keeps the output of node's runs (the journal's NODE.out).
	Output func(node string) string
}

// Change runs the command for node and config. A command that has not
// finished in Timeout is killed with its process group; its output goes
// to Output(node), and the error quotes its last line.
func (c Command) Change(node, config string) error {
	// Each run is appended, under a line that names it, so that a
	// rollback's output does not hide the failure's; a file past
	// maxOutput starts again.
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND | unix.O_NOFOLLOW
	if fi, err := os.Stat(c.Output(node)); err == nil && fi.Size() > maxOutput {
		flags |= os.O_TRUNC
	}
	out, err := os.OpenFile(c.Output(node), flags, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	fmt.Fprintf(out, "=== %s NODE=%s SELECT=%s\n", time.Now().Format("2006-01-02T15:04:05"), node, config)
	// A shell that waits for the command's own: a lone command is exec'd by
	// some shells (bash), and ssh then closes fd 3, the lock, as it starts.
	cmd := exec.Command("/bin/sh", "-c", `/bin/sh -c "$1"; exit $?`, "sh", c.Shell)
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
