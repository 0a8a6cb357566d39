package main

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
)

// sizeResult and policyResult are the JSON a run prints.
type sizeResult struct {
	MeanWait  float64 `json:"mean_wait_min"`
	Jobs      int     `json:"jobs"`
	Unstarted int     `json:"unstarted"`
}

type policyResult struct {
	Policy    string                `json:"policy"`
	Layout    string                `json:"layout"`
	MeanWait  float64               `json:"mean_wait_min"`
	P95       float64               `json:"p95_wait_min"`
	PerSize   map[string]sizeResult `json:"per_size"`
	Jobs      int                   `json:"jobs"`
	Unstarted int                   `json:"unstarted"`
	Failing   bool                  `json:"failing"`
	Reconfigs float64               `json:"reconfigs_per_node_hour"`
	Drained   float64               `json:"drained_node_hours"`
	Seed      uint64                `json:"seed"`
	Workload  string                `json:"workload"`
	Load      float64               `json:"load"`
	Gran      string                `json:"granularity"`
	win       window
}

// summarise makes a result from each measured job's wait (-1 when
// unstarted).
func summarise(f *fleetDef, in *instance, start func(i int) float64) policyResult {
	r := policyResult{PerSize: map[string]sizeResult{}}
	var waits []float64
	sums := make([]float64, len(f.types))
	jobs := make([]int, len(f.types))
	unst := make([]int, len(f.types))
	for i := range in.jobs {
		j := &in.jobs[i]
		if !in.win.measured(j) {
			continue
		}
		jobs[j.typ]++
		s := start(i)
		if s < 0 {
			unst[j.typ]++
			continue
		}
		waits = append(waits, s-j.submit)
		sums[j.typ] += s - j.submit
	}
	total := 0.0
	for t := range f.types {
		if jobs[t] == 0 {
			continue
		}
		sr := sizeResult{Jobs: jobs[t], Unstarted: unst[t]}
		if n := jobs[t] - unst[t]; n > 0 {
			sr.MeanWait = sums[t] / float64(n)
		}
		r.PerSize[profileOf(f.types[t])] = sr
		r.Jobs += jobs[t]
		r.Unstarted += unst[t]
		total += sums[t]
		if float64(unst[t]) > 0.005*float64(jobs[t]) {
			r.Failing = true
		}
	}
	if len(waits) > 0 {
		sort.Float64s(waits)
		r.MeanWait = total / float64(len(waits))
		r.P95 = waits[int(math.Ceil(0.95*float64(len(waits))))-1]
	}
	return r
}

// staticResult is a static layout's result, from the per-type queues.
func staticResult(f *fleetDef, in *instance, st *statics, counts []int) policyResult {
	starts := staticStarts(in, st, counts)
	return summarise(f, in, func(i int) float64 { return starts[i] })
}

// staticStarts is each job's start (-1 if never) under a static layout of
// counts devices of each type: its type's queue, first come first served.
func staticStarts(in *instance, st *statics, counts []int) []float64 {
	starts := make([]float64, len(in.jobs))
	for i := range starts {
		starts[i] = -1
	}
	// Replay each type's queue with its devices to get each job's start.
	for t, idx := range st.byType {
		c := counts[t]
		free := make(floatHeap, min(c, len(idx)))
		for _, i := range idx {
			j := &in.jobs[i]
			if len(free) == 0 {
				break
			}
			s := max(j.submit, free[0])
			if s > in.win.end {
				break
			}
			starts[i] = s
			free[0] = s + j.dur
			heap.Fix(&free, 0)
		}
	}
	return starts
}

// runSeed runs one seed of instance in: every uniform static layout, the
// best static layout, and the policy.
func runSeed(o options, f *fleetDef, in *instance, seed uint64) ([]policyResult, error) {
	if err := checkRun(o, in); err != nil {
		return nil, err
	}
	st := newStatics(in.jobs, len(f.types), in.win)
	search := distinctConfigs(f.configs, in.wanted)
	// The LP's layout is over all configs; map it onto the distinct ones.
	var lp []float64
	if len(search) > 0 {
		lp = make([]float64, len(search))
		for k, v := range in.lp {
			for i, c := range search {
				if c.name == f.configs[k].name {
					lp[i] += v
				}
			}
		}
	}
	var out []policyResult
	bestX, _ := st.searchStatic(search, o.nodes, lp, seed, o.restarts)
	best := staticResult(f, in, st, fleetCounts(f, search, bestX))
	best.Policy, best.Layout = "static-best", layoutName(search, bestX)
	out = append(out, best)
	for k, c := range f.configs {
		x := make([]int, len(f.configs))
		x[k] = o.nodes
		r := staticResult(f, in, st, fleetCounts(f, f.configs, x))
		r.Policy, r.Layout = "static:"+c.name, layoutName(f.configs, x)
		out = append(out, r)
	}
	// The policy, from the best static layout or the one asked for.
	startX := make([]int, len(f.configs))
	if o.start == "static-best" {
		for i, n := range bestX {
			for k, c := range f.configs {
				if c.name == search[i].name {
					startX[k] += n
				}
			}
		}
	} else {
		var err error
		if startX, err = parseLayout(o.start, f, o.nodes); err != nil {
			return nil, err
		}
	}
	var layout []int
	for k, n := range startX {
		for range n {
			layout = append(layout, k)
		}
	}
	dp := o.dyn
	dp.seed = seed
	dr := dynamic(in.jobs, f.types, f.configs, layout, in.win, dp)
	pol := summarise(f, in, func(i int) float64 { return dr.start[i] })
	pol.Policy, pol.Layout = "rebalance", "from "+layoutName(f.configs, startX)
	hours := (in.win.to - in.win.from) / 60
	// Per node: at gpu granularity a node is o.unit units, and each
	// GPU's change counts as one of its node's.
	pol.Reconfigs = float64(dr.reconfigs) / (float64(o.nodes) / float64(max(o.unit, 1))) / hours
	pol.Drained = dr.drained / 60 / float64(max(o.unit, 1))
	out = append(out, pol)
	if o.oracle > 0 {
		starts := oracleBound(in.jobs, len(f.types), in.win, search, o.nodes, o.oracle, seed)
		r := summarise(f, in, func(i int) float64 { return starts[i] })
		r.Policy, r.Layout = "oracle", fmt.Sprintf("best static of each %g min, switched instantly, each from empty", o.oracle)
		out = append(out, r)
	}
	for i := range out {
		out[i].Seed, out[i].Workload, out[i].Load, out[i].win = seed, nameOf(o), in.load, in.win
		out[i].Gran = o.granularity
	}
	return out, nil
}
