package rebalance

import (
	"fmt"
	"strings"

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

// ProfileSlices is the memory slices of each MIG profile of the GPUs
// given (a profile's placement size), by profile name in lower case.
func ProfileSlices(gpus []*model.Node) map[string]int {
	out := map[string]int{}
	for _, n := range gpus {
		for _, g := range n.GPUs {
			for _, p := range g.MigProfiles() {
				if len(p.Placements) > 0 {
					out[strings.ToLower(p.Name)] = p.Placements[0].Size
				}
			}
		}
	}
	return out
}

// slicesOf is a type's memory slices: its name ends in its profile
// (h100_3g.40gb), found in slices; 0 when it is no MIG profile known.
func slicesOf(typ string, slices map[string]int) int {
	t := strings.ToLower(typ)
	for {
		if n, ok := slices[t]; ok {
			return n
		}
		i := strings.IndexAny(t, "_-")
		if i < 0 {
			return 0
		}
		t = t[i+1:]
	}
}

// Explain says why each pending job that asks one node for one MIG type
// waits, from slurmctld's node states, counting idle devices of other types
// in memory slices (slices, by profile; a type it lacks is no MIG type).
func Explain(states map[string]NodeState, jobs []Job, slices map[string]int) []Explanation {
	type nodeView struct {
		name       string
		free       map[string]int // idle devices by type
		total      map[string]int
		idleSlices int
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
		v := nodeView{name: name, free: map[string]int{}, total: map[string]int{}}
		for _, c := range st.Gres {
			t := strings.ToLower(c.Type)
			v.total[t] += c.Count
			v.free[t] += c.Count
		}
		for _, c := range st.Used {
			v.free[strings.ToLower(c.Type)] -= c.Count
		}
		for t, n := range v.free {
			if n > 0 {
				v.idleSlices += n * slicesOf(t, slices)
			}
		}
		nodes = append(nodes, v)
	}
	var out []Explanation
	for _, d := range demandOf(jobs, Limits{}) {
		need := slicesOf(d.typ, slices)
		if need == 0 {
			continue // a whole GPU or a type no profile table names
		}
		e := Explanation{Job: d.id, Type: d.typ, Count: d.count}
		var having, freeOn, fragOn []string
		devices, most := 0, 0
		var mostOn []string
		for _, n := range nodes {
			// A node whose layout has fewer devices of the type than the
			// job asks of one node never starts it, busy or not.
			if n.total[d.typ] >= d.count {
				having = append(having, n.name)
				devices += n.total[d.typ]
			}
			switch {
			case n.total[d.typ] > most:
				most, mostOn = n.total[d.typ], []string{n.name}
			case n.total[d.typ] == most && most > 0:
				mostOn = append(mostOn, n.name)
			}
			switch {
			case n.free[d.typ] >= d.count:
				freeOn = append(freeOn, n.name)
			case n.idleSlices-max(n.free[d.typ], 0)*need >= d.count*need:
				fragOn = append(fragOn, n.name)
			}
		}
		switch {
		case len(freeOn) > 0:
			e.Why, e.Detail = WaitOther, fmt.Sprintf("%d free on %s: it waits for something else (squeue's reason: priority, CPUs, memory, limits)", d.count, slurmconf.CompressHostlist(freeOn))
		case len(having) == 0 && most > 0:
			e.Why, e.Detail = WaitLayout, fmt.Sprintf("no node in service has %d %s in its layout (the most is %d, on %s)", d.count, d.typ, most, slurmconf.CompressHostlist(mostOn))
		case len(having) == 0:
			e.Why, e.Detail = WaitLayout, fmt.Sprintf("no node in service has %s in its layout", d.typ)
		case len(fragOn) > 0:
			e.Why, e.Detail = WaitFragmented, fmt.Sprintf("%s %s idle memory slices enough for %d x %d, cut into other sizes; no node has %d free %s", slurmconf.CompressHostlist(fragOn), haveHas(len(fragOn)), d.count, need, d.count, d.typ)
		default:
			e.Why, e.Detail = WaitBusy, fmt.Sprintf("all %d %s devices (on %s) are busy, and no node has idle slices enough", devices, d.typ, slurmconf.CompressHostlist(having))
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
