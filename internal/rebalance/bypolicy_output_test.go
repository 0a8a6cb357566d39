package rebalance

import (
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// gpu01's snapshot is old: it shows the H100 whole (gpu:h100:1), while
// slurmctld holds Gres=gpu:h100_1g.10gb:7 (the node was re-laid out
// since) and one of those seven runs a job. Fleet checked a snapshot's
// counts against slurmctld's only when the node's GPUs were all idle:
// for a busy node it kept "1 GPUs in use by running jobs" and dropped
// the mismatch. Propose holds a busy node anyway; the policy (--history)
// did not: it may drain a node with a few busy devices (MaxBusy), and
// read gpu01's config from the stale snapshot and its busy devices from
// slurmctld, so it could propose a change the controller refuses. docs/rebalance.md: "A
// node whose snapshot's counts slurmctld does not hold (an old snapshot,
// or a slurm.conf not yet updated) is held too".
func TestPolicyHoldsABusyNodeWhoseSnapshotIsStale(t *testing.T) {
	e := evaluator(t)
	states, err := ParseNodes("nodes.txt", []byte(
		"NodeName=gpu01 Gres=gpu:h100_1g.10gb:7 State=MIXED GresUsed=gpu:h100_1g.10gb:1(IDX:0) AllocTRES=cpu=1\n"+
			"NodeName=gpu02 Gres=gpu:h100:1 State=IDLE GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=\n"))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := Fleet([]*model.Node{h100Node(t, "gpu01"), h100Node(t, "gpu02")}, nil, states, e)
	if err != nil {
		t.Fatal(err)
	}
	in := SlurmInput{Nodes: nodes, States: states, Now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	p, err := ProposeByPolicy(in, DefaultWindows(), DefaultPolicyLimits(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range p.Held {
		if h.Node == "gpu01" && strings.Contains(h.Why, "h100_1g.10gb:7") {
			return
		}
	}
	t.Errorf("held %+v: want gpu01 held, slurmctld holding Gres=gpu:h100_1g.10gb:7, not its snapshot's gpu:h100:1", p.Held)
}

// With --history the proposal's "unserved" was never filled: Propose lists
// the waiting jobs that neither a held layout nor a change serves, while
// ProposeByPolicy left Unserved empty whatever waited. Twenty 7g jobs
// have waited up to twenty minutes, gpu03's 7g devices are mostly busy
// and the policy changes nothing (steady demand): the admin read
//
//	nothing to do: 20 pending jobs, 20 asking one node for one GPU type, 20 of them waiting longer than 10m0s, 0 that no change on an idle node would start
//
// and "unserved": [] in --json, as if every waiting job would start,
// where at most gpu03's idle 7g devices (8 less the busy) serve any.
// Now the jobs that neither the idle devices nor a change start are
// listed.
// docs/rebalance.md: "The output is Propose's".
func TestPolicySaysWhatIsUnserved(t *testing.T) {
	in := policyInput(t, 0.5, 0.1, 0.5, 0.1, 0, 20)
	in.Jobs = append([]Job(nil), in.Jobs...)
	for i := range in.Jobs {
		in.Jobs[i].Submit = in.Now.Add(-time.Duration(11+i) * time.Minute) // all waited past --min-wait
	}
	p, err := ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	idle := 8
	for _, u := range in.States["gpu03"].Used {
		idle -= u.Count
	}
	if len(p.Changes) == 0 && p.Waiting == 20 && len(p.Unserved) < 20-idle {
		t.Errorf("no change, %d waiting, gpu03 has %d idle 7g: unserved %v, want at least %d", p.Waiting, idle, p.Unserved, 20-idle)
	}
}

// A node whose last change was abandoned, its jobs outliving the drain,
// is held while any job runs there, and weighed again once it is empty:
// the policy may drain a busy node, and would drain it again at once.
func TestPolicyHoldsAnAbandonedNodeWhileJobsRun(t *testing.T) {
	in := policyInput(t, 0.5, 0.1, 0.5, 0.1, 0, 0)
	in.Abandoned = map[string]bool{"gpu01": true, "gpu02": true}
	s := buildSlurmState(in, DefaultWindows())
	if len(s.held) != 1 || s.held[0].Node != "gpu01" || !strings.Contains(s.held[0].Why, "abandoned") {
		t.Errorf("held %+v: want gpu01 (MIXED) held for its abandoned change, idle gpu02 not", s.held)
	}
}

// Propose, likewise; and a node the journal is changing holds its
// target's devices, so the jobs they serve ask no second node.
func TestProposeReadsTheJournal(t *testing.T) {
	js := []Job{job("A", "h100_1g.10gb", 1, 30)}
	busy := node("gpu01", "h100:1", "")
	busy.RunsJobs = true
	l := lim
	l.Abandoned = map[string]bool{"gpu01": true}
	check(t, Propose([]Node{busy}, js, l))
	l.Abandoned = nil
	check(t, Propose([]Node{busy}, js, l), "gpu01=all-1g.10gb[A]")

	draining := node("gpu01", "h100:1", "state IDLE+DRAIN")
	l.Changing = map[string]string{"gpu01": "all-1g.10gb"}
	check(t, Propose([]Node{draining, node("gpu02", "h100:1", "")}, js, l))
}
