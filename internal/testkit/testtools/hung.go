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
	"time"
)

// Hung is a shell script that never answers, and whose child holds its
// output as a hung slurmd's, scontrol's or munge's would: what runs it must
// kill both at its timeout, as the child of a killed script holds the pipe.
type Hung struct {
	Script string // the script's lines, without a #! line
	pids   string
}

// NewHung makes the script. It skips t where there is no sleep or mv command,
// and kills whatever is left of both processes when t ends.
func NewHung(t testing.TB) *Hung {
	t.Helper()
	// Absolute paths: Command gives the script a PATH of its own.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	mv, err := exec.LookPath("mv")
	if err != nil {
		t.Skip("no mv command")
	}
	h := &Hung{pids: t.TempDir()}
	// Each pid is written beside its file and renamed into place, so that
	// a pid file, once there, is whole even if the script is killed while
	// writing it.
	g, c := filepath.Join(h.pids, "grandchild"), filepath.Join(h.pids, "child")
	h.Script = sleep + " 600 &\necho $! >" + g + ".new && " + mv + " " + g + ".new " + g + "\n" +
		"echo $$ >" + c + ".new && " + mv + " " + c + ".new " + c + "\nwait\n"
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

// Started says whether both processes of the script have run and written
// their pids. If a short timeout on a loaded machine ended the script first,
// the test learns nothing and should run it again with a longer timeout.
func (h *Hung) Started() bool {
	return h.pid("child") > 0 && h.pid("grandchild") > 0
}

// CheckKilled fails t unless both processes ran and neither runs now (gone
// or a zombie). A process sent SIGKILL is not gone at once on a loaded
// machine, so each is watched for up to 10 seconds first.
func (h *Hung) CheckKilled(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, name := range []string{"child", "grandchild"} {
		pid := h.pid(name)
		if pid <= 0 {
			t.Errorf("the hung command wrote no %s pid", name)
			continue
		}
		for running(pid) {
			if time.Now().After(deadline) {
				t.Errorf("the hung command's %s (pid %d) still runs 10s after its timeout", name, pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// running says whether process pid exists and is no zombie.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(stat), ") Z ")
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
