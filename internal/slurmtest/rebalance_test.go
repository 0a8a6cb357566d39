package slurmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/rebalance"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// queueArgs are rebalance.QueueFormat as squeue's arguments.
var queueArgs = []string{"--noheader", "--array", "--states=PD", "--format=%i %V %D %b %r"}

// TestRebalanceReadsSlurm holds rebalance's readers to what this
// release's squeue and scontrol print: held jobs asking for a MIG type,
// a whole GPU, two nodes, or no GPU, read back as their requests; the
// node idle, then busy while a GPU job runs on it (GresUsed says so;
// AllocTRES does not, accounting here not tracking gres/gpu).
func TestRebalanceReadsSlurm(t *testing.T) {
	requireCluster(t)
	if got := "squeue " + strings.Join(queueArgs[:3], " ") + " '" + strings.TrimPrefix(queueArgs[3], "--format=") + "'"; got != strings.Replace(rebalance.QueueFormat, "--format='", "'", 1) {
		t.Fatalf("queueArgs say %s, rebalance.QueueFormat %s", got, rebalance.QueueFormat)
	}
	c, host, _, mig := startDemoNode(t)
	jMig := c.sbatch("--hold", "--gres=gpu:"+mig+":2", "--wrap=true")
	jAny := c.sbatch("--hold", "--gres=gpu:1", "--wrap=true")
	jCPU := c.sbatch("--hold", "--wrap=true")

	out, err := c.command(context.Background(), "squeue", queueArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("squeue: %v\n%s", err, out)
	}
	t.Logf("squeue %s printed:\n%s", strings.Join(queueArgs, " "), out)
	jobs, err := rebalance.ParseQueue("squeue", out, time.Local)
	if err != nil {
		t.Fatalf("%v\nsqueue printed:\n%s", err, out)
	}
	want := map[string]string{jMig: fmt.Sprintf("[{%s 2}]", mig), jAny: "[{ 1}]", jCPU: "[]"}
	for _, j := range jobs {
		if got := fmt.Sprint(j.GPU); got != want[j.ID] && !(got == "[]" && want[j.ID] == "[]") {
			t.Errorf("job %s: GPU %s, want %s (squeue: %q)", j.ID, got, want[j.ID], out)
		}
		if j.Nodes != 1 || time.Since(j.Submit) > time.Hour || time.Since(j.Submit) < -time.Minute {
			t.Errorf("job %s: %d nodes, submitted %s", j.ID, j.Nodes, j.Submit)
		}
		delete(want, j.ID)
	}
	if len(want) > 0 {
		t.Errorf("squeue lacks jobs %v:\n%s", want, out)
	}
	// A profile's SLURM_TIME_FORMAT changes how squeue prints %V: the
	// queue is refused, with the way out, not misread.
	for _, format := range []string{"relative", "%F %T", "%s"} {
		cmd := c.command(context.Background(), "squeue", queueArgs...)
		cmd.Env = append(append([]string(nil), cmd.Env...), "SLURM_TIME_FORMAT="+format)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("SLURM_TIME_FORMAT=%q squeue: %v\n%s", format, err, out)
		}
		_, err = rebalance.ParseQueue("squeue", out, time.Local)
		var h advice.Hinter
		if !errors.As(err, &h) || !strings.Contains(h.Hint(), "SLURM_TIME_FORMAT=standard") {
			t.Errorf("SLURM_TIME_FORMAT=%q: squeue printed\n%s\nread as %v, want an error that names SLURM_TIME_FORMAT=standard", format, out, err)
		}
	}

	why := func() string {
		t.Helper()
		out, err := c.command(context.Background(), "scontrol", "--details", "--oneliner", "show", "node").CombinedOutput()
		if err != nil {
			t.Fatalf("scontrol: %v\n%s", err, out)
		}
		states, err := rebalance.ParseNodes("scontrol", out)
		if err != nil {
			t.Fatalf("%v\nscontrol printed:\n%s", err, out)
		}
		s, ok := states[host]
		if !ok {
			t.Fatalf("scontrol printed no node %s:\n%s", host, out)
		}
		return s.Why()
	}
	if w := why(); w != "" {
		t.Errorf("idle node: %s", w)
	}
	// A node slurmctld hears nothing from is out of service though its
	// base state is IDLE: slurmd stopped, slurmctld restarted, it shows
	// the node not responding until SlurmdTimeout (300 s) takes it DOWN.
	c.stopDaemon("slurmd")
	c.restart("slurmctld", "-D", "-R")
	c.waitSlurmctld()
	silent := func(n nodeState) bool {
		return strings.Contains(n.state, "NOT_RESPONDING") || strings.HasSuffix(n.state, "*")
	}
	quiet := c.waitNode(silent, "to be shown not responding")
	t.Logf("slurmd stopped, slurmctld restarted: State=%s", quiet.state)
	if w := why(); !strings.Contains(w, "not responding") {
		t.Errorf("node in State=%s: Why() says %q, want it out of service for that state", quiet.state, w)
	}
	c.start("slurmd", "-D")
	c.waitNode(func(n nodeState) bool { return registered(n) && !silent(n) }, "to answer again")
	if w := why(); w != "" {
		t.Errorf("idle node answering again: %s", w)
	}
	c.sbatch("--gres=gpu:"+mig+":1", "--wrap=sleep 60")
	c.waitFor("the GPU job to run", func() (bool, string) {
		w := why()
		return w != "", w
	})
	if w := why(); w != "1 GPUs in use by running jobs" {
		t.Errorf("busy node: %q", w)
	}
}

// TestRebalanceRepartitions is rebalance's loop in real Slurm, on the
// two-node cluster of the repartition tests: gpu01 in layout A (seven
// 1g.10gb), idle; gpu02 in B (all-balanced), running a job on its
// 3g.40gb and 2g.20gb. Jobs asking for a 3g.40gb and a 2g.20gb, types
// no idle node offers, stay pending. (A type that no node declares at
// all cannot be asked for: sbatch refuses such a job at once,
// "Requested node configuration is not available", which the test
// checks too; a site keeps each type somewhere, which --keep is for.)
// rebalance, fed this release's squeue and scontrol, proposes
// all-balanced for gpu01 and leaves gpu02 alone; the repartition script
// applies it; the pending jobs start on gpu01's new devices, each with
// its MIG UUID (from the TaskProlog, 21.08 on), while gpu02's job runs
// on untouched, and gpu01 never drains for its counts. The script runs
// on a classic cluster, the playbook (repartition.yml, by
// ansible-playbook) on a configless one, as TestRepartition and
// TestRepartitionAnsible run them.
func TestRebalanceRepartitions(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	t.Run("script", func(t *testing.T) {
		t.Parallel()
		rebalanceLoop(t, startRepartition(t, false, "gpu02"), scriptDriver)
	})
	t.Run("ansible", func(t *testing.T) {
		t.Parallel()
		Require(t, "munged")
		testtools.Require(t, "ansible-core", "ansible-playbook")
		rebalanceLoop(t, startRepartition(t, true, "gpu02"), ansibleDriver)
	})
}

// rebalanceLoop is TestRebalanceRepartitions on the cluster r, applying
// the proposal with start.
func rebalanceLoop(t *testing.T, r *repartition, start driver) {
	rel02 := filepath.Join(r.dir, "release-gpu02")
	job02 := r.sbatchWaiting(t, "gpu02", "gpu:h100_3g.40gb:1,gpu:h100_2g.20gb:1", rel02)
	before02 := r.jobDetail(t, job02)

	// A type no node declares cannot even wait.
	if out, err := r.command(context.Background(), "sbatch", "--parsable", "-N1", "-n1", "--gres=gpu:h100_7g.80gb:1", "--wrap", "true").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "Requested node configuration is not available") {
		t.Errorf("sbatch --gres=gpu:h100_7g.80gb:1, a type no node declares: %v\n%s\nwant it refused: Requested node configuration is not available", err, out)
	}
	pending := map[string]string{} // job id -> the profile it asks for
	for _, profile := range []string{"3g.40gb", "2g.20gb"} {
		out, err := r.command(context.Background(), "sbatch", "--parsable", "-N1", "-n1", "--gres=gpu:h100_"+profile+":1",
			"-o", filepath.Join(r.dir, "pending-%j.out"), "--wrap", "printenv CUDA_VISIBLE_DEVICES").CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch --gres=gpu:h100_%s:1: %v\n%s", profile, err, out)
		}
		pending[strings.TrimSpace(string(out))] = profile
	}
	for id := range pending {
		r.waitFor("job "+id+" to be held back by the scheduler", func() (bool, string) {
			out, _ := r.command(context.Background(), "scontrol", "show", "job", "-o", id).CombinedOutput()
			line := strings.TrimSpace(string(out))
			return field(line, "JobState") == "PENDING" && field(line, "Reason") != "None", line
		})
	}

	// rebalance reads what this release prints; one snapshot, layout A's,
	// stands for both nodes, their layouts read from scontrol's Gres=.
	queue, nodes := filepath.Join(r.dir, "queue.txt"), filepath.Join(r.dir, "nodes.txt")
	for file, args := range map[string][]string{queue: append([]string{"squeue"}, queueArgs...), nodes: {"scontrol", "--details", "--oneliner", "show", "node"}} {
		out, err := r.command(context.Background(), args[0], args[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		must(t, os.WriteFile(file, out, 0o644))
	}
	now := time.Now().Add(time.Minute).Format(slurmconf.TimeLayout) // the jobs have waited a minute
	code, stdout, stderr := runSlurmMigCode(t, "rebalance", "--queue", queue, "--nodes", nodes, "--mig-config", r.migConfig,
		"--min-wait", "30s", "--now", now, "--json", "--hardware", "gpu[01-02]="+filepath.Join(r.dir, "a.json"))
	t.Logf("rebalance:\n%s", stdout)
	var p rebalance.Proposal
	if err := json.Unmarshal([]byte(stdout), &p); code != 1 || err != nil {
		t.Fatalf("rebalance: exit %d (want 1, changes), %v\n%s%s", code, err, stdout, stderr)
	}
	planned := strings.TrimSpace(runSlurmMig(t, "plan", "--root", r.devDir, "--from", r.snapshotPath("gpu01"), "--node-name", "gpu01", "--mig-config", r.migConfig, "--select", "all-balanced"))
	if len(p.Changes) != 1 || p.Changes[0].Node != "gpu01" || p.Changes[0].Config != "all-balanced" ||
		!maps.Equal(nodeLineCounts(t, "NodeName=gpu01 Gres="+p.Changes[0].Gres), nodeLineCounts(t, planned)) {
		t.Fatalf("rebalance proposes %+v, want gpu01 to all-balanced, %s (plan's)\n%s", p.Changes, planned, stdout)
	}
	if got, want := slices.Sorted(slices.Values(p.Changes[0].Jobs)), slices.Sorted(maps.Keys(pending)); !slices.Equal(got, want) {
		t.Errorf("the change starts jobs %v, want the pending %v", got, want)
	}
	if len(p.Held) != 1 || p.Held[0].Node != "gpu02" {
		t.Errorf("held %+v, want gpu02 (its job)", p.Held)
	}

	// The documented sequence applies it (both drivers select
	// all-balanced, the config checked above).
	r.allowed = append(r.allowed, logLine{"slurmctld", regexp.MustCompile(`error: Node gpu02 appears to have a different slurm.conf than the slurmctld`)})
	stop := r.watch("slurm-mig repartition to " + p.Changes[0].Config)
	cmd := start(r, t)
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", cmd.Path, out)
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Path, err, r.daemonLogs())
	}

	r.checkPendingRan(t, pending)
	if bad := stop(); len(bad) > 0 {
		t.Errorf("gpu01 went INVAL or drained for its counts:\n%s", strings.Join(bad, "\n"))
	}
	if data, err := os.ReadFile(filepath.Join(r.dir, "slurmctld.log")); err != nil || strings.Contains(string(data), "reported lower than configured") {
		t.Errorf("slurmctld.log (%v) says a count was lower than configured", err)
	}
	after02 := r.jobDetail(t, job02)
	if field(after02, "JobState") != "RUNNING" || field(before02, "StartTime") != field(after02, "StartTime") || field(after02, "NodeList") != "gpu02" ||
		field(after02, "Restarts") != "0" || field(before02, "GRES") != field(after02, "GRES") {
		t.Errorf("gpu02's job changed:\nbefore %s\nafter  %s", before02, after02)
	}
	must(t, os.WriteFile(rel02, nil, 0o644))
	if line := r.waitJob(job02, "COMPLETED"); field(line, "ExitCode") != "0:0" {
		t.Errorf("gpu02's job: %s", line)
	}
}

// checkPendingRan checks that each pending job (id -> the profile it asks
// for) ran on gpu01 with its MIG device's UUID from layout B (20.11: a
// device number, which Slurm gives tasks before 21.08).
func (r *repartition) checkPendingRan(t *testing.T, pending map[string]string) {
	t.Helper()
	b, err := snapshot.Load(r.b)
	must(t, err)
	uuids := map[string]string{}
	for _, m := range b.GPUs[0].MigDevices {
		uuids[m.Profile] = m.UUID
	}
	for id, profile := range pending {
		// A job held back before the change may wait for slurmctld's
		// next scheduling pass (sched_interval, 60 s by default) rather
		// than start at the node's resume, on a busy machine.
		line := r.waitJobWithin(2*time.Minute, id, "COMPLETED")
		data, err := os.ReadFile(filepath.Join(r.dir, "pending-"+id+".out"))
		got := strings.TrimSpace(string(data))
		switch {
		case err != nil || field(line, "NodeList") != "gpu01":
			t.Errorf("job %s (%s): %v\n%s", id, profile, err, line)
		case release.Before(gresIndexEnvSince):
			if got == "" || strings.HasPrefix(got, "MIG-") {
				t.Errorf("job %s (%s): CUDA_VISIBLE_DEVICES=%q", id, profile, got)
			}
		case got != uuids[profile]:
			t.Errorf("job %s (%s): CUDA_VISIBLE_DEVICES=%q, want %s", id, profile, got, uuids[profile])
		}
	}
}

// startDemoNode starts a cluster of this machine as the demo node, its
// types named for the model, and returns it once the node is IDLE, with
// the host, the demo layout and the node's last MIG type.
func startDemoNode(t *testing.T) (c *cluster, host string, l layout, mig string) {
	t.Helper()
	host = shortHostname(t)
	l = demoLayout(t)
	devDir := t.TempDir()
	makeDevices(t, devDir, l.node)
	f := form{"model", string(gresgen.FileStyleFor(release)), false}
	gres, nodeLine := render(t, l, f, host)
	c = startCluster(t, host, forThisMachine(gres, devDir), nodeLine, hardware(t))
	if node := c.waitNode(registered, "to register"); node.state != "IDLE" {
		t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", host, node.state, node.reason, c.logs())
	}
	types := gresList(t, nodeLine)
	return c, host, l, types[len(types)-1].typ
}
