package rebalance

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Why a pending job waits, as Explain says it.
const (
	// WaitBusy: nodes in service have its type, every device of it busy.
	WaitBusy = "busy"
	// WaitLayout: no node in service has its type in its layout.
	WaitLayout = "layout"
	// WaitFragmented: a node in service has enough idle memory slices
	// (idle devices of other sizes) for it, cut into other sizes.
	WaitFragmented = "fragmentation"
	// WaitOther: a node has free devices of its type; the job waits for
	// something else (priority, CPUs, memory, limits: squeue's reason).
	WaitOther = "other"
)

// Explanation is why one pending job waits.
type Explanation struct {
	Job    string `json:"job"`
	Type   string `json:"type"`
	Count  int    `json:"count"`
	Why    string `json:"why"`
	Detail string `json:"detail"`
}

// Slices is what Explain knows of one node's GPUs, from its snapshot:
// each MIG profile's memory slices (its placement size) by name in lower
// case, a whole GPU's, and how many of its GPUs take MIG.
type Slices struct {
	Profiles map[string]int
	Whole    int
	GPUs     int
}

// SlicesOf reads a snapshot's table: its MIG-capable GPUs are one model.
func SlicesOf(n *model.Node) Slices {
	s := Slices{Profiles: map[string]int{}}
	for _, g := range n.GPUs {
		ps := g.MigProfiles()
		if len(ps) > 0 {
			s.GPUs++
		}
		for _, p := range ps {
			for _, pl := range p.Placements {
				s.Whole = max(s.Whole, pl.Start+pl.Size)
			}
			if len(p.Placements) > 0 {
				s.Profiles[strings.ToLower(p.Name)] = p.Placements[0].Size
			}
		}
	}
	return s
}

// NodeSlices is each node's Slices, by its short name, from the
// snapshots and the --hardware declarations.
func NodeSlices(snaps []*model.Node, hw []migplan.Hardware) map[string]Slices {
	out := map[string]Slices{}
	for _, s := range snaps {
		name, _, _ := strings.Cut(s.Hostname, ".")
		out[name] = SlicesOf(s)
	}
	for _, h := range hw {
		s := SlicesOf(h.Snapshot)
		for _, name := range h.Nodes {
			out[name] = s
		}
	}
	return out
}

// profileOf splits a type into the prefix the site's type style gives it
// (h100_) and a profile of s, whose slices it returns; 0 when the type
// names no profile of s (a whole GPU, or another model's).
func (s Slices) profileOf(typ string) (prefix string, slices int) {
	t := strings.ToLower(typ)
	for i := 0; ; {
		if n, ok := s.Profiles[t[i:]]; ok {
			return t[:i], n
		}
		j := strings.IndexAny(t[i:], "_-")
		if j < 0 {
			return "", 0
		}
		i += j + 1
	}
}

// Explain says why each pending job that asks one node for one MIG type
// waits, from slurmctld's node states and each node's slices (a node
// without is no room), or names a reason no layout clears.
func Explain(states map[string]NodeState, jobs []Job, slices map[string]Slices) []Explanation {
	type nodeView struct {
		name       string
		free       map[string]int // idle devices by type
		total      map[string]int
		idleSlices int
		prefixes   map[string]bool // of its types: the model they name
		slices     Slices
	}
	var names []string
	for name := range states {
		names = append(names, name)
	}
	slurmconf.SortHostnames(names)
	var nodes []nodeView
	for _, name := range names {
		st := states[name]
		if st.OutOfService() != "" || len(st.Gres) == 0 {
			continue
		}
		v := nodeView{name: name, free: map[string]int{}, total: map[string]int{}, prefixes: map[string]bool{}, slices: slices[name]}
		for _, c := range st.Gres {
			t := strings.ToLower(c.Type)
			v.total[t] += c.Count
			v.free[t] += c.Count
		}
		busy := 0
		for _, c := range st.Used {
			v.free[strings.ToLower(c.Type)] -= c.Count
			busy += c.Count
		}
		for t, n := range v.free {
			prefix, sl := v.slices.profileOf(t)
			if sl == 0 {
				// A whole GPU: all its slices. Its name is the model's, which
				// AutoDetect's names cut at the first '-' for MIG types.
				model, _, _ := strings.Cut(t, "-")
				prefix, sl = model+"_", v.slices.Whole
			}
			v.prefixes[prefix] = true
			if n > 0 {
				v.idleSlices += n * sl
			}
		}
		if busy == 0 {
			// Nothing runs there: a new layout has every GPU whole.
			v.idleSlices = max(v.idleSlices, v.slices.GPUs*v.slices.Whole)
		}
		nodes = append(nodes, v)
	}
	isMIG := map[string]bool{} // by type, worked out once: nodes share tables
	known := func(typ string) bool {
		if v, done := isMIG[typ]; done {
			return v
		}
		v := false
		for _, s := range slices {
			if _, n := s.profileOf(typ); n > 0 {
				v = true
				break
			}
		}
		isMIG[typ] = v
		return v
	}
	var out []Explanation
	for _, d := range typedRequests(jobs, Limits{}) {
		if !known(d.typ) {
			continue // a whole GPU or a type no profile table names
		}
		e := Explanation{Job: d.id, Type: d.typ, Count: d.count}
		if d.blocked {
			e.Why, e.Detail = WaitOther, fmt.Sprintf("squeue's reason is %s: no layout starts it until that clears", d.reason)
			out = append(out, e)
			continue
		}
		var having, freeOn, fragOn []string
		devices, idle, most, need := 0, 0, 0, 0
		var mostOn []string
		for _, n := range nodes {
			// A node whose layout has fewer devices of the type than the
			// job asks of one node never starts it, busy or not.
			if n.total[d.typ] >= d.count {
				having = append(having, n.name)
				devices += n.total[d.typ]
				idle += max(n.free[d.typ], 0)
			}
			switch {
			case n.total[d.typ] > most:
				most, mostOn = n.total[d.typ], []string{n.name}
			case n.total[d.typ] == most && most > 0:
				mostOn = append(mostOn, n.name)
			}
			// Room is counted only on GPUs that have the profile, of the
			// model the type names (slurmctld matches types by name); a
			// type of the profile style names none.
			prefix, sl := n.slices.profileOf(d.typ)
			switch {
			case n.free[d.typ] >= d.count:
				freeOn = append(freeOn, n.name)
			case sl > 0 && (prefix == "" || n.prefixes[prefix]) && n.idleSlices >= d.count*sl:
				fragOn = append(fragOn, n.name)
				if need == 0 {
					need = sl
				}
			}
		}
		switch {
		case len(freeOn) > 0:
			reason := "priority, CPUs, memory, limits"
			if d.reason != "" {
				reason = d.reason
			}
			e.Why, e.Detail = WaitOther, fmt.Sprintf("%d free on %s: it waits for something else (squeue's reason: %s)", d.count, slurmconf.CompressHostlist(freeOn), reason)
		case len(having) == 0 && most > 0:
			e.Why, e.Detail = WaitLayout, fmt.Sprintf("no node in service has %d %s in its layout (the most is %d, on %s)", d.count, d.typ, most, slurmconf.CompressHostlist(mostOn))
		case len(having) == 0:
			e.Why, e.Detail = WaitLayout, fmt.Sprintf("no node in service has %s in its layout", d.typ)
		case len(fragOn) > 0:
			e.Why, e.Detail = WaitFragmented, fmt.Sprintf("%s %s idle memory slices enough for %d x %d, cut into other sizes; no node has %d free %s", slurmconf.CompressHostlist(fragOn), haveHas(len(fragOn)), d.count, need, d.count, d.typ)
		case idle == 0:
			e.Why, e.Detail = WaitBusy, fmt.Sprintf("all %d %s devices (on %s) are busy, and no node has idle slices enough", devices, d.typ, slurmconf.CompressHostlist(having))
		default:
			e.Why, e.Detail = WaitBusy, fmt.Sprintf("%d of the %d %s devices (on %s) are busy, no node has %d free, and none has idle slices enough", devices-idle, devices, d.typ, slurmconf.CompressHostlist(having), d.count)
		}
		out = append(out, e)
	}
	return out
}

func haveHas(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
