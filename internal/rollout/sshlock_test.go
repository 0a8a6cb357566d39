package rollout

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestJournalLockHeldWhileSshRuns: OpenSSH closes every descriptor past 2 as
// it starts, and a bash /bin/sh (RHEL) execs a lone command; the lock is still
// held while the documented ssh change command runs after its run is killed.
// `exec bash -c` stands in for such a /bin/sh, a ProxyCommand that sleeps for
// a slow node.
func TestJournalLockHeldWhileSshRuns(t *testing.T) {
	for _, p := range []string{"ssh", "bash"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no %s: %v", p, err)
		}
	}
	t.Setenv("HOME", t.TempDir()) // ssh writes nothing of the machine's ~/.ssh
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	documented := `ssh -F /dev/null -o BatchMode=yes -o UserKnownHostsFile=/dev/null -o ProxyCommand="sleep 4" root@"$NODE" NODE="$NODE" SELECT="$SELECT" true`
	c := Command{Shell: "exec bash -c '" + documented + "'", Timeout: 30 * time.Second, Hold: j.Lock(), Output: j.OutputPath}
	done := make(chan error, 1)
	go func() { done <- c.Change("gpu01", "all-balanced") }()
	time.Sleep(1500 * time.Millisecond) // ssh is up, waiting on its proxy
	j.Close()                           // the run is killed; its command goes on
	j2, err := OpenJournal(dir)
	if err == nil {
		j2.Close()
		t.Errorf("a second run took the journal while the change command (ssh) still ran")
	}
	select {
	case err := <-done:
		t.Logf("the change command ended while the second run held the journal: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the change command did not end")
	}
}
