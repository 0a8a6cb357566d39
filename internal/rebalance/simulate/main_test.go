package main

import (
	"math"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

var testParams = params{seed: 1, nodes: 4, gpus: 8, hours: 24, phaseHours: 8, meanMinutes: 60, load: 0.5,
	reconfMinutes: 5, tick: 5, maxNodes: 1, minWait: 5}

func gres(typ string, n int) []slurmconf.GresCount {
	return []slurmconf.GresCount{{Name: "gpu", Type: typ, Count: n}}
}

// The trace offers the load asked for: the memory slices its jobs hold
// over the run, divided by the fleet's, come to about load.
func TestTraceLoad(t *testing.T) {
	jobs := trace(testParams)
	work := 0.0
	for _, j := range jobs {
		work += j.duration * float64(sizes[j.size].slices)
	}
	got := work / (testParams.hours * 60 * float64(testParams.nodes*64))
	if math.Abs(got-testParams.load) > 0.1 {
		t.Errorf("offered load %.3f, want about %.2f (%d jobs)", got, testParams.load, len(jobs))
	}
}

// A static layout starts only the jobs of its own types: with seven
// 1g.10gb a GPU, every job of another size is still waiting at the end,
// and every 1g.10gb job (few enough here) has started.
func TestStaticServesItsTypesOnly(t *testing.T) {
	p := testParams
	p.load = 0.05
	jobs := trace(p)
	opts := &rebalance.Options{Configs: []rebalance.Option{{Config: "small", Counts: gres("h100_1g.10gb", 56)}}}
	layout := []string{"small", "small", "small", "small"}
	r := simulate(p, jobs, layout, opts, false)
	other := 0
	for _, j := range jobs {
		if j.size != 0 {
			other++
		}
	}
	if r.waiting != other || r.started != len(jobs)-other {
		t.Errorf("waiting %d, started %d; want %d waiting (the jobs not of 1g.10gb) of %d", r.waiting, r.started, other, len(jobs))
	}
	if r.reconfs != 0 {
		t.Errorf("a static layout reconfigured %d times", r.reconfs)
	}
}

// The policy changes a node when jobs wait for a size no node offers,
// and then those jobs start.
func TestPolicyServesWaitingSize(t *testing.T) {
	p := testParams
	p.load = 0.05
	jobs := trace(p)
	opts := &rebalance.Options{Configs: []rebalance.Option{
		{Config: "small", Counts: gres("h100_1g.10gb", 56)},
		{Config: "large", Counts: gres("h100_7g.80gb", 8)},
		{Config: "mixed", Counts: append(gres("h100_3g.40gb", 8), gres("h100_2g.20gb", 8)...)},
	}}
	layout := []string{"small", "small", "small", "small"}
	static := simulate(p, jobs, layout, opts, false)
	r := simulate(p, jobs, layout, opts, true)
	if r.reconfs == 0 || r.waiting >= static.waiting || r.meanWait >= static.meanWait {
		t.Errorf("policy: %d reconfigurations, %d waiting, mean %.1f min; static: %d waiting, mean %.1f min", r.reconfs, r.waiting, r.meanWait, static.waiting, static.meanWait)
	}
}
