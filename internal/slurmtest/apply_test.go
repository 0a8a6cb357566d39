package slurmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/rollout"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestRebalanceApply runs the controller, `rebalance --apply`, as a
// timer would, on the two-node cluster of the repartition tests: gpu01
// idle with seven 1g.10gb, gpu02 all-balanced and running a job on its
// 3g.40gb and 2g.20gb, and jobs for a 3g.40gb and a 2g.20gb pending. The
// change command is scripts/repartition/repartition.sh, its mig-parted
// an apply that copies the config's snapshot, so a rollback is real too.
func TestRebalanceApply(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	// The controller changes gpu01 to all-balanced; both pending jobs
	// then run there with their MIG UUIDs, gpu02's job runs on
	// untouched, and a second run has nothing to do.
	t.Run("done", func(t *testing.T) {
		t.Parallel()
		a := startApply(t, false)
		stop := a.watch("slurm-mig repartition to ")
		code, out := a.run(t)
		if bad := stop(); len(bad) > 0 {
			t.Errorf("gpu01 went INVAL or drained for another reason:\n%s", strings.Join(bad, "\n"))
		}
		if code != 0 || !strings.Contains(out, "done 1,") {
			t.Fatalf("rebalance --apply: exit %d, want 0 and gpu01 done\n%s\n%s", code, out, a.daemonLogs())
		}
		a.checkEvents(t, out, "drain: drained", "wait: empty", "apply: applying", "apply: applied", "resume: resumed")
		a.checkChanged(t)
		if code, out := a.run(t); code != 0 || !strings.Contains(out, "done 0, rolled back 0, abandoned 0, failed 0, waiting 0") {
			t.Errorf("a second run: exit %d\n%s", code, out)
		}
	})
	// The change command is the playbook, repartition.yml, run by
	// Debian's ansible-playbook on a configless cluster: the node and
	// config come from the controller's NODE and SELECT.
	t.Run("ansible", func(t *testing.T) {
		t.Parallel()
		Require(t, "munged")
		testtools.Require(t, "ansible-core", "ansible-playbook")
		a := startApply(t, true)
		a.ansible = true
		code, out := a.run(t)
		if code != 0 || !strings.Contains(out, "done 1,") {
			t.Fatalf("rebalance --apply with the playbook: exit %d, want 0 and gpu01 done\n%s\n%s", code, out, a.daemonLogs())
		}
		a.checkChanged(t)
	})
	// Killed while mig-parted runs, the node drained and its slurmd
	// stopped. The change command, in a process group of its own, runs
	// on and holds the journal's lock, so a run now refuses to start;
	// once it too is killed, the next run finds the change in the
	// journal and finishes it.
	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		a := startApply(t, false)
		marker := filepath.Join(a.dir, "apply-pid")
		a.apply = fmt.Sprintf(`if [ ! -e %[1]s ]; then echo $$ >%[1]s; sleep 120; fi; %[2]s`, marker, a.apply)
		cmd := a.command(t)
		var first strings.Builder
		cmd.Stdout, cmd.Stderr = &first, &first
		must(t, cmd.Start())
		var pid int
		a.waitFor("the change command to reach mig-parted", func() (bool, string) {
			pid = readPid(marker)
			return pid > 0, first.String()
		})
		must(t, cmd.Process.Kill())
		cmd.Wait()
		if code, out := a.run(t); code != 2 || !strings.Contains(out, "holds its lock") {
			t.Errorf("a run while the change command runs: exit %d, want 2, the journal locked\n%s", code, out)
		}
		pgid, err := syscall.Getpgid(pid)
		must(t, err)
		must(t, syscall.Kill(-pgid, syscall.SIGKILL))
		a.waitFor("the change command to be gone", func() (bool, string) {
			return syscall.Kill(pid, 0) != nil, ""
		})
		entry := a.entry(t)
		st := a.waitNodeNamed("gpu01", func(n nodeState) bool { return true }, "")
		t.Logf("killed: journal step %s (attempt %d), gpu01 %s Reason=%s\n%s", entry.Step, entry.Attempts, st.state, st.reason, first.String())
		if entry.Step != rollout.StepApply || !strings.Contains(st.state, "DRAIN") {
			t.Fatalf("after the kill: journal step %s, gpu01 %s; want apply, drained", entry.Step, st.state)
		}
		var code int
		var out string
		a.waitFor("the journal's lock to be free", func() (bool, string) {
			code, out = a.run(t)
			return !strings.Contains(out, "holds its lock"), out
		})
		if code != 0 || !strings.Contains(out, "done 1,") {
			t.Fatalf("the run after the kill: exit %d, want gpu01 done\n%s\n%s", code, out, a.daemonLogs())
		}
		a.checkChanged(t)
	})
	// mig-parted fails to apply all-balanced: the controller rolls back
	// to the node's config, resumes it and exits 1; the jobs still wait.
	t.Run("mig-parted-fails", func(t *testing.T) {
		t.Parallel()
		a := startApply(t, false)
		a.apply = `[ "$SELECT" != all-balanced ] || { echo "nvidia-mig-parted: failed to apply $SELECT" >&2; exit 1; }; ` + a.apply
		code, out := a.run(t)
		if code != 1 || !strings.Contains(out, "rolled back 1,") || !strings.Contains(out, "failed to apply all-balanced") {
			t.Fatalf("rebalance --apply: exit %d, want 1 and gpu01 rolled back, saying why\n%s\n%s", code, out, a.daemonLogs())
		}
		st := a.waitNodeNamed("gpu01", registered, "to register")
		if st.state != "IDLE" || !a.sameGres(t, st, "a.json") || a.journalFiles(t) != 0 {
			t.Errorf("gpu01 %s Gres=%s Reason=%s, %d journal entries; want IDLE with its seven 1g.10gb, none", st.state, st.gres, st.reason, a.journalFiles(t))
		}
		a.checkOthers(t)
	})
	// Something holds the GPU (slurm-mig holders says DCGM, or a job's
	// stuck process): the script stops before mig-parted, and so does the
	// rollback, though the GPUs kept their counts: gpu01 stays drained
	// for the failure, never back in service with its GPU held.
	t.Run("gpu-held", func(t *testing.T) {
		t.Parallel()
		a := startApply(t, false)
		a.holders = `echo "pid 4242 (nv-hostengine: DCGM's host engine (nvidia-dcgm.service)) has /dev/nvidia0 open"; exit 1`
		code, out := a.run(t)
		if code != 1 || !strings.Contains(out, "failed 1,") || !strings.Contains(out, "nv-hostengine") {
			t.Fatalf("rebalance --apply: exit %d, want 1, gpu01 failed, saying why\n%s\n%s", code, out, a.daemonLogs())
		}
		data, err := os.ReadFile(filepath.Join(a.journal, "gpu01.out"))
		if err != nil || !strings.Contains(string(data), "the GPUs are held, so mig-parted would fail") || !strings.Contains(string(data), "nv-hostengine") {
			t.Errorf("the change command's output (%v) does not name the holder:\n%s", err, data)
		}
		st := a.waitNodeNamed("gpu01", func(n nodeState) bool { return true }, "")
		if !strings.Contains(st.state, "DRAIN") || !strings.HasPrefix(st.reason, rollout.Reason("all-balanced")+" failed") {
			t.Errorf("gpu01 %s Reason=%s, want drained for the failure", st.state, st.reason)
		}
		if e := a.entry(t); e.Step != rollout.StepFailed || !strings.Contains(e.Why, "back to all-1g.10gb") {
			t.Errorf("journal: %+v", e)
		}
		a.checkOthers(t)
	})
	// slurmd will not start: the change and its rollback fail, and gpu01
	// stays drained with a reason that says so, kept in the journal; the
	// next run starts nothing.
	t.Run("slurmd-will-not-start", func(t *testing.T) {
		t.Parallel()
		a := startApply(t, false)
		a.slurmdStart = "echo slurmd: fatal: cannot start >&2; exit 1"
		code, out := a.run(t)
		if code != 1 || !strings.Contains(out, "failed 1,") {
			t.Fatalf("rebalance --apply: exit %d, want 1 and gpu01 failed\n%s\n%s", code, out, a.daemonLogs())
		}
		st := a.waitNodeNamed("gpu01", func(n nodeState) bool { return true }, "")
		if !strings.Contains(st.state, "DRAIN") || !strings.HasPrefix(st.reason, rollout.Reason("all-balanced")+" failed") {
			t.Errorf("gpu01 %s Reason=%s, want drained for the failure", st.state, st.reason)
		}
		if e := a.entry(t); e.Step != rollout.StepFailed || !strings.Contains(e.Why, "back to all-1g.10gb") {
			t.Errorf("journal: %+v", e)
		}
		if code, out := a.run(t); code != 1 || !strings.Contains(out, "gpu01 failed: ") {
			t.Errorf("the next run: exit %d\n%s", code, out)
		}
		a.checkOthers(t)
	})
	// A job lands on gpu01 between squeue's answer and the drain: the
	// first run drains gpu01 and leaves it emptying; once the job ends,
	// the next run (--json) changes it.
	t.Run("empties", func(t *testing.T) {
		t.Parallel()
		a := startApply(t, false)
		release := filepath.Join(a.dir, "release-gpu01")
		job := a.sbatchWaiting(t, "gpu01", "gpu:h100_1g.10gb:1", release)
		code, out := a.run(t)
		if code != 0 || !strings.Contains(out, "waiting 1,") || !strings.Contains(out, "gpu01 wait: waiting: jobs still run there") {
			t.Fatalf("rebalance --apply: exit %d, want gpu01 waiting\n%s", code, out)
		}
		must(t, os.WriteFile(release, nil, 0o644))
		a.waitJob(job, "COMPLETED")
		a.json = true
		code, out = a.run(t)
		var steps []string
		var outcome struct {
			Outcome *rollout.Outcome `json:"outcome"`
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev rollout.Event
			if err := json.Unmarshal([]byte(line), &outcome); err == nil && outcome.Outcome != nil {
				break
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Node != "gpu01" || ev.Time.IsZero() {
				t.Fatalf("a line of --json: %q (%v)", line, err)
			}
			steps = append(steps, string(ev.Step)+": "+ev.What)
		}
		want := []string{"wait: empty", "apply: applying", "apply: applied", "resume: resumed"}
		if code != 0 || outcome.Outcome == nil || !slices.Equal(outcome.Outcome.Done, []string{"gpu01"}) || !slices.Equal(steps, want) {
			t.Fatalf("the run after the job ended: exit %d, steps %q (want %q), outcome %+v\n%s", code, steps, want, outcome.Outcome, out)
		}
		a.checkChanged(t)
	})
	// A job lands on gpu01 between squeue's answer and the drain, and
	// outlives --drain-timeout: the change is abandoned and gpu01
	// resumes with the job still running and its layout unchanged.
	t.Run("never-empties", func(t *testing.T) {
		t.Parallel()
		a := startApply(t, false)
		release := filepath.Join(a.dir, "release-gpu01")
		job := a.sbatchWaiting(t, "gpu01", "gpu:h100_1g.10gb:1", release)
		// The job ends before the daemons stop: a slurmstepd left with its
		// script looping would outlive the test and its directory.
		t.Cleanup(func() { a.endJob(release, job) })
		a.drainTimeout = "3s"
		code, out := a.run(t)
		if code != 0 || !strings.Contains(out, "waiting 1,") {
			t.Fatalf("rebalance --apply: exit %d, want gpu01 waiting\n%s", code, out)
		}
		if st := a.waitNodeNamed("gpu01", func(n nodeState) bool { return true }, ""); !strings.Contains(st.state, "DRAIN") || !strings.HasPrefix(st.reason, rollout.Reason("all-balanced")) {
			t.Errorf("gpu01 %s Reason=%s, want draining for the change", st.state, st.reason)
		}
		time.Sleep(4 * time.Second)
		code, out = a.run(t)
		if code != 0 || !strings.Contains(out, "abandoned 1,") {
			t.Fatalf("after the drain timeout: exit %d, want gpu01 abandoned\n%s", code, out)
		}
		st := a.waitNodeNamed("gpu01", func(n nodeState) bool { return true }, "")
		if strings.Contains(st.state, "DRAIN") || !a.sameGres(t, st, "a.json") || a.journalFiles(t) != 0 || field(a.jobDetail(t, job), "JobState") != "RUNNING" {
			t.Errorf("gpu01 %s Gres=%s, %d journal entries, job %s; want resumed, unchanged, none, running", st.state, st.gres, a.journalFiles(t), field(a.jobDetail(t, job), "JobState"))
		}
	})
}

// applyCluster is the cluster of TestRebalanceApply, with the inputs of
// one proposal and the commands the change command runs.
type applyCluster struct {
	*repartition
	queue, nodes string
	journal      string
	apply        string // the change command's APPLY (mig-parted)
	slurmdStart  string
	holders      string // the change command's HOLDERS ("": slurm-mig holders, of this machine)
	ansible      bool   // the change command is repartition.yml, by ansible-playbook
	json         bool   // --json
	drainTimeout string
	job02        string
	rel02        string
	before02     string
	pending      map[string]string // job id -> the profile it asks for
}

// startApply starts the cluster, the job on gpu02 and the pending jobs,
// and keeps squeue's and scontrol's answers for the proposal.
func startApply(t *testing.T, configless bool) *applyCluster {
	r := startRepartition(t, configless, "gpu02")
	a := &applyCluster{repartition: r, journal: filepath.Join(r.dir, "journal"), drainTimeout: "60s", pending: map[string]string{}}
	// mig-parted: the snapshot of the config it applies becomes gpu01's.
	copyFile(t, filepath.Join(r.dir, "a.json"), filepath.Join(r.dir, "all-1g.10gb.json"))
	copyFile(t, r.b, filepath.Join(r.dir, "all-balanced.json"))
	a.apply = fmt.Sprintf(`cp %s/"$SELECT".json %s`, r.dir, r.snapshotPath("gpu01"))
	a.slurmdStart = r.slurmdCommand("gpu01")
	a.rel02 = filepath.Join(r.dir, "release-gpu02")
	a.job02 = r.sbatchWaiting(t, "gpu02", "gpu:h100_3g.40gb:1,gpu:h100_2g.20gb:1", a.rel02)
	a.before02 = r.jobDetail(t, a.job02)
	t.Cleanup(func() { a.endJob(a.rel02, a.job02) })
	for _, profile := range []string{"3g.40gb", "2g.20gb"} {
		out, err := r.command(context.Background(), "sbatch", "--parsable", "-N1", "-n1", "--gres=gpu:h100_"+profile+":1",
			"-o", filepath.Join(r.dir, "pending-%j.out"), "--wrap", "printenv CUDA_VISIBLE_DEVICES").CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch --gres=gpu:h100_%s:1: %v\n%s", profile, err, out)
		}
		a.pending[strings.TrimSpace(string(out))] = profile
	}
	for id := range a.pending {
		r.waitFor("job "+id+" to be held back by the scheduler", func() (bool, string) {
			out, _ := r.command(context.Background(), "scontrol", "show", "job", "-o", id).CombinedOutput()
			line := strings.TrimSpace(string(out))
			return field(line, "JobState") == "PENDING" && field(line, "Reason") != "None", line
		})
	}
	a.queue, a.nodes = filepath.Join(r.dir, "queue.txt"), filepath.Join(r.dir, "nodes.txt")
	for file, args := range map[string][]string{a.queue: append([]string{"squeue"}, queueArgs...), a.nodes: {"scontrol", "--details", "--oneliner", "show", "node"}} {
		out, err := r.command(context.Background(), args[0], args[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		must(t, os.WriteFile(file, out, 0o644))
	}
	// Between slurmctld's restart and the reconfigure gpu02 may
	// register with the old slurm.conf (docs/repartition.md).
	r.allowed = append(r.allowed, logLine{"slurmctld", regexp.MustCompile(`error: Node gpu02 appears to have a different slurm.conf than the slurmctld`)})
	return a
}

// command is one timer run of the controller, its change command the
// repartition script with this cluster's variables.
func (a *applyCluster) command(t *testing.T) *exec.Cmd {
	t.Helper()
	script := scriptDriver(a.repartition, t)
	var env []string
	for _, kv := range script.Env {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "NODE", "SELECT", "MIG_CONFIG", "APPLY", "SLURMD_STOP", "SLURMD_START", "HOLDERS":
		default:
			env = append(env, kv)
		}
	}
	// systemctl stop of a stopped unit succeeds: a rerun of the script
	// finds slurmd stopped.
	stop := fmt.Sprintf("p=$(cat %s 2>/dev/null); [ -z \"$p\" ] || { kill $p 2>/dev/null; while kill -0 $p 2>/dev/null; do sleep 0.1; done; }", a.pidFile("gpu01"))
	env = append(env, "APPLY="+a.apply, "SLURMD_STOP="+stop, "SLURMD_START="+a.slurmdStart)
	if a.holders != "" {
		env = append(env, "HOLDERS="+a.holders)
	}
	change := script.Path
	if a.ansible {
		playbook := ansibleDriver(a.repartition, t)
		var words []string
		for _, w := range playbook.Args {
			words = append(words, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
		}
		change = strings.Join(words, " ") + ` -l "$NODE" -e mig_config_name="$SELECT"`
		env = playbook.Env
	}
	now := time.Now().Add(time.Minute).Format(slurmconf.TimeLayout) // the jobs have waited a minute
	cmd := exec.Command(slurmMig, "rebalance", "--apply", "--queue", a.queue, "--nodes", a.nodes, "--mig-config", a.migConfig,
		"--min-wait", "30s", "--now", now, "--hardware", "gpu[01-02]="+filepath.Join(a.dir, "a.json"),
		"--journal", a.journal, "--drain-timeout", a.drainTimeout, "--change-timeout", "120s", "--change-command", change)
	if a.json {
		cmd.Args = append(cmd.Args, "--json")
	}
	// An admin's shell may set SLURM_TIME_FORMAT, which changes how
	// every Slurm command prints times: the controller and the change
	// command must read Slurm's times all the same.
	cmd.Env, cmd.Dir = append(env, "SLURM_TIME_FORMAT=relative"), a.dir
	return cmd
}

// run runs the controller once and returns its exit status and output.
func (a *applyCluster) run(t *testing.T) (int, string) {
	t.Helper()
	cmd := a.command(t)
	out, err := cmd.CombinedOutput()
	t.Logf("rebalance --apply:\n%s", out)
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// entry is gpu01's journal entry.
func (a *applyCluster) entry(t *testing.T) rollout.Entry {
	t.Helper()
	var e rollout.Entry
	data, err := os.ReadFile(filepath.Join(a.journal, "gpu01.json"))
	must(t, err)
	must(t, json.Unmarshal(data, &e))
	return e
}

func (a *applyCluster) journalFiles(t *testing.T) int {
	files, err := filepath.Glob(filepath.Join(a.journal, "*.json"))
	must(t, err)
	return len(files)
}

// sameGres says whether the node's Gres= has the counts of the layout
// snapshot's.
func (a *applyCluster) sameGres(t *testing.T, st nodeState, snap string) bool {
	line := strings.TrimSpace(runSlurmMig(t, "node", "--root", a.devDir, "--from", filepath.Join(a.dir, snap), "--node-name", "gpu01"))
	want := nodeLineCounts(t, line)
	got := nodeLineCounts(t, "NodeName=gpu01 Gres="+st.gres)
	return fmt.Sprint(want) == fmt.Sprint(got)
}

// checkEvents checks that the controller said each step, in order.
func (a *applyCluster) checkEvents(t *testing.T, out string, steps ...string) {
	t.Helper()
	at := 0
	for _, line := range strings.Split(out, "\n") {
		if at < len(steps) && strings.Contains(line, "gpu01 "+steps[at]) {
			at++
		}
	}
	if at < len(steps) {
		t.Errorf("the controller's lines lack %q, in order after %v:\n%s", steps[at], steps[:at], out)
	}
}

// checkChanged checks the change: gpu01 in service with all-balanced's
// counts, the journal empty, both pending jobs run there with their
// MIG UUIDs (device numbers before 21.08), gpu02's job untouched.
func (a *applyCluster) checkChanged(t *testing.T) {
	t.Helper()
	st := a.waitNodeNamed("gpu01", registered, "to register")
	if strings.Contains(st.state, "DRAIN") || strings.Contains(st.state, "INVAL") || !a.sameGres(t, st, "b.json") || a.journalFiles(t) != 0 {
		t.Errorf("gpu01 %s Gres=%s Reason=%s, %d journal entries; want in service with all-balanced's counts, none", st.state, st.gres, st.reason, a.journalFiles(t))
	}
	a.checkPendingRan(t, a.pending)
	if data, err := os.ReadFile(filepath.Join(a.dir, "slurmctld.log")); err != nil || strings.Contains(string(data), "reported lower than configured") {
		t.Errorf("slurmctld.log (%v) says a count was lower than configured", err)
	}
	a.checkOthers(t)
}

// checkOthers checks that gpu02's job ran on through it all.
func (a *applyCluster) checkOthers(t *testing.T) {
	t.Helper()
	after := a.jobDetail(t, a.job02)
	for _, k := range []string{"StartTime", "NodeList", "GRES"} {
		if field(a.before02, k) != field(after, k) {
			t.Errorf("gpu02's job changed %s:\nbefore %s\nafter  %s", k, a.before02, after)
		}
	}
	if !slices.Contains([]string{"RUNNING"}, field(after, "JobState")) || field(after, "Restarts") != "0" {
		t.Errorf("gpu02's job: %s", after)
	}
	must(t, os.WriteFile(a.rel02, nil, 0o644))
	if line := a.waitJob(a.job02, "COMPLETED"); field(line, "ExitCode") != "0:0" {
		t.Errorf("gpu02's job: %s", line)
	}
}

// endJob releases a job of sbatchWaiting and waits, up to 30 s and
// without failing the test, until slurmctld has it done: a test's
// cleanup, run before the daemons stop, so that no slurmstepd outlives
// the test.
func (a *applyCluster) endJob(release, id string) {
	os.WriteFile(release, nil, 0o644)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, _ := a.cluster.command(context.Background(), "scontrol", "show", "job", "-o", id).CombinedOutput()
		if st := field(strings.TrimSpace(string(out)), "JobState"); st != "RUNNING" && st != "COMPLETING" && st != "PENDING" {
			return
		}
	}
}
