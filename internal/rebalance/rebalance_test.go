package rebalance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// gres reads "h100:1,h100_1g.10gb:7" as counts.
func gres(s string) []slurmconf.GresCount {
	var out []slurmconf.GresCount
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		t, n, _ := strings.Cut(item, ":")
		var c int
		fmt.Sscan(n, &c)
		out = append(out, slurmconf.GresCount{Name: "gpu", Type: t, Count: c})
	}
	return out
}

// h100 is one H100 node's options: whole, seven 1g, two 3g, or 3g+2g+1g
// (counts as migplan gives them; TestEvaluatorFit holds them to it).
var h100 = &Options{Configs: []Option{
	{"all-1g.10gb", gres("h100_1g.10gb:7")},
	{"all-3g.40gb", gres("h100_3g.40gb:2")},
	{"all-balanced", gres("h100_3g.40gb:1,h100_2g.20gb:1,h100_1g.10gb:1")},
	{"all-disabled", gres("h100:1")},
}}

func node(name, current, why string) Node {
	return Node{Name: name, Current: gres(current), Why: why, Options: h100}
}

// job is a pending job asking one node for count devices of typ, which
// has waited so many minutes.
func job(id, typ string, count, waited int) Job {
	return Job{ID: id, Submit: now.Add(-time.Duration(waited) * time.Minute), Nodes: 1, GPU: []Request{{Type: typ, Count: count}}}
}

func jobs(prefix, typ string, n, waited int) []Job {
	var out []Job
	for i := range n {
		out = append(out, job(fmt.Sprintf("%s%d", prefix, i+1), typ, 1, waited))
	}
	return out
}

var lim = Limits{MaxNodes: 10, MinWait: 10 * time.Minute, Keep: 0, Now: now}

// changes says a proposal's changes as "node=config[jobs]".
func changes(p *Proposal) []string {
	var out []string
	for _, c := range p.Changes {
		out = append(out, fmt.Sprintf("%s=%s%v", c.Node, c.Config, c.Jobs))
	}
	return out
}

func check(t *testing.T, p *Proposal, want ...string) {
	t.Helper()
	if got := changes(p); !slices.Equal(got, want) {
		t.Errorf("changes:\n got %q\nwant %q", got, want)
	}
}

// Three 1g.10gb jobs wait; gpu01 has a job on its GPU, gpu02 is idle:
// only gpu02 changes, to seven 1g.10gb, and the three start there.
func TestBusyNodeUntouched(t *testing.T) {
	nodes := []Node{node("gpu01", "h100:1", "1 GPUs in use by running jobs"), node("gpu02", "h100:1", "")}
	p := Propose(nodes, jobs("j", "h100_1g.10gb", 3, 30), lim)
	check(t, p, "gpu02=all-1g.10gb[j1 j2 j3]")
	if len(p.Held) != 1 || p.Held[0].Node != "gpu01" {
		t.Errorf("held %v, want gpu01", p.Held)
	}
	// With gpu01 alone nothing may change, and the jobs are unserved.
	p = Propose(nodes[:1], jobs("j", "h100_1g.10gb", 3, 30), lim)
	check(t, p)
	if !slices.Equal(p.Unserved, []string{"j1", "j2", "j3"}) {
		t.Errorf("unserved %v", p.Unserved)
	}
}

// Twenty 1g.10gb jobs, three idle whole GPUs, at most two changes: two
// nodes of seven, in hostlist order (gpu2 before gpu10), oldest jobs
// first; six stay unserved.
func TestMaxNodes(t *testing.T) {
	nodes := []Node{node("gpu10", "h100:1", ""), node("gpu2", "h100:1", ""), node("gpu3", "h100:1", "")}
	var js []Job
	for i := range 20 {
		js = append(js, job(fmt.Sprintf("%d", 100+i), "h100_1g.10gb", 1, 60-i)) // 100 is the oldest
	}
	p := Propose(nodes, js, Limits{MaxNodes: 2, MinWait: time.Minute, Now: now})
	check(t, p, "gpu2=all-1g.10gb[100 101 102 103 104 105 106]", "gpu3=all-1g.10gb[107 108 109 110 111 112 113]")
	if !slices.Equal(p.Unserved, []string{"114", "115", "116", "117", "118", "119"}) {
		t.Errorf("unserved %v", p.Unserved)
	}
	want := []string{"NodeName=gpu[2-3] Gres=gpu:h100_1g.10gb:7", "NodeName=gpu10 Gres=gpu:h100:1"}
	if !slices.Equal(p.NodeLines, want) {
		t.Errorf("node lines %q, want %q", p.NodeLines, want)
	}
}

// Only jobs that waited longer than MinWait call for a change, and only
// they are named; a job of exactly MinWait has not waited longer.
func TestMinWait(t *testing.T) {
	nodes := []Node{node("gpu01", "h100:1", "")}
	young := []Job{job("y1", "h100_3g.40gb", 1, 5), job("y2", "h100_3g.40gb", 1, 10)}
	check(t, Propose(nodes, young, lim))
	p := Propose(nodes, append(young, job("old", "h100_3g.40gb", 1, 11)), lim)
	check(t, p, "gpu01=all-3g.40gb[old]")
	if p.Demand != 3 || p.Waiting != 1 {
		t.Errorf("demand %d waiting %d, want 3 and 1", p.Demand, p.Waiting)
	}
}

// Four whole GPUs and Keep 0.5: two whole GPUs must remain, so two
// nodes change at most however many jobs wait; Keep 0.3 keeps
// floor(1.2) = 1, so three change.
func TestKeep(t *testing.T) {
	nodes := []Node{node("g1", "h100:1", ""), node("g2", "h100:1", ""), node("g3", "h100:1", ""), node("g4", "h100:1", "")}
	js := jobs("j", "h100_3g.40gb", 8, 30)
	l := lim
	l.Keep = 0.5
	check(t, Propose(nodes, js, l), "g1=all-3g.40gb[j1 j2]", "g2=all-3g.40gb[j3 j4]")
	l.Keep = 0.3
	check(t, Propose(nodes, js, l), "g1=all-3g.40gb[j1 j2]", "g2=all-3g.40gb[j3 j4]", "g3=all-3g.40gb[j5 j6]")
	// A type no node offers now has no floor: a new type is free to come.
	l.Keep = 1
	check(t, Propose(nodes, js, l))
}

// The config that starts the most jobs wins: one 3g.40gb, one 2g.20gb
// and one 1g.10gb job fit all-balanced (3 jobs), not all-1g.10gb (1) or
// all-3g.40gb (1). The jobs are named, oldest first.
func TestJobNaming(t *testing.T) {
	js := []Job{job("30", "h100_1g.10gb", 1, 20), job("10", "h100_3g.40gb", 1, 40), job("20", "h100_2g.20gb", 1, 30)}
	p := Propose([]Node{node("a", "h100:1", "")}, js, lim)
	check(t, p, "a=all-balanced[10 20 30]")
	if p.Changes[0].Gres != "gpu:h100_3g.40gb:1,gpu:h100_2g.20gb:1,gpu:h100_1g.10gb:1" || p.Changes[0].Was != "gpu:h100:1" {
		t.Errorf("change %+v", p.Changes[0])
	}
}

// Jobs are served oldest first and stop at the first that does not
// fit: of six, two and one 1g.10gb devices, seven 1g.10gb serve the six
// and not the two; the one behind it waits its turn (taking it would
// let a change's jobs depend on the order of runs: TestStableRandom).
func TestCounts(t *testing.T) {
	js := []Job{job("1", "h100_1g.10gb", 6, 40), job("2", "h100_1g.10gb", 2, 30), job("3", "h100_1g.10gb", 1, 20)}
	check(t, Propose([]Node{node("a", "h100:1", "")}, js, lim), "a=all-1g.10gb[1]")
	// With a second idle node, the two and the one start there.
	check(t, Propose([]Node{node("a", "h100:1", ""), node("b", "h100:1", "")}, js, lim), "a=all-1g.10gb[1]", "b=all-1g.10gb[2 3]")
}

// Hysteresis: gpu01's 1g.10gb serve one pending job, so it is held even
// though switching it to 3g.40gb would start two of the three waiting
// 3g.40gb jobs; gpu02, which offers nothing pending jobs want, changes.
func TestHeldWhileItsDemandWaits(t *testing.T) {
	nodes := []Node{node("gpu01", "h100_1g.10gb:7", ""), node("gpu02", "h100:1", "")}
	js := append(jobs("s", "h100_3g.40gb", 3, 30), job("one", "h100_1g.10gb", 1, 30))
	p := Propose(nodes, js, lim)
	check(t, p, "gpu02=all-3g.40gb[s1 s2]")
	if !slices.Equal(p.Unserved, []string{"s3"}) {
		t.Errorf("unserved %v", p.Unserved)
	}
}

// Jobs no one node's layout decides are not demand: several nodes,
// several types, any type, no GPU.
func TestDemandIsOneNodeOneType(t *testing.T) {
	js := []Job{
		{ID: "multi", Submit: now.Add(-time.Hour), Nodes: 2, GPU: []Request{{"h100_3g.40gb", 1}}},
		{ID: "two", Submit: now.Add(-time.Hour), Nodes: 1, GPU: []Request{{"h100_3g.40gb", 1}, {"h100_1g.10gb", 1}}},
		{ID: "any", Submit: now.Add(-time.Hour), Nodes: 1, GPU: []Request{{"", 1}}},
		{ID: "cpu", Submit: now.Add(-time.Hour), Nodes: 1},
	}
	p := Propose([]Node{node("a", "h100:1", "")}, js, lim)
	check(t, p)
	if p.Pending != 4 || p.Demand != 0 {
		t.Errorf("pending %d demand %d, want 4 and 0", p.Pending, p.Demand)
	}
}

// apply makes a proposal's changes to the nodes, as mig-parted and the
// repartition sequence would.
func apply(nodes []Node, p *Proposal) []Node {
	out := slices.Clone(nodes)
	for _, c := range p.Changes {
		for i := range out {
			if out[i].Name != c.Node {
				continue
			}
			for _, o := range out[i].Options.Configs {
				if o.Config == c.Config {
					out[i].Current = o.Counts
				}
			}
		}
	}
	return out
}

// Stable: a proposal applied, the same queue gives nothing more to do;
// with MaxNodes reached, the next run changes other nodes only, never
// one changed before, until nothing is left to do.
func TestStable(t *testing.T) {
	nodes := []Node{node("a", "h100:1", ""), node("b", "h100_3g.40gb:2", ""), node("c", "h100:1", ""), node("d", "h100:1", "")}
	js := append(jobs("s", "h100_3g.40gb", 5, 30), jobs("o", "h100_1g.10gb", 9, 20)...)
	p := Propose(nodes, js, lim)
	check(t, p, "a=all-1g.10gb[o1 o2 o3 o4 o5 o6 o7]", "c=all-3g.40gb[s3 s4]", "d=all-balanced[s5 o8]")
	check(t, Propose(apply(nodes, p), js, lim))

	l := lim
	l.MaxNodes = 1
	seen := map[string]bool{}
	for round := 0; ; round++ {
		p := Propose(nodes, js, l)
		if len(p.Changes) == 0 {
			break
		}
		if round > len(nodes) {
			t.Fatalf("no fixed point after %d rounds", round)
		}
		for _, c := range p.Changes {
			if seen[c.Node] {
				t.Fatalf("round %d changes %s again: %v", round, c.Node, changes(p))
			}
			seen[c.Node] = true
		}
		nodes = apply(nodes, p)
	}
	if len(seen) != 3 {
		t.Errorf("changed %v, want a, c and d", seen)
	}
}

// TestStableRandom holds the stability rule on random fleets and queues:
// applied, a proposal is never followed by another on the same queue,
// and a node is never changed twice.
func TestStableRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	types := []string{"h100_1g.10gb", "h100_3g.40gb", "h100_2g.20gb", "h100"}
	for trial := range 2000 {
		var nodes []Node
		for i := range 1 + r.IntN(8) {
			o := h100.Configs[r.IntN(len(h100.Configs))]
			why := ""
			if r.IntN(4) == 0 {
				why = "busy"
			}
			nodes = append(nodes, Node{Name: fmt.Sprintf("n%d", i), Current: o.Counts, Why: why, Options: h100})
		}
		var js []Job
		for i := range r.IntN(30) {
			js = append(js, job(fmt.Sprint(i), types[r.IntN(len(types))], 1+r.IntN(3), r.IntN(40)))
		}
		l := Limits{MaxNodes: 1 + r.IntN(8), MinWait: 10 * time.Minute, Keep: float64(r.IntN(3)) / 4, Now: now}
		seen := map[string]bool{}
		for round := 0; ; round++ {
			p := Propose(nodes, js, l)
			if round > 0 && l.MaxNodes >= len(nodes) && len(p.Changes) > 0 {
				t.Fatalf("trial %d: proposal %v after one that was not capped", trial, changes(p))
			}
			if len(p.Changes) == 0 {
				break
			}
			for _, c := range p.Changes {
				if seen[c.Node] {
					t.Fatalf("trial %d round %d: %s changed twice: %v", trial, round, c.Node, changes(p))
				}
				seen[c.Node] = true
			}
			nodes = apply(nodes, p)
		}
	}
}
