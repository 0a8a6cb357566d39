package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// TestReadStreamRefusesMore (issue 34): standard input past the bound is
// refused, as a file is, never cut to the bound and used.
func TestReadStreamRefusesMore(t *testing.T) {
	_, err := ReadStream(strings.NewReader(strings.Repeat("x", 1001)), "standard input", 1000, "a queue")
	if err == nil || err.Error() != "standard input: larger than 1000 bytes; not a queue" {
		t.Errorf("err = %v", err)
	}
	if data, err := ReadStream(strings.NewReader("x\n"), "standard input", 1000, "a queue"); err != nil || string(data) != "x\n" {
		t.Errorf("= %q, %v", data, err)
	}
}

// TestReadFileFIFO (issue 34): a FIFO nobody writes, where a file was
// expected, is given up by the pipe rule, in one line naming it; and a
// FIFO that is written is read whole.
func TestReadFileFIFO(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo, 1<<20, "a snapshot"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrPipeTimeout) || !strings.Contains(err.Error(), fifo) || strings.Contains(err.Error(), "\n") {
			t.Errorf("err = %v; want the pipe rule's, naming the FIFO", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("still waiting for the FIFO after 5 minutes")
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.WriteString("written\n")
			f.Close()
		}
	}()
	if data, err := ReadFile(fifo, 1<<20, "a snapshot"); err != nil || string(data) != "written\n" {
		t.Errorf("a written FIFO: %q, %v", data, err)
	}
}

// A file that others than its owner may write, or of another user, is not
// trusted; what would make it trusted is the hint, apart from the message.
func TestReadTrustedHints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type trustCase struct {
		uid        int
		mode       os.FileMode
		want, hint string
	}
	cases := []trustCase{{os.Geteuid(), 0o666, "is writable by others than its owner (mode 0666): not trusting it", " (chmod 0644 it)"}}
	if os.Geteuid() == 0 {
		cases = append(cases, trustCase{65534, 0o644, "belongs to uid 65534, neither root nor this user: not trusting it", " (make it root's, mode 0644)"})
	}
	for _, c := range cases {
		if err := os.Chown(path, c.uid, -1); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTrusted(path, 1<<10, "a state", os.Geteuid())
		var h advice.Hinter
		if !errors.As(err, &h) || err.Error() != path+" "+c.want || h.Hint() != c.hint {
			t.Errorf("uid %d, mode %v: %v; want %q with the hint %q", c.uid, c.mode, err, c.want, c.hint)
		}
	}
}
