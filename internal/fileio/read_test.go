package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
