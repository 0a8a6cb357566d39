package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/claim"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// claimNode writes a snapshot of gpus x migs MIG devices (with cap
// minors, so no --root is needed) and returns it with a fresh claims dir.
func claimNode(t testing.TB, gpus, migs int) (snap, claims string) {
	t.Helper()
	dir := t.TempDir()
	snap = filepath.Join(dir, "node.json")
	f, err := os.Create(snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Write(f, synth.Snapshot(gpus, migs)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return snap, filepath.Join(dir, "claims")
}

// startJob runs script in shell as a job would, in a process group of
// its own, and waits for it to create the file "ready" in dir.
func startJob(t *testing.T, shell, dir, script string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(shell, "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil }, "the job to get ready")
	return cmd
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// freeAll claims every one of n devices from a job of its own, which must
// succeed at once or after the holders of ended jobs let go.
func freeAll(t *testing.T, snap string, n int, env ...string) []string {
	t.Helper()
	cmd := exec.Command("sh", "-c", fmt.Sprintf("slurm-mig free --from %s --count %d; echo", snap, n))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("free --count %d: %v: %s", n, err, stderrOf(err))
	}
	return strings.Split(strings.TrimSpace(string(out)), ",")
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestFreeBurst: 32 free calls at once from one job shell, on a node of
// 28 MIG devices, as real processes. Every caller gets its own device or
// one line saying all are busy, exit 1; killing the job's shell with
// SIGKILL gives every device back.
func TestFreeBurst(t *testing.T) {
	for _, shell := range []string{"bash", "dash"} {
		t.Run(shell, func(t *testing.T) {
			if _, err := exec.LookPath(shell); err != nil {
				t.Fatalf("%s is needed for this test: %v", shell, err)
			}
			snap, claims := claimNode(t, 4, 7)
			env := []string{"SLURM_MIG_CLAIMS=" + claims, "CUDA_VISIBLE_DEVICES=0,1,2,3"}
			dir := t.TempDir()
			// Each call in a background subshell that records its status:
			// free's parent is then that subshell, not the job's shell.
			job := startJob(t, shell, dir, fmt.Sprintf(`for i in $(seq 32); do
	{ slurm-mig free --from %s >out.$i 2>err.$i; echo $? >rc.$i; } &
done
wait; touch ready; sleep 600`, snap), env...)

			got := map[string]int{}
			refused := 0
			busy := regexp.MustCompile(`^slurm-mig: no idle MIG device: all 28 MIG devices this job may use are busy: 28 claimed \([a-z0-9 ]+: 28 by job pid ` + fmt.Sprint(job.Process.Pid) + `\)\n$`)
			for i := 1; i <= 32; i++ {
				read := func(name string) string {
					data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s.%d", name, i)))
					if err != nil {
						t.Fatal(err)
					}
					return string(data)
				}
				switch rc, out, errOut := strings.TrimSpace(read("rc")), read("out"), read("err"); rc {
				case "0":
					got[strings.TrimSpace(out)]++
				case "1":
					refused++
					if out != "" || !busy.MatchString(errOut) {
						t.Errorf("call %d refused with stdout %q, stderr %q", i, out, errOut)
					}
				default:
					t.Errorf("call %d: exit %s: %s", i, rc, errOut)
				}
			}
			if len(got) != 28 || refused != 4 {
				t.Errorf("%d distinct devices and %d refused, want 28 and 4", len(got), refused)
			}
			for uuid, n := range got {
				if n != 1 || !strings.HasPrefix(uuid, "MIG-") {
					t.Errorf("%s handed out %d times", uuid, n)
				}
			}

			// SIGKILL the job's shell: every device comes back.
			if err := job.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			job.Wait()
			back := freeAll(t, snap, 28, env...)
			if len(back) != 28 {
				t.Errorf("after the job ended, free --count 28 gave %d devices", len(back))
			}
		})
	}
}

// TestExecHoldsClaim: exec's command holds the claim while it runs (even
// when slurm-mig is long gone: it became the command), gives it back when
// it exits or is killed, and passes its exit status on.
func TestExecHoldsClaim(t *testing.T) {
	snap, claims := claimNode(t, 1, 7)
	env := []string{"SLURM_MIG_CLAIMS=" + claims}
	dir := t.TempDir()
	cmd := startJob(t, "sh", dir, `exec slurm-mig exec --from `+snap+` --count 7 -- sh -c 'echo $CUDA_VISIBLE_DEVICES >devices; touch ready; while [ ! -e stop ]; do sleep 0.01; done; exit 3'`, env...)
	devices, err := os.ReadFile(filepath.Join(dir, "devices"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(strings.TrimSpace(string(devices)), ",")); n != 7 {
		t.Fatalf("CMD got CUDA_VISIBLE_DEVICES=%s, want 7 devices", devices)
	}

	probe := exec.Command("sh", "-c", "x=$(slurm-mig free --from "+snap+")") // exits as free does
	probe.Env = append(os.Environ(), env...)
	if out, err := probe.Output(); err == nil || probe.ProcessState.ExitCode() != 1 { // none idle
		t.Fatalf("free while exec's command runs: %s, %v %s; want exit 1", out, err, stderrOf(err))
	}

	os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("exec's exit: %v, want CMD's 3", err)
	}
	freeAll(t, snap, 7, env...) // all back

	// SIGKILL of the command ends the claim too.
	os.Remove(filepath.Join(dir, "ready"))
	os.Remove(filepath.Join(dir, "stop"))
	cmd = startJob(t, "sh", dir, `exec slurm-mig exec --from `+snap+` --count 7 -- sh -c 'touch ready; sleep 600'`, env...)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	freeAll(t, snap, 7, env...)
}

// The --claims default is the claim package's.
func TestClaimsDefault(t *testing.T) {
	field, _ := reflect.TypeOf(claimFlags{}).FieldByName("Claims")
	if got := field.Tag.Get("default"); got != claim.DefaultDir {
		t.Errorf("--claims defaults to %q, claim.DefaultDir is %q", got, claim.DefaultDir)
	}
}

// BenchmarkFreeBurst times free as whole processes on a node of 28 MIG
// devices (--from a snapshot): one call alone against 32 released at once
// (28 get a device, 4 are refused), each timed from its release to its
// exit. Metrics: medians of each, and the slowest call of the bursts.
// scripts/bench-free.sh does the same from a shell, for hosts without Go.
func BenchmarkFreeBurst(b *testing.B) {
	dir := b.TempDir()
	bin := buildBinary(b, dir)
	snap, _ := claimNode(b, 4, 7)
	round := 0
	// calls runs n free calls released together, for a job of their own
	// that ends after them (so their holders do too).
	calls := func(n int) []time.Duration {
		job := exec.Command("sleep", "600")
		if err := job.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { job.Process.Kill(); job.Wait() }()
		round++
		claims := filepath.Join(dir, fmt.Sprintf("claims%d", round))
		start := make(chan struct{})
		took := make([]time.Duration, n)
		done := make(chan error, n)
		for i := range took {
			go func() {
				cmd := exec.Command(bin, "free", "--from", snap, "--claims", claims, "--pid", fmt.Sprint(job.Process.Pid))
				<-start
				t := time.Now()
				err := cmd.Run()
				took[i] = time.Since(t)
				if err != nil && cmd.ProcessState.ExitCode() != 1 { // 1: refused, none idle
					done <- err
					return
				}
				done <- nil
			}()
		}
		close(start)
		for range took {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
		return took
	}
	var single, burst []time.Duration
	for i := 0; i < b.N; i++ {
		single = append(single, calls(1)...)
		burst = append(burst, calls(32)...)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	sort.Slice(single, func(i, j int) bool { return single[i] < single[j] })
	sort.Slice(burst, func(i, j int) bool { return burst[i] < burst[j] })
	b.ReportMetric(ms(single[len(single)/2]), "ms/single")
	b.ReportMetric(ms(burst[len(burst)/2]), "ms/burst-median")
	b.ReportMetric(ms(burst[len(burst)-1]), "ms/burst-slowest")
	b.ReportMetric(0, "ns/op")
}
