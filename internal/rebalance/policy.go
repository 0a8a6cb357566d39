package rebalance

import "math"

// The forecasting policy picks, from what Slurm knows (arrival rates, the
// backlog, jobs' time limits), which nodes to drain and give another config,
// scoring each change by the waiting it saves over a horizon. Decide is pure.

// PolicyLimits bound what Decide does.
type PolicyLimits struct {
	// Horizon is how far ahead (minutes) waiting is counted.
	Horizon float64
	// MaxBusy is the largest share (0 to 1) of a node's devices that may
	// be busy when it is chosen to drain.
	MaxBusy float64
	// MaxDraining is how many nodes may be draining or changing at once.
	MaxDraining int
	// Dwell is how long (minutes) a node keeps a config before it may
	// change again.
	Dwell float64
	// MinGain is the least waiting (job-minutes over the horizon) a
	// change must save, and MinGainShare the least share of the waiting
	// forecast without it.
	MinGain      float64
	MinGainShare float64
	// Reconfig is how long (minutes) a node is out once empty.
	Reconfig float64
	// Starve is how much a change may raise one type's forecast mean
	// wait, as a factor of its wait without the change (a type whose
	// wait rises more vetoes the change), beyond StarveSlack minutes.
	Starve      float64
	StarveSlack float64
	// LongLoad is the most a type that loses devices may be loaded, at its
	// long-run rate, after a change: a demand that paused comes back, and a
	// busy node is slow to win back.
	LongLoad float64
	// Blend is how fast (minutes) the forecast rate moves from the
	// recent rate to the long-run one over the horizon: demand that
	// shifted may shift back. 0 keeps the recent rate throughout.
	Blend float64
	// Undo is how long (minutes) a change is reckoned to last: it must save
	// more than the waiting it adds over that long should demand go back to
	// its long-run rates, for a busy fleet is slow to change back.
	Undo float64
	// SameCount lets a node change only to a config of as many devices:
	// for a unit that is one GPU of a live node, since slurmctld kills
	// every job of a node whose GPU count changes (TestPerGPU).
	SameCount bool
}

// DefaultPolicyLimits are the bounds the simulator's figures were
// taken with (docs/rebalance.md).
func DefaultPolicyLimits() PolicyLimits {
	return PolicyLimits{Horizon: 240, MaxBusy: 0.25, MaxDraining: 2, Dwell: 120, MinGain: 120, MinGainShare: 0.6,
		Reconfig: 5, Starve: 1.25, StarveSlack: 2, LongLoad: 0.7, Blend: 120, Undo: 1440}
}

// PolicyNode is one node as the policy sees it. Counts are devices of
// each type, indexed as PolicyState.Types.
type PolicyNode struct {
	// Config is the index of the node's config in PolicyState.Configs,
	// -1 when it is none of them (the node is then left alone).
	Config int
	// Busy is the devices of each type that running jobs hold.
	Busy []int
	// EmptyIn is when (minutes from now) the last running job reaches
	// its time limit: the latest the node can be empty.
	EmptyIn float64
	// Draining says that the node is draining or changing to Target,
	// ready in EmptyIn plus the reconfiguration time.
	Draining bool
	Target   int
	// SinceChange is the minutes since its last change (a large number
	// when never).
	SinceChange float64
	// Held says the node may not change (out of service, not ours).
	Held bool
}

// PolicyState is what the policy decides from.
type PolicyState struct {
	Types []string
	// Configs are each config's device counts per type.
	Configs [][]int
	// Rate is each type's arrival rate (jobs a minute) over the recent
	// window; Mean its mean run time (minutes); Backlog its pending jobs.
	Rate []float64
	Mean []float64
	// LongRate is each type's arrival rate over a long window (a day).
	LongRate []float64
	// Peak is, for each type, the most devices of it in use at once over
	// the long window (sacct's jobs): a type never loses devices below
	// it, whatever the rates say, for bursts (job arrays) come back.
	Peak []int
	// Window is the minutes Rate was counted over: a recent count
	// within chance of the long-run rate (three standard deviations of
	// a Poisson count) is no shift, and the long-run rate stands.
	Window  float64
	Backlog []int
	Nodes   []PolicyNode
}

// Move is one change Decide makes: drain Node and give it Config.
type Move struct {
	Node   int
	Config int
	// Gain is the waiting it saves over the horizon (job-minutes).
	Gain float64
}

// segment is a stretch of the horizon with a number of devices.
type segment struct {
	from float64
	c    int
}

// Decide picks the changes: again and again, the drain of an eligible node
// to the config that saves the most forecast waiting, while that is at least
// the minimum, no type's wait rises beyond Starve and MaxDraining allows.
func Decide(s PolicyState, lim PolicyLimits) []Move {
	nt := len(s.Types)
	// Each type's capacity over the horizon: the devices of nodes in
	// service now, and those of draining nodes once they are back.
	segs := make([][]segment, nt)
	draining := 0
	for _, n := range s.Nodes {
		switch {
		case n.Draining:
			draining++
			if n.Target >= 0 {
				for t := range nt {
					segs[t] = append(segs[t], segment{n.EmptyIn + lim.Reconfig, s.Configs[n.Target][t]})
				}
			}
		case n.Config >= 0:
			for t := range nt {
				segs[t] = append(segs[t], segment{0, s.Configs[n.Config][t]})
			}
		}
	}
	// With no shift in demand and a layout that carries the long-run rates,
	// a backlog is the queues' own noise, which that layout absorbs: a change
	// for it takes devices from a type whose turn comes next.
	if !shifted(s) && !math.IsInf(steadyWaiting(s, segs), 1) {
		return nil
	}
	var moves []Move
	used := map[int]bool{}
	moved := map[int]int{} // node -> its new config, this round
	for draining < lim.MaxDraining {
		base, baseWait := forecast(s, segs, lim)
		steadyBase := steadyWaiting(s, segs)
		bestGain, bestNode, bestConfig := 0.0, -1, -1
		for i, n := range s.Nodes {
			if n.Held || n.Draining || used[i] || n.Config < 0 || n.SinceChange < lim.Dwell || busyShare(n, s.Configs[n.Config]) > lim.MaxBusy {
				continue
			}
			ready := n.EmptyIn + lim.Reconfig
			for k := range s.Configs {
				if k == n.Config || sameVec(s.Configs[k], s.Configs[n.Config]) || !keepsLongRun(s, n.Config, k, moved, lim) || !servesBacklog(s, n.Config, k) {
					continue
				}
				if lim.SameCount && devices(s.Configs[k]) != devices(s.Configs[n.Config]) {
					continue
				}
				try := make([][]segment, nt)
				for t := range nt {
					try[t] = append(append([]segment(nil), segs[t]...),
						segment{0, -s.Configs[n.Config][t]}, segment{ready, s.Configs[k][t]})
				}
				cost, wait := forecast(s, try, lim)
				gain := base - cost
				if gain < lim.MinGain || gain < lim.MinGainShare*base || gain <= bestGain || starves(wait, baseWait, lim) {
					continue
				}
				// A change that pays only while the recent rates last, and
				// costs more than it saved should demand go back to its
				// long-run rates, is a bet the fleet is slow to undo.
				if s.LongRate != nil && (steadyWaiting(s, try)-steadyBase)*lim.Undo > gain {
					continue
				}
				bestGain, bestNode, bestConfig = gain, i, k
			}
		}
		if bestNode < 0 {
			break
		}
		n := s.Nodes[bestNode]
		ready := n.EmptyIn + lim.Reconfig
		for t := range nt {
			segs[t] = append(segs[t], segment{0, -s.Configs[n.Config][t]}, segment{ready, s.Configs[bestConfig][t]})
		}
		used[bestNode] = true
		moved[bestNode] = bestConfig
		moves = append(moves, Move{Node: bestNode, Config: bestConfig, Gain: bestGain})
		draining++
	}
	return moves
}

// devices is a config's devices, of every type.
func devices(counts []int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// servesBacklog says whether the change from config a to b adds
// devices of a type with jobs pending now: a burst the layout already
// started is no demand to take a node for.
func servesBacklog(s PolicyState, a, b int) bool {
	for t := range s.Types {
		if s.Configs[b][t] > s.Configs[a][t] && s.Backlog[t] > 0 {
			return true
		}
	}
	return false
}

// keepsLongRun says whether every type the change from config a to b
// takes devices from keeps enough of them for its long-run rate and its
// peak, counting the changes already chosen (moved).
func keepsLongRun(s PolicyState, a, b int, moved map[int]int, lim PolicyLimits) bool {
	if s.LongRate == nil {
		return true
	}
	for t := range s.Types {
		lose := s.Configs[a][t] - s.Configs[b][t]
		if lose <= 0 {
			continue
		}
		c := -lose
		for i, n := range s.Nodes {
			if k, ok := moved[i]; ok {
				c += s.Configs[k][t]
				continue
			}
			switch {
			case n.Draining && n.Target >= 0:
				c += s.Configs[n.Target][t]
			case !n.Draining && n.Config >= 0:
				c += s.Configs[n.Config][t]
			}
		}
		if s.LongRate[t]*s.Mean[t] > lim.LongLoad*float64(c) || s.Peak != nil && c < s.Peak[t] {
			return false
		}
	}
	return true
}

// steadyWaiting is the waiting a minute (job-minutes) of the layout the
// segments end in, at the long-run rates, in steady state (Erlang C):
// +Inf where a type cannot keep up.
func steadyWaiting(s PolicyState, segs [][]segment) float64 {
	total := 0.0
	for t := range s.Types {
		c := 0
		for _, sg := range segs[t] {
			c += sg.c
		}
		if s.LongRate[t] > 0 {
			total += s.LongRate[t] * erlangWait(s.LongRate[t], s.Mean[t], max(c, 0))
		}
	}
	return total
}

func busyShare(n PolicyNode, counts []int) float64 {
	busy, all := 0, devices(counts)
	for t := range counts {
		if t < len(n.Busy) {
			busy += n.Busy[t]
		}
	}
	if all == 0 {
		return 0
	}
	return float64(busy) / float64(all)
}

func sameVec(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// starves says whether a type's forecast mean wait rises beyond the
// bound.
func starves(wait, base []float64, lim PolicyLimits) bool {
	for t := range wait {
		if wait[t] > base[t]*lim.Starve+lim.StarveSlack {
			return true
		}
	}
	return false
}

// forecast is the waiting (job-minutes) over the horizon, all types
// together, and each type's mean wait per job, given each type's
// capacity as segments (a device count added from a time on).
func forecast(s PolicyState, segs [][]segment, lim PolicyLimits) (float64, []float64) {
	total := 0.0
	waits := make([]float64, len(s.Types))
	for t := range s.Types {
		rates := rateSteps(s, t, lim)
		cost := typeCost(rates, s.Mean[t], float64(s.Backlog[t]), segs[t], lim.Horizon)
		total += cost
		jobs := float64(s.Backlog[t])
		for i, r := range rates {
			end := lim.Horizon
			if i+1 < len(rates) {
				end = rates[i+1].from
			}
			jobs += r.rate * (end - r.from)
		}
		if jobs > 0 {
			waits[t] = cost / jobs
		}
	}
	return total, waits
}

// shiftedType says whether type t's recent count is beyond chance of its
// long-run rate: three standard deviations of a Poisson count. Without a
// long-run rate or window to test against, every rate is a shift.
func shiftedType(s PolicyState, t int) bool {
	if s.LongRate == nil || s.Window <= 0 {
		return true
	}
	n, e := s.Rate[t]*s.Window, s.LongRate[t]*s.Window
	return math.Abs(n-e) >= 3*math.Sqrt(max(e, 1))
}

// shifted says whether any type's demand shifted.
func shifted(s PolicyState) bool {
	for t := range s.Types {
		if shiftedType(s, t) {
			return true
		}
	}
	return false
}

// rateStep is a forecast arrival rate from a time on.
type rateStep struct {
	from, rate float64
}

// rateSteps is type t's forecast rate over the horizon: the recent rate
// at first, moving to the long-run rate with time constant Blend, in
// steps of half of it.
func rateSteps(s PolicyState, t int, lim PolicyLimits) []rateStep {
	if s.LongRate == nil {
		return []rateStep{{0, s.Rate[t]}}
	}
	if !shiftedType(s, t) {
		return []rateStep{{0, s.LongRate[t]}}
	}
	if lim.Blend <= 0 {
		return []rateStep{{0, s.Rate[t]}}
	}
	var out []rateStep
	step := lim.Blend / 2
	for at := 0.0; at < lim.Horizon; at += step {
		w := math.Exp(-(at + step/2) / lim.Blend)
		out = append(out, rateStep{at, s.LongRate[t] + (s.Rate[t]-s.LongRate[t])*w})
	}
	return out
}

// typeCost is one type's waiting over the horizon: a fluid backlog that
// drains at the rate the devices free beyond arrivals (or grows where they
// cannot keep up), plus arrivals waiting as in an M/M/c queue (Erlang C).
func typeCost(rates []rateStep, mean, backlog float64, segs []segment, horizon float64) float64 {
	if mean <= 0 {
		mean = 60
	}
	// The capacity and rate changes, in time order.
	type step struct {
		at   float64
		dc   int
		rate float64
		isR  bool
	}
	steps := make([]step, 0, len(segs)+len(rates))
	for _, sg := range segs {
		steps = append(steps, step{at: min(sg.from, horizon), dc: sg.c})
	}
	for _, r := range rates {
		steps = append(steps, step{at: r.from, rate: r.rate, isR: true})
	}
	for i := 1; i < len(steps); i++ {
		for j := i; j > 0 && steps[j].at < steps[j-1].at; j-- {
			steps[j], steps[j-1] = steps[j-1], steps[j]
		}
	}
	cost, q, c, now, rate := 0.0, backlog, 0, 0.0, 0.0
	i := 0
	for now < horizon {
		for i < len(steps) && steps[i].at <= now {
			if steps[i].isR {
				rate = steps[i].rate
			} else {
				c += steps[i].dc
			}
			i++
		}
		end := horizon
		if i < len(steps) {
			end = min(steps[i].at, horizon)
		}
		if end <= now {
			continue
		}
		d := end - now
		r := float64(max(c, 0))/mean - rate // net drain rate of the backlog
		// The backlog as a fluid: it drains at r, or grows where the
		// devices cannot keep up.
		switch {
		case r <= 0 || q/r >= d:
			cost += q*d - r*d*d/2
			q = max(0, q-r*d)
		default:
			cost += q * (q / r) / 2
			q = 0
		}
		// Arrivals wait besides as in an M/M/c queue (Erlang C), a steady
		// state, capped at half the segment's length, which an overloaded
		// one waits; so fewer devices never forecast less waiting.
		cost += rate * d * min(erlangWait(rate, mean, max(c, 0)), d/2)
		now = end
	}
	return cost
}

// erlangWait is the mean wait in queue of an M/M/c queue with arrival
// rate rate, mean service mean and c servers; +Inf when unstable.
func erlangWait(rate, mean float64, c int) float64 {
	if rate <= 0 {
		return 0
	}
	a := rate * mean
	if c == 0 || a >= float64(c) {
		return math.Inf(1)
	}
	b := 1.0 // Erlang B by its recursion, stable for large c
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	pw := float64(c) * b / (float64(c) - a*(1-b))
	return pw * mean / (float64(c) - a)
}
