package main

import (
	"context"
	"os"
	"os/exec"
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
