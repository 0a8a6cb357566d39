package child

import (
	"errors"
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

func TestRunOutputs(t *testing.T) {
	stdout, stderr, err := Run("/bin/sh", []string{"-c", "echo out; echo err >&2"}, 10*time.Second)
	if err != nil || string(stdout) != "out\n" || string(stderr) != "err\n" {
		t.Errorf("stdout %q, stderr %q, %v", stdout, stderr, err)
	}
	_, _, err = Run("/bin/sh", []string{"-c", "exit 3"}, 10*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit 3: %v", err)
	}
}

// A command that hangs, and whose child holds its stdout, is given up at
// the timeout with its whole process group: killing the command alone
// left the child holding the pipe, and Run waited for as long as the
// child lived.
func TestRunKillsAHungCommandsGroup(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	pids := t.TempDir()
	script := sleep + " 600 &\necho $! >" + filepath.Join(pids, "grandchild") + "\n" +
		"echo $$ >" + filepath.Join(pids, "child") + "\nwait\n"
	// Whatever happens, no sleep outlives the test.
	t.Cleanup(func() {
		for _, name := range []string{"child", "grandchild"} {
			if pid := readPid(pids, name); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, _, err := Run("/bin/sh", []string{"-c", script}, 300*time.Millisecond)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run of a hung command did not return in 10s; its timeout is 300ms")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v; its timeout is 300ms", took)
	}
	var timeout *TimeoutError
	if !errors.As(err, &timeout) || err.Error() != "no answer in 300ms" {
		t.Errorf("err = %v, want no answer in 300ms", err)
	}
	for _, name := range []string{"child", "grandchild"} {
		pid := readPid(pids, name)
		if pid <= 0 {
			t.Errorf("the command wrote no %s pid", name)
			continue
		}
		// Reaped or not, a killed process is gone or a zombie.
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
			t.Errorf("the hung command's %s (pid %d) is still running", name, pid)
		}
	}
}

// readPid reads a pid the command wrote to dir/name; 0 when none.
func readPid(dir, name string) int {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
