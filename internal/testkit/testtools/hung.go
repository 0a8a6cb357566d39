package testtools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Hung is a shell script that never answers, and whose child holds its
// output as a hung slurmd, scontrol or munge's would: what runs it must
// give up at its timeout and kill both, since killing the script alone
// leaves the child holding the pipe. Each process writes its pid to a
// temporary directory, so that the test can see both are gone.
type Hung struct {
	Script string // the script's lines, without a #! line
	pids   string
}

// NewHung makes the script. It skips t where there is no sleep command,
// and kills whatever is left of both processes when t ends.
func NewHung(t testing.TB) *Hung {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	h := &Hung{pids: t.TempDir()}
	h.Script = sleep + " 600 &\necho $! >" + filepath.Join(h.pids, "grandchild") + "\n" +
		"echo $$ >" + filepath.Join(h.pids, "child") + "\nwait\n"
	t.Cleanup(func() {
		for _, name := range []string{"child", "grandchild"} {
			if pid := h.pid(name); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return h
}

// Command writes the script as an executable named name in a temporary
// directory and makes that directory the test's PATH, for code that runs
// name by its name.
func (h *Hung) Command(t testing.TB, name string) {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+h.Script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
}

// CheckKilled fails t unless both processes ran and neither runs now
// (reaped or not, a killed process is gone or a zombie).
func (h *Hung) CheckKilled(t testing.TB) {
	t.Helper()
	for _, name := range []string{"child", "grandchild"} {
		pid := h.pid(name)
		if pid <= 0 {
			t.Errorf("the hung command wrote no %s pid", name)
			continue
		}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
			t.Errorf("the hung command's %s (pid %d) is still running", name, pid)
		}
	}
}

// pid reads the pid a process of the script wrote; 0 when none.
func (h *Hung) pid(name string) int {
	b, err := os.ReadFile(filepath.Join(h.pids, name))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
