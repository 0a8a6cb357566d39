package slurmconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// TestIncludeDiamond (issue 34): each file Includes the next one twice,
// 15 levels deep: no loop, but 32,768 reads of the last file. The walk
// counts every read against one budget and refuses in one line, for
// gres.conf (check, env, jobmap) and slurm.conf alike.
func TestIncludeDiamond(t *testing.T) {
	dir := t.TempDir()
	const levels = 15
	for i := 0; i < levels; i++ {
		next := fmt.Sprintf("f%d.conf", i+1)
		data := fmt.Sprintf("Include %s\nInclude %s\n", next, next)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.conf", i)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	last := "Name=gpu File=/dev/nvidia0\nNodeName=n1 Gres=gpu:1\n"
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.conf", levels)), []byte(last), 0o644); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(dir, "f0.conf")
	start := time.Now()
	_, err := ReadGresConf(top, "n1")
	t.Logf("gres.conf: %v in %v", err, time.Since(start))
	if err == nil || !strings.Contains(err.Error(), "Includes read more than") || strings.Contains(err.Error(), "\n") {
		t.Errorf("gres.conf: err = %v; want one line refusing the Includes", err)
	}
	_, err = ReadNodeGres(top, "n1")
	if err == nil || !strings.Contains(err.Error(), "Includes read more than") || strings.Contains(err.Error(), "\n") {
		t.Errorf("slurm.conf: err = %v; want one line refusing the Includes", err)
	}
	// The likely cause is a hint, which cmd prints after the message.
	var h advice.Hinter
	if !errors.As(err, &h) || h.Hint() != "; is a file Included over and over?" {
		t.Errorf("slurm.conf: err = %v: want the hint that a file is Included over and over", err)
	}
}

// TestIncludeFIFO (issue 34): a FIFO that nobody writes, named by an
// Include, is given up by the pipe rule, in one line naming it, instead
// of waiting for ever.
func TestIncludeFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(dir, "gres.conf")
	if err := os.WriteFile(top, []byte("Include "+fifo+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadGresConf(top, "n1"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo) || strings.Contains(err.Error(), "\n") {
			t.Errorf("err = %v; want one line naming the FIFO", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("still waiting for the FIFO after 5 minutes")
	}
}
