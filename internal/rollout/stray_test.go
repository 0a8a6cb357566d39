package rollout

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCommandLeavesNothingRunning: a child the change command leaves behind
// (a site's wrapper that backgrounds a helper) is killed when the command
// exits, so it cannot hold fd 3, the journal's lock, with no limit.
func TestCommandLeavesNothingRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "stray.pid")
	c := Command{Shell: "sleep 30 </dev/null >/dev/null 2>&1 & echo $! >" + pidFile, Timeout: time.Second, Hold: j.Lock(), Output: j.OutputPath}
	err = c.Change("gpu01", "all-balanced")
	if data, rerr := os.ReadFile(pidFile); rerr == nil {
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); perr == nil {
			defer syscall.Kill(pid, syscall.SIGKILL) // the one process this test started and left
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // past --change-timeout
	j.Close()
	j2, err := OpenJournal(dir)
	if err != nil {
		t.Errorf("past --change-timeout, a child the change command left still holds the journal: %v", err)
		return
	}
	j2.Close()
}
