package rebalance

// The builder of PolicyState: History takes jobs' arrivals, starts and ends
// in time order, and State makes Decide's state of them. The simulator and
// the rebalance command share it, so the benchmark measures what is proposed.

// Windows are the minutes arrival rates are counted over: Recent for
// the shift (PolicyState.Rate), Long for the long-run rates, the mean
// run time and the peak.
type Windows struct {
	Recent, Long float64
}

// DefaultWindows are the windows the simulator's figures were taken
// with: an hour and a day.
func DefaultWindows() Windows {
	return Windows{Recent: 60, Long: 1440}
}

// History is the jobs seen of each type, in minutes on one clock. Events
// come in time order, none after the time State is asked for; State forgets
// what is older than the long window, so its times must not go back.
type History struct {
	// Since is when the history begins: a window that reaches further
	// back is counted over what the history covers.
	Since float64

	arrivals [][]float64
	arrHead  []int
	longHead []int
	// The jobs that ended, whose mean run time is the policy's service
	// time.
	done     [][]completion
	doneHead []int
	doneSum  []float64
	// The devices of each type in use now, and the most in use at once
	// in each hour (by hour number, time/60).
	inUse  []int
	hourly map[int][]int
}

type completion struct{ at, dur float64 }

// NewHistory is an empty history of types types, beginning at since.
func NewHistory(types int, since float64) *History {
	return &History{Since: since, arrivals: make([][]float64, types), arrHead: make([]int, types),
		longHead: make([]int, types), done: make([][]completion, types), doneHead: make([]int, types),
		doneSum: make([]float64, types), inUse: make([]int, types), hourly: map[int][]int{}}
}

// Arrive records a job of type t submitted at at.
func (h *History) Arrive(t int, at float64) {
	h.arrivals[t] = append(h.arrivals[t], at)
}

// Start records that a job of type t started at at: one more device of
// it in use.
func (h *History) Start(t int, at float64) {
	h.use(t, 1, at)
}

// End records that a job of type t that ran run minutes ended at at.
func (h *History) End(t int, at, run float64) {
	h.use(t, -1, at)
	h.done[t] = append(h.done[t], completion{at, run})
	h.doneSum[t] += run
}

func (h *History) use(t, d int, at float64) {
	h.inUse[t] += d
	hour := int(at / 60)
	if h.hourly[hour] == nil {
		h.hourly[hour] = append([]int(nil), h.inUse...) // what runs on into the hour
	}
	h.hourly[hour][t] = max(h.hourly[hour][t], h.inUse[t])
}

// NodeNow is one node now, as State takes it. Counts are indexed as
// the types.
type NodeNow struct {
	// Config is the index of the node's config, -1 when none.
	Config int
	// Busy is the devices of each type that running jobs hold.
	Busy []int
	// Ends are when (clock minutes) its running jobs reach their time
	// limits.
	Ends []float64
	// Draining says that the node is draining or changing to Target.
	Draining bool
	Target   int
	// LastChange is when it last changed (math.Inf(-1) when never or not
	// known).
	LastChange float64
	Held       bool
}

// State is what Decide decides from at now: each type's arrival rate over
// the recent and long windows, its mean run time (60 when none ended) and
// peak over the long window, its backlog, and the nodes.
func (h *History) State(now float64, w Windows, types []string, configs [][]int, backlog []int, nodes []NodeNow) PolicyState {
	nt := len(types)
	covered := now - h.Since
	s := PolicyState{Types: types, Configs: configs, Window: min(w.Recent, covered), Peak: make([]int, nt),
		Rate: make([]float64, nt), LongRate: make([]float64, nt), Mean: make([]float64, nt),
		Backlog: backlog, Nodes: make([]PolicyNode, len(nodes))}
	for t := range nt {
		arr := h.arrivals[t]
		for h.arrHead[t] < len(arr) && arr[h.arrHead[t]] <= now-w.Recent {
			h.arrHead[t]++
		}
		s.Rate[t] = float64(len(arr)-h.arrHead[t]) / min(w.Recent, covered)
		for h.longHead[t] < len(arr) && arr[h.longHead[t]] <= now-w.Long {
			h.longHead[t]++
		}
		s.LongRate[t] = float64(len(arr)-h.longHead[t]) / min(w.Long, covered)
		for h.doneHead[t] < len(h.done[t]) && h.done[t][h.doneHead[t]].at <= now-w.Long {
			h.doneSum[t] -= h.done[t][h.doneHead[t]].dur
			h.doneHead[t]++
		}
		s.Mean[t] = 60
		if n := len(h.done[t]) - h.doneHead[t]; n > 0 {
			s.Mean[t] = h.doneSum[t] / float64(n)
		}
	}
	for hour := int((now - w.Long) / 60); hour <= int(now/60); hour++ {
		for t, n := range h.hourly[hour] {
			s.Peak[t] = max(s.Peak[t], n)
		}
	}
	for t := range nt {
		s.Peak[t] = max(s.Peak[t], h.inUse[t])
	}
	for i, n := range nodes {
		empty := 0.0
		for _, end := range n.Ends {
			empty = max(empty, end-now)
		}
		s.Nodes[i] = PolicyNode{Config: n.Config, Busy: n.Busy, EmptyIn: empty, Draining: n.Draining,
			Target: n.Target, SinceChange: now - n.LastChange, Held: n.Held}
	}
	return s
}
