package slurmtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"
)

// TestRebalanceSkipsBlockedJobs: real squeue with --states=PD lists jobs
// that no layout starts: held (sbatch --hold: JobHeldUser), waiting on
// another job (Dependency), on a start time (--begin: BeginTime), and
// each task of a throttled array (--array=1-6%2 prints 4_1..4_6, the %2
// dropped). QueueFormat's %r, last, gives their reasons, so rebalance
// takes none as demand and --explain names each reason. Seen on 22.05.8:
//
//	2 2026-11-30T00:09:20 1 gres:gpu:a100_1g.10gb+me:1 Dependency
//	3 2026-11-30T00:09:20 1 gres:gpu:a100_1g.10gb+me:1 BeginTime
//	4_1 2026-11-30T00:09:20 1 gres:gpu:a100_1g.10gb+me:1 JobHeldUser
func TestRebalanceSkipsBlockedJobs(t *testing.T) {
	requireCluster(t)
	c, host, l, mig := startDemoNode(t)
	held := c.sbatch("--hold", "--gres=gpu:"+mig+":1", "--wrap=true")
	c.sbatch("--dependency=afterok:"+held, "--gres=gpu:"+mig+":1", "--wrap=true")
	c.sbatch("--begin=now+1hour", "--gres=gpu:"+mig+":1", "--wrap=true")
	c.sbatch("--hold", "--array=1-6%2", "--gres=gpu:"+mig+":1", "--wrap=true")

	// rebalance.QueueFormat as squeue's arguments.
	before, format, _ := strings.Cut(rebalance.QueueFormat, "--format=")
	args := append(strings.Fields(before)[1:], "--format="+strings.Trim(format, "'"))
	out, err := c.command(context.Background(), "squeue", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("squeue: %v\n%s", err, out)
	}
	t.Logf("squeue %s printed:\n%s", strings.Join(args, " "), out)
	jobs, err := rebalance.ParseQueue("squeue", out, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 9 {
		t.Errorf("%d jobs read, want 9: three, and six array tasks", len(jobs))
	}
	for _, j := range jobs {
		if !j.Blocked() {
			t.Errorf("job %s: reason %q, not read as one no layout clears", j.ID, j.Reason)
		}
	}
	nodes, err := c.command(context.Background(), "scontrol", "--details", "--oneliner", "show", "node").CombinedOutput()
	if err != nil {
		t.Fatalf("scontrol: %v\n%s", err, nodes)
	}
	states, err := rebalance.ParseNodes("scontrol", nodes)
	if err != nil {
		t.Fatal(err)
	}
	// The demo snapshot has no profile table (schema 1): the A100's, as
	// far as --explain needs it.
	a100 := rebalance.Slices{Profiles: map[string]int{"1g.10gb+me": 1}, Whole: 8, GPUs: len(l.node.GPUs)}
	explained := rebalance.Explain(states, jobs, map[string]rebalance.Slices{host: a100})
	if len(explained) != len(jobs) {
		t.Errorf("--explain says %d lines for %d jobs", len(explained), len(jobs))
	}
	reason := map[string]string{}
	for _, j := range jobs {
		reason[j.ID] = j.Reason
	}
	for _, e := range explained {
		if e.Why != rebalance.WaitOther || !strings.Contains(e.Detail, "squeue's reason is "+reason[e.Job]) {
			t.Errorf("job %s: %s: %s, want other, with squeue's reason %s", e.Job, e.Why, e.Detail, reason[e.Job])
		}
	}
	p := rebalance.Propose(nil, jobs, rebalance.Limits{MaxNodes: 1, Now: time.Now().Add(time.Hour)})
	if p.Demand != 0 || p.Waiting != 0 {
		t.Errorf("pending %d, demand %d, waiting %d: want no demand, every job is held, dependent or begins later", p.Pending, p.Demand, p.Waiting)
	}
}
