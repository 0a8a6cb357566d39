package rebalance

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Slurm's view, for the policy: buildSlurmState builds Decide's state from
// the queue, the node states and sacct's history through History.State, as
// the simulator does; ProposeByPolicy turns Decide's moves into a Proposal.

// SlurmInput is what Slurm says now.
type SlurmInput struct {
	Nodes   []Node
	States  map[string]NodeState
	Jobs    []Job    // the pending queue (ParseQueue)
	History []Record // sacct's jobs (ParseHistory)
	Now     time.Time
	// Changing are the nodes rebalance --apply is changing, each with the
	// config it goes to, and LastChange when each node last changed:
	// both from its journal, which Slurm's text does not hold.
	Changing   map[string]string
	LastChange map[string]time.Time
	// Abandoned is the nodes whose last change was given up, their jobs
	// outliving the drain: held while a job runs there.
	Abandoned map[string]bool
}

// slurmState is Decide's state and how its indices map back.
type slurmState struct {
	state   PolicyState
	names   []string // node names, as state.Nodes
	configs []Option // as state.Configs
	held    []Held
}

// clock is the policy's clock: minutes since the Unix epoch.
func clock(t time.Time) float64 {
	return float64(t.UnixNano()) / 60e9
}

// buildSlurmState builds Decide's state for the kind most nodes are. Held:
// nodes of other kinds, out of service, unknown to slurmctld or in none of
// its configs. Without the journal, no node is draining or changed lately.
func buildSlurmState(in SlurmInput, w Windows) slurmState {
	order := make([]string, len(in.Nodes))
	byName := make(map[string]*Node, len(in.Nodes))
	for i := range in.Nodes {
		order[i] = in.Nodes[i].Name
		byName[order[i]] = &in.Nodes[i]
	}
	slurmconf.SortHostnames(order)
	// The kind: the configs and their counts most nodes share (the first
	// such in hostlist order on a tie). Nodes of the same GPUs in other
	// MIG layouts have Options of their own, with the same content.
	kinds := map[*Options]string{} // nodes of one snapshot share their Options
	kindOf := func(o *Options) string {
		k, ok := kinds[o]
		if !ok {
			k = o.kind()
			kinds[o] = k
		}
		return k
	}
	count := map[string]int{}
	var ref *Options
	for _, name := range order {
		o := byName[name].Options
		if o == nil || len(o.Configs) == 0 {
			continue
		}
		count[kindOf(o)]++
		if ref == nil || count[kindOf(o)] > count[kindOf(ref)] {
			ref = o
		}
	}
	sameKind := func(o *Options) bool { return o != nil && ref != nil && kindOf(o) == kindOf(ref) }
	var out slurmState
	typeSet := map[string]bool{}
	if ref != nil {
		out.configs = ref.Configs
		for _, o := range ref.Configs {
			for _, c := range o.Counts {
				typeSet[strings.ToLower(c.Type)] = true
			}
		}
	}
	var types []string
	for t := range typeSet {
		types = append(types, t)
	}
	sort.Strings(types)
	index := map[string]int{}
	for i, t := range types {
		index[t] = i
	}
	vec := func(counts []slurmconf.GresCount) ([]int, bool) {
		v := make([]int, len(types))
		for _, c := range counts {
			i, ok := index[strings.ToLower(c.Type)]
			if !ok {
				return nil, false
			}
			v[i] += c.Count
		}
		return v, true
	}
	configs := make([][]int, len(out.configs))
	for k, o := range out.configs {
		configs[k], _ = vec(o.Counts)
	}

	now := clock(in.Now)
	// Each node's running jobs' ends: their start and time limit, from
	// sacct.
	ends := map[string][]float64{}
	for _, r := range in.History {
		if r.Start.IsZero() || !r.End.IsZero() || r.Start.After(in.Now) {
			continue
		}
		end := clock(r.Start) + r.Limit
		if math.IsNaN(end) {
			end = math.Inf(1) // a partition's limit, not said: the node may not empty
		}
		for _, n := range r.Nodes {
			ends[n] = append(ends[n], end)
		}
	}
	nodes := make([]NodeNow, len(order))
	for i, name := range order {
		n := byName[name]
		st, known := in.States[name]
		nn := NodeNow{Config: -1, Busy: make([]int, len(types)), Ends: ends[name], LastChange: math.Inf(-1)}
		cur, ok := vec(n.Current)
		if ok {
			for k, c := range configs {
				if sameVec(c, cur) {
					nn.Config = k
					break
				}
			}
		}
		for _, u := range st.Used {
			if t, ok := index[strings.ToLower(u.Type)]; ok {
				nn.Busy[t] += u.Count
			}
		}
		why, hint := "", ""
		switch {
		case !known || n.Options == nil || n.Stale:
			why, hint = n.Why, n.Hint
		case st.OutOfService() != "":
			why = st.OutOfService()
		case !sameKind(n.Options):
			why = fmt.Sprintf("other GPUs than %s's: the policy weighs one kind of node, the kind most nodes are", firstOf(order, byName, ref))
		case nn.Config < 0:
			why = fmt.Sprintf("its Gres=%s is none of the allowed configs", slurmconf.GresList(n.Current))
		case in.Abandoned[name] && st.RunsJobs():
			why = "its last change was abandoned, jobs outliving the drain: taken again once no job runs there"
		}
		if target, ok := in.Changing[name]; ok && sameKind(n.Options) {
			// Drained for the controller's change: its target's devices
			// are on their way, and it takes no other change.
			for k, o := range out.configs {
				if o.Config == target {
					nn.Draining, nn.Target, why, hint = true, k, "", ""
				}
			}
			if !nn.Draining {
				why, hint = "changing to "+target+", none of the allowed configs", ""
			}
		}
		if t, ok := in.LastChange[name]; ok {
			nn.LastChange = clock(t)
		}
		if why != "" {
			nn.Held = true
			out.held = append(out.held, Held{Node: name, Why: why, Hint: hint})
		}
		nodes[i] = nn
	}

	// The history, replayed in time order: arrivals (a pending array's
	// tasks each), starts and ends of the jobs of one node and one
	// type, counted in devices for the peaks.
	type event struct {
		at   float64
		kind int // 0 an end, 1 an arrival, 2 a start
		t, n int
		run  float64
	}
	var events []event
	since := now - w.Long
	first := math.Inf(1)
	for _, r := range in.History {
		t, ok := index[r.Type]
		if !ok || len(r.Nodes) > 1 || r.Submit.After(in.Now) {
			continue
		}
		sub := clock(r.Submit)
		first = min(first, sub)
		events = append(events, event{at: sub, kind: 1, t: t, n: r.Tasks})
		if r.Start.IsZero() || r.Start.After(in.Now) {
			continue
		}
		start := clock(r.Start)
		events = append(events, event{at: start, kind: 2, t: t, n: r.Count})
		if !r.End.IsZero() && !r.End.After(in.Now) {
			end := clock(r.End)
			events = append(events, event{at: end, kind: 0, t: t, n: r.Count, run: end - start})
		}
	}
	// A history shorter than the long window is counted over what it
	// covers, from its first submit, but never less than the recent
	// window (an empty history is a quiet day).
	since = max(since, min(first, now-w.Recent))
	slices.SortStableFunc(events, func(a, b event) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return a.kind - b.kind
	})
	h := NewHistory(len(types), since)
	for _, e := range events {
		switch e.kind {
		case 1:
			for range e.n {
				h.Arrive(e.t, e.at)
			}
		case 2:
			for range e.n {
				h.Start(e.t, e.at)
			}
		case 0:
			for range e.n {
				h.End(e.t, e.at, e.run)
			}
		}
	}
	backlog := make([]int, len(types))
	for _, j := range in.Jobs {
		if j.Nodes != 1 || len(j.GPU) != 1 {
			continue
		}
		if t, ok := index[strings.ToLower(j.GPU[0].Type)]; ok {
			backlog[t]++
		}
	}
	out.state = h.State(now, w, types, configs, backlog, nodes)
	out.names = order
	return out
}

// firstOf is the first node, in order, of the kind o.
func firstOf(order []string, byName map[string]*Node, o *Options) string {
	for _, name := range order {
		if byName[name].Options == o {
			return name
		}
	}
	return ""
}

// ProposeByPolicy is Decide's proposal as a Proposal: each move a Change
// with the pending jobs, oldest first, its gained devices serve. A history
// whose GPU jobs name none of the nodes' types is an error: no demand shows.
func ProposeByPolicy(in SlurmInput, w Windows, lim PolicyLimits, minWait time.Duration) (*Proposal, error) {
	s := buildSlurmState(in, w)
	gpuJobs, typed := 0, 0
	for _, r := range in.History {
		if r.GPU {
			gpuJobs++
		}
		if slices.Contains(s.state.Types, r.Type) {
			typed++
		}
	}
	if gpuJobs > 0 && typed == 0 {
		return nil, fmt.Errorf("none of its %d GPU jobs names a GPU type of the nodes (%s): sacct names a type only where slurm.conf's AccountingStorageTRES lists gres/gpu:TYPE", gpuJobs, strings.Join(s.state.Types, ", "))
	}
	p := &Proposal{Pending: len(in.Jobs), Changes: []Change{}, Unserved: []string{}, Held: s.held}
	if p.Held == nil {
		p.Held = []Held{}
	}
	demand := demandOf(in.Jobs, Limits{Now: in.Now, MinWait: minWait})
	p.Demand = len(demand)
	for _, j := range demand {
		if j.aged {
			p.Waiting++
		}
	}
	byName := map[string]*Node{}
	for i := range in.Nodes {
		byName[in.Nodes[i].Name] = &in.Nodes[i]
	}
	// The idle devices in service start the oldest jobs of their type, up
	// to the first that does not fit, as Propose counts room; a change
	// starts some of the rest, and what neither starts is unserved.
	room := map[string]int{}
	for name, st := range in.States {
		if _, changing := in.Changing[name]; changing || st.OutOfService() != "" {
			continue
		}
		for _, c := range st.Gres {
			room[strings.ToLower(c.Type)] += c.Count
		}
		for _, u := range st.Used {
			room[strings.ToLower(u.Type)] -= u.Count
		}
	}
	taken := map[int]bool{}
	full := map[string]bool{}
	for i, j := range demand {
		if !full[j.typ] && j.count <= room[j.typ] {
			room[j.typ] -= j.count
			taken[i] = true
			continue
		}
		full[j.typ] = true
	}
	changed := map[string][]slurmconf.GresCount{}
	for _, m := range Decide(s.state, lim) {
		name := s.names[m.Node]
		n := byName[name]
		o := s.configs[m.Config]
		ch := Change{Node: name, Config: o.Config, Gres: slurmconf.GresList(o.Counts), Was: slurmconf.GresList(n.Current), Jobs: []string{}}
		from := s.state.Configs[s.state.Nodes[m.Node].Config]
		for t, typ := range s.state.Types {
			gain := s.state.Configs[m.Config][t] - from[t]
			for i, j := range demand {
				if gain <= 0 {
					break
				}
				if j.typ == typ && !taken[i] && j.count <= gain {
					taken[i] = true
					gain -= j.count
					ch.Jobs = append(ch.Jobs, j.id)
				}
			}
		}
		p.Changes = append(p.Changes, ch)
		changed[name] = o.Counts
	}
	unserved := map[string][]string{}
	for i, j := range demand {
		if j.aged && !taken[i] {
			unserved[j.typ] = append(unserved[j.typ], j.id)
		}
	}
	for _, t := range sortedKeys(unserved) {
		p.Unserved = append(p.Unserved, unserved[t]...)
	}
	p.NodeLines = nodeLines(s.names, byName, changed)
	return p, nil
}
