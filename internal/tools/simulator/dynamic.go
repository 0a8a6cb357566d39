package main

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"
)

// dynParams are the policy's settings in a run.
type dynParams struct {
	lim       rebalance.PolicyLimits
	tick      float64 // minutes between decisions
	window    float64 // minutes of arrivals the rates are taken over
	long      float64 // minutes of the long-run rates
	fail      float64 // chance that a reconfiguration fails (the node comes back as it was)
	seed      uint64
	noPolicy  bool    // a static run through the event model (tests hold it to statics)
	noPeak    bool    // the policy is not told the peaks
	foresight float64 // >0: the policy is told the true rates of the next this many minutes (a bound)
}

type running struct {
	job   int
	start float64
}

type simNode struct {
	config     int
	used       []int
	run        []running
	draining   bool
	target     int
	out        bool // reconfiguring until back
	drainStart float64
	lastChange float64
}

type event struct {
	at   float64
	kind int // 0 a job ends, 1 a node is back, 2 a job arrives, 3 the policy runs
	a, b int
}

type events []event

func (e events) Len() int { return len(e) }

// Less orders events of one minute by kind (ends free devices before that
// minute's arrivals), then by job or node: tied arrivals come in the trace's
// order, as the static replay starts them.
func (e events) Less(a, b int) bool {
	if e[a].at != e[b].at {
		return e[a].at < e[b].at
	}
	if e[a].kind != e[b].kind {
		return e[a].kind < e[b].kind
	}
	if e[a].a != e[b].a {
		return e[a].a < e[b].a
	}
	return e[a].b < e[b].b
}
func (e events) Swap(a, b int) { e[a], e[b] = e[b], e[a] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// dynResult is a run of the event model.
type dynResult struct {
	start     []float64 // each job's start, -1 if never
	reconfigs int       // begun in the measured window
	drained   float64   // node-minutes draining or out, in the measured window
}

// dynamic runs the jobs on nodes starting in layout (a config index per
// node), the policy deciding every tick. Jobs start first come first served
// per type; a draining node starts none and changes once empty.
func dynamic(jobs []job, types []string, configs []config, layout []int, win window, p dynParams) dynResult {
	nt := len(types)
	nodes := make([]simNode, len(layout))
	for i, c := range layout {
		nodes[i] = simNode{config: c, used: make([]int, nt), lastChange: math.Inf(-1)}
	}
	res := dynResult{start: make([]float64, len(jobs))}
	for i := range res.start {
		res.start[i] = -1
	}
	r := rand.New(rand.NewPCG(p.seed, 0xfa11))
	ev := &events{}
	for i := range jobs {
		*ev = append(*ev, event{at: jobs[i].submit, kind: 2, a: i})
	}
	if !p.noPolicy && len(jobs) > 0 {
		// The policy's ticks fall on multiples of tick from the first
		// after the first arrival, so a trace whose clock starts late
		// (minutes since 1970) costs no ticks before it.
		first := (math.Floor(jobs[0].submit/p.tick) + 1) * p.tick
		*ev = append(*ev, event{at: first, kind: 3})
	}
	heap.Init(ev)
	var submits [][]float64
	if p.foresight > 0 {
		submits = submitsByType(jobs, nt)
	}
	queues := make([][]int, nt) // waiting jobs of each type, first come first
	heads := make([]int, nt)
	// What sacct would say: the arrivals, starts and ends of each type,
	// from which rebalance's builder makes the policy's state.
	hist := rebalance.NewHistory(nt, 0)
	inMeasure := func(a, b float64) float64 { // overlap of [a,b) with the measured window
		return max(0, min(b, win.to)-max(a, win.from))
	}
	startOn := func(n, j int, now float64) {
		nd := &nodes[n]
		nd.used[jobs[j].typ]++
		hist.Start(jobs[j].typ, now)
		nd.run = append(nd.run, running{j, now})
		res.start[j] = now
		heap.Push(ev, event{at: now + jobs[j].dur, kind: 0, a: j, b: n})
	}
	fill := func(n int, now float64) {
		nd := &nodes[n]
		if nd.draining || nd.out {
			return
		}
		for t := range nt {
			for heads[t] < len(queues[t]) && nd.used[t] < configs[nd.config].counts[t] {
				startOn(n, queues[t][heads[t]], now)
				heads[t]++
			}
		}
	}
	beginReconfig := func(n int, now float64) {
		nd := &nodes[n]
		nd.out = true
		if now >= win.from && now < win.to {
			res.reconfigs++
		}
		heap.Push(ev, event{at: now + p.lim.Reconfig, kind: 1, a: n})
	}
	for ev.Len() > 0 {
		e := heap.Pop(ev).(event)
		now := e.at
		if now > win.end {
			break
		}
		switch e.kind {
		case 0: // a job ends
			j, n := e.a, e.b
			nd := &nodes[n]
			t := jobs[j].typ
			nd.used[t]--
			for i, rj := range nd.run {
				if rj.job == j {
					nd.run = append(nd.run[:i], nd.run[i+1:]...)
					break
				}
			}
			hist.End(t, now, jobs[j].dur)
			if nd.draining && len(nd.run) == 0 {
				beginReconfig(n, now)
			} else if !nd.draining && heads[t] < len(queues[t]) {
				startOn(n, queues[t][heads[t]], now)
				heads[t]++
			}
		case 1: // a node is back
			nd := &nodes[e.a]
			res.drained += inMeasure(nd.drainStart, now)
			nd.out, nd.draining = false, false
			if r.Float64() >= p.fail {
				nd.config = nd.target
			}
			nd.lastChange = now
			fill(e.a, now)
		case 2: // a job arrives
			j := e.a
			t := jobs[j].typ
			hist.Arrive(t, now)
			placed := false
			if heads[t] == len(queues[t]) {
				for n := range nodes {
					nd := &nodes[n]
					if !nd.draining && !nd.out && nd.used[t] < configs[nd.config].counts[t] {
						startOn(n, j, now)
						placed = true
						break
					}
				}
			}
			if !placed {
				queues[t] = append(queues[t], j)
			}
		case 3: // the policy, once it has a long window of history
			if now < p.long {
				heap.Push(ev, event{at: now + p.tick, kind: 3})
				continue
			}
			cfgs := make([][]int, len(configs))
			for k, c := range configs {
				cfgs[k] = c.counts
			}
			backlog := make([]int, nt)
			for t := range nt {
				backlog[t] = len(queues[t]) - heads[t]
			}
			fleetNow := make([]rebalance.NodeNow, len(nodes))
			for i := range nodes {
				nd := &nodes[i]
				ends := make([]float64, len(nd.run))
				for k, rj := range nd.run {
					ends[k] = rj.start + jobs[rj.job].limit
				}
				fleetNow[i] = rebalance.NodeNow{Config: nd.config, Busy: nd.used, Ends: ends,
					Draining: nd.draining || nd.out, Target: nd.target, LastChange: nd.lastChange}
			}
			s := hist.State(now, rebalance.Windows{Recent: p.window, Long: p.long}, types, cfgs, backlog, fleetNow)
			if p.noPeak {
				s.Peak = nil
			}
			if p.foresight > 0 {
				foresee(&s, submits, now, p.foresight, p.lim.Undo)
			}
			for _, m := range rebalance.Decide(s, p.lim) {
				nd := &nodes[m.Node]
				nd.draining, nd.target, nd.drainStart = true, m.Config, now
				if len(nd.run) == 0 {
					beginReconfig(m.Node, now)
				}
			}
			heap.Push(ev, event{at: now + p.tick, kind: 3})
		}
	}
	for i := range nodes {
		if nodes[i].draining || nodes[i].out {
			res.drained += inMeasure(nodes[i].drainStart, win.end)
		}
	}
	return res
}

// submitsByType is each type's arrival times, in order, for foresee.
func submitsByType(jobs []job, nt int) [][]float64 {
	out := make([][]float64, nt)
	for _, j := range jobs {
		out[j.typ] = append(out[j.typ], j.submit)
	}
	return out
}

// foresee gives the policy the true rates no controller knows: each type's
// arrivals over the next ahead minutes as its recent rate, and over the next
// undo minutes (a change's reckoned life) as its long-run rate.
func foresee(s *rebalance.PolicyState, submits [][]float64, now, ahead, undo float64) {
	rate := func(span float64) []float64 {
		r := make([]float64, len(submits))
		for t, at := range submits {
			n := sort.SearchFloat64s(at, now+span) - sort.SearchFloat64s(at, now)
			r[t] = float64(n) / span
		}
		return r
	}
	s.Rate = rate(ahead)
	if undo > 0 && s.LongRate != nil {
		s.LongRate = rate(undo)
	}
}
