package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runBounded runs a job script in shell with a deadline, so that a hang
// fails the test instead of stopping it: what it printed, and whether it
// finished in time.
func runBounded(t *testing.T, timeout time.Duration, dir, shell, script string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole job, and stop waiting for its output soon after: a
	// process that keeps the pipe open must not hang the test.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return string(out), ctx.Err()
	}
	return string(out), err
}

// TestClaimCommandSubstitutionExtraFD: a job script that duplicates its
// command substitution's pipe to another descriptor before it calls free
// or exec, as in `x=$( exec 9>&1; slurm-mig free; echo after )`. The
// shell reads that pipe until every process that has it open closes it;
// the claim's holder, which inherited descriptor 9, kept it open until the
// job's end (the shell itself), so the script hung for ever.
func TestClaimCommandSubstitutionExtraFD(t *testing.T) {
	snap, claims := claimNode(t, 1, 7)
	env := []string{"SLURM_MIG_CLAIMS=" + claims}
	for _, tc := range []struct{ name, inner string }{
		{"free", "slurm-mig free --from " + snap},
		{"exec", "slurm-mig exec --from " + snap + " -- sh -c 'echo $CUDA_VISIBLE_DEVICES'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := `x=$( exec 9>&1; ` + tc.inner + `; echo after ); echo "$x"`
			t0 := time.Now()
			out, err := runBounded(t, 15*time.Second, t.TempDir(), "bash", script, env...)
			if err != nil {
				t.Fatalf("bash -c %q: %v (after %s): %q", script, err, time.Since(t0).Round(time.Millisecond), out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "MIG-") || lines[1] != "after" {
				t.Errorf("bash -c %q printed %q, want a MIG UUID, then after", script, out)
			}
		})
	}
}

// TestExecDaemonDoesNotKeepClaim: exec's claim lasts as long as CMD, the
// process slurm-mig became, and no longer: a CMD that starts a daemon and
// exits gives its devices back at once, with the daemon still running,
// though it inherited CMD's descriptors.
func TestExecDaemonDoesNotKeepClaim(t *testing.T) {
	snap, claims := claimNode(t, 1, 7)
	env := []string{"SLURM_MIG_CLAIMS=" + claims}
	dir := t.TempDir()
	out, err := runBounded(t, 15*time.Second, dir, "sh",
		`slurm-mig exec --from `+snap+` --count 7 -- sh -c 'setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! >daemon; exit 5'; echo rc=$?`, env...)
	if err != nil || strings.TrimSpace(out) != "rc=5" {
		t.Fatalf("exec of a daemonising CMD: %v: %q, want CMD's exit status 5", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "daemon"))
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(daemon, syscall.SIGKILL)
	// Right after CMD's exit: every device back (Take waits a moment for
	// a holder whose job has just ended), with the daemon alive.
	out, err = runBounded(t, 15*time.Second, dir, "sh", `slurm-mig free --from `+snap+` --count 7; echo`, env...)
	if err := syscall.Kill(daemon, 0); err != nil {
		t.Fatalf("the daemon has ended (%v): the test shows nothing", err)
	}
	if err != nil || len(strings.Split(strings.TrimSpace(out), ",")) != 7 {
		t.Errorf("free --count 7 after exec's CMD exited, its daemon still running: %v %s: %q; want all 7 devices", err, stderrOf(err), out)
	}
}

// TestExecWaitForAllChildren: a CMD that waits for all its children (until
// wait(2) says there are none) ends; the process that keeps exec's claim
// is not among its children, or CMD would wait for it, and it for CMD.
func TestExecWaitForAllChildren(t *testing.T) {
	snap, claims := claimNode(t, 1, 7)
	env := []string{"SLURM_MIG_CLAIMS=" + claims}
	out, err := runBounded(t, 15*time.Second, t.TempDir(), "sh",
		`slurm-mig exec --from `+snap+` -- perl -e '1 while wait != -1; print "done\n"'`, env...)
	if err != nil || out != "done\n" {
		t.Errorf("exec of a CMD that waits for all its children: %v: %q", err, out)
	}
}
