package main

import (
	"container/heap"
	"math"
	"math/rand/v2"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"
)

// dynParams are the policy's settings in a run.
type dynParams struct {
	lim      rebalance.PolicyLimits
	tick     float64 // minutes between decisions
	window   float64 // minutes of arrivals the rates are taken over
	long     float64 // minutes of the long-run rates
	fail     float64 // chance that a reconfiguration fails (the node comes back as it was)
	seed     uint64
	noPolicy bool // a static run through the event model (tests hold it to statics)
	noPeak   bool // the policy is not told the peaks
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
func (e events) Less(a, b int) bool {
	if e[a].at != e[b].at {
		return e[a].at < e[b].at
	}
	return e[a].kind < e[b].kind
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
// node), the policy deciding every tick. Jobs of a type start first come
// first served on any node in service with a free device of it; a
// draining node starts none and changes once empty.
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
	if !p.noPolicy {
		*ev = append(*ev, event{at: p.tick, kind: 3})
	}
	heap.Init(ev)
	queues := make([][]int, nt) // waiting jobs of each type, first come first
	heads := make([]int, nt)
	// The recent arrivals of each type, and an average of run times.
	arrivals := make([][]float64, nt)
	arrHead := make([]int, nt)
	longHead := make([]int, nt)
	// The jobs that ended over the long window: what sacct gives of run
	// times, whose mean is the policy's service time.
	type completion struct{ at, dur float64 }
	done := make([][]completion, nt)
	doneHead := make([]int, nt)
	doneSum := make([]float64, nt)
	// The most devices of each type in use at once, by hour: the peak
	// over the long window is the largest of its hours.
	inUse := make([]int, nt)
	hourly := map[int][]int{}
	use := func(t, d int, now float64) {
		inUse[t] += d
		h := int(now / 60)
		if hourly[h] == nil {
			hourly[h] = append([]int(nil), inUse...) // what runs on into the hour
		}
		hourly[h][t] = max(hourly[h][t], inUse[t])
	}
	inMeasure := func(a, b float64) float64 { // overlap of [a,b) with the measured window
		return max(0, min(b, win.to)-max(a, win.from))
	}
	startOn := func(n, j int, now float64) {
		nd := &nodes[n]
		nd.used[jobs[j].typ]++
		use(jobs[j].typ, 1, now)
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
			use(t, -1, now)
			for i, rj := range nd.run {
				if rj.job == j {
					nd.run = append(nd.run[:i], nd.run[i+1:]...)
					break
				}
			}
			done[t] = append(done[t], completion{now, jobs[j].dur})
			doneSum[t] += jobs[j].dur
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
			arrivals[t] = append(arrivals[t], now)
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
			s := rebalance.PolicyState{Types: types, Configs: make([][]int, len(configs)),
				Window: min(p.window, now), Peak: make([]int, nt), Rate: make([]float64, nt), LongRate: make([]float64, nt), Mean: make([]float64, nt), Backlog: make([]int, nt), Nodes: make([]rebalance.PolicyNode, len(nodes))}
			for k, c := range configs {
				s.Configs[k] = c.counts
			}
			for t := range nt {
				for arrHead[t] < len(arrivals[t]) && arrivals[t][arrHead[t]] <= now-p.window {
					arrHead[t]++
				}
				s.Rate[t] = float64(len(arrivals[t])-arrHead[t]) / min(p.window, now)
				for longHead[t] < len(arrivals[t]) && arrivals[t][longHead[t]] <= now-p.long {
					longHead[t]++
				}
				s.LongRate[t] = float64(len(arrivals[t])-longHead[t]) / min(p.long, now)
				for doneHead[t] < len(done[t]) && done[t][doneHead[t]].at <= now-p.long {
					doneSum[t] -= done[t][doneHead[t]].dur
					doneHead[t]++
				}
				s.Mean[t] = 60
				if n := len(done[t]) - doneHead[t]; n > 0 {
					s.Mean[t] = doneSum[t] / float64(n)
				}
				s.Backlog[t] = len(queues[t]) - heads[t]
			}
			for h := int((now - p.long) / 60); h <= int(now/60); h++ {
				for t, n := range hourly[h] {
					s.Peak[t] = max(s.Peak[t], n)
				}
			}
			for t := range nt {
				s.Peak[t] = max(s.Peak[t], inUse[t])
			}
			for i := range nodes {
				nd := &nodes[i]
				empty := 0.0
				for _, rj := range nd.run {
					empty = max(empty, rj.start+jobs[rj.job].limit-now)
				}
				s.Nodes[i] = rebalance.PolicyNode{Config: nd.config, Busy: nd.used, EmptyIn: empty,
					Draining: nd.draining || nd.out, Target: nd.target, SinceChange: now - nd.lastChange}
			}
			if p.noPeak {
				s.Peak = nil
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
