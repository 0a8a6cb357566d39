// Package rebalance proposes MIG layouts for a Slurm fleet from its
// pending queue: for in-service nodes whose GPUs are all idle, the config
// of the site's mig-parted file that lets the most waiting jobs start.
// Propose is pure: it reads nothing and changes nothing. Its demand is the
// jobs that ask one node for one GPU type. Idle nodes offering a wanted type
// are held, so an applied proposal is stable; then, at most MaxNodes times,
// it takes the change that starts the most unmet jobs, never leaving a type
// below Keep of the most the fleet could offer.
package rebalance

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/fleet"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Node is one node of the fleet as Propose sees it.
type Node struct {
	Name string
	// Current is the node's Gres= counts now.
	Current []slurmconf.GresCount
	// Why is why the node may not change ("" when it may): busy GPUs,
	// a state out of service, no state known.
	Why string
	// Hint is what would help the node change, apart from Why, with its
	// leading separator ("" for none).
	Hint string
	// Stale says that its snapshot's counts are not slurmctld's: Why
	// says so, and the policy, which may drain a busy node, holds it too.
	Stale bool
	// RunsJobs says that a job runs there, a CPU job included.
	RunsJobs bool
	// Options are the configs the node may take, with the counts each
	// gives it; nodes of one kind share them.
	Options *Options
}

// Options are the configs a kind of node may take, sorted by name, and
// those it cannot hold.
type Options struct {
	Configs []Option
	Refused []Refused
}

// kind is the configs and the counts each gives, as one string: nodes
// whose Options are of one kind take the same changes.
func (o *Options) kind() string {
	var b strings.Builder
	for _, c := range o.Configs {
		b.WriteString(c.Config + "=" + slurmconf.GresList(c.Counts) + "\n")
	}
	return b.String()
}

// Option is one config and the node's Gres= counts under it.
type Option struct {
	Config string
	Counts []slurmconf.GresCount
}

// Refused is a config a node cannot hold, and why (migplan's refusal),
// with what would help apart (advice.Hinter's words, "" for none).
type Refused struct {
	Config string `json:"config"`
	Why    string `json:"why"`
	Hint   string `json:"-"`
}

// Limits bound a proposal.
type Limits struct {
	MaxNodes int
	MinWait  time.Duration
	// Keep is the share (0 to 1) of each type's count in the fleet that
	// must remain after the changes.
	Keep float64
	Now  time.Time
	// Changing is the nodes in change and the config each goes to (the
	// journal's): its devices are on their way. Abandoned is the nodes
	// whose last change was given up, their jobs outliving the drain.
	Changing  map[string]string
	Abandoned map[string]bool
}

// Proposal is what Propose proposes.
type Proposal struct {
	Changes []Change `json:"changes"`
	// NodeLines are the fleet's slurm.conf lines once the changes are
	// made, nodes of one Gres= on one line (fleet.GroupLines).
	NodeLines []string `json:"node_lines"`
	// Pending is the pending jobs read; Demand those that ask one node
	// for one type of GPU; Waiting those of Demand that waited longer
	// than MinWait.
	Pending int `json:"pending"`
	Demand  int `json:"demand"`
	Waiting int `json:"waiting"`
	// Unserved are the waiting jobs that neither a held layout nor a
	// change serves.
	Unserved []string `json:"unserved"`
	// Held are the nodes that may not change, and why.
	Held []Held `json:"held"`
	// Unoffered are the types waiting jobs ask for that no node offers, now
	// or under an allowed config, sorted. Most often the queue names types
	// otherwise than the snapshots are read (gen's type style and type map).
	Unoffered []string `json:"unoffered,omitempty"`
}

// Change is one node's new config and the jobs it lets start.
type Change struct {
	Node   string   `json:"node"`
	Config string   `json:"config"`
	Gres   string   `json:"gres"`
	Was    string   `json:"was"`
	Jobs   []string `json:"jobs"`
}

// option is the node's allowed config named config, or nil.
func (n *Node) option(config string) *Option {
	if n.Options == nil || config == "" {
		return nil
	}
	for i := range n.Options.Configs {
		if n.Options.Configs[i].Config == config {
			return &n.Options.Configs[i]
		}
	}
	return nil
}

// ConfigNow is the config whose counts the node has now, "" when its
// layout is none of its configs.
func (n *Node) ConfigNow() string {
	if n.Options == nil {
		return ""
	}
	for _, o := range n.Options.Configs {
		if slurmconf.SameGresCounts(o.Counts, n.Current) {
			return o.Config
		}
	}
	return ""
}

// Held is a node left as it is, and why, with what would help apart
// (its leading separator included; "" for none), which the printer says
// after Why.
type Held struct {
	Node string `json:"node"`
	Why  string `json:"why"`
	Hint string `json:"-"`
}

// demandJob is a job of the demand: one type, a count, on one node.
type demandJob struct {
	id      string
	submit  time.Time
	typ     string // lower case: Slurm compares types so
	count   int
	aged    bool
	seq     int    // the place in the queue
	reason  string // squeue's pending reason, if given
	blocked bool   // by a reason no layout clears (Job.Blocked)
}

// Propose works out the changes; nodes may be in any order. Of changes that
// start as many jobs, the one starting the oldest job wins, then the node
// first in hostlist order, then the config first by name.
func Propose(nodes []Node, jobs []Job, lim Limits) *Proposal {
	p := &Proposal{Pending: len(jobs), Changes: []Change{}, Unserved: []string{}, Held: []Held{}}
	demand := demandOf(jobs, lim)
	p.Demand = len(demand)
	wanted := map[string]bool{}
	for _, j := range demand {
		wanted[j.typ] = true
		if j.aged {
			p.Waiting++
		}
	}

	order := make([]string, len(nodes))
	byName := make(map[string]*Node, len(nodes))
	for i := range nodes {
		order[i] = nodes[i].Name
		byName[nodes[i].Name] = &nodes[i]
	}
	slurmconf.SortHostnames(order)

	// Step 3: hold idle nodes offering a wanted type; per type, fit the
	// demand, oldest first, into their room summed over them (exact for jobs
	// of one device) up to the first misfit, so the next run finds no more.
	var free []*Node
	room := map[string]int{}   // type -> room on held nodes
	totals := map[string]int{} // type -> the fleet's count now
	floor := map[string]int{}  // type -> Keep of the most the fleet could offer
	most := map[*Options]map[string]int{}
	biggest := map[string]int{} // type -> the most one eligible node has or may take
	for _, name := range order {
		n := byName[name]
		counts := n.Current
		target := n.option(lim.Changing[name])
		if target != nil {
			counts = target.Counts
		}
		for _, c := range counts {
			totals[strings.ToLower(c.Type)] += c.Count
		}
		mostHere := mostOf(n, most)
		for t, c := range mostHere {
			floor[t] += c
		}
		roomy := false // its counts are room for the wanted types
		switch {
		case target != nil:
			// Draining for the controller: its target is capacity on its
			// way, which the same jobs need not ask of a second node.
			p.Held = append(p.Held, Held{n.Name, "changing to " + target.Config + " (the journal)", ""})
			roomy = offersAny(counts, wanted)
		case n.Why != "":
			p.Held = append(p.Held, Held{n.Name, n.Why, n.Hint})
		case lim.Abandoned[name] && n.RunsJobs:
			// Its jobs outlived the drain once: draining it again while
			// they run would keep it out of service for nothing.
			p.Held = append(p.Held, Held{n.Name, "its last change was abandoned, jobs outliving the drain: taken again once no job runs there", ""})
		case offersAny(counts, wanted):
			roomy = true
		default:
			free = append(free, n)
			for t, c := range mostHere {
				biggest[t] = max(biggest[t], c)
			}
		}
		if roomy {
			for _, c := range counts {
				t := strings.ToLower(c.Type)
				room[t] += c.Count
				biggest[t] = max(biggest[t], c.Count)
			}
		}
	}
	unoffered := map[string]bool{}
	for _, j := range demand {
		if _, offered := floor[j.typ]; j.aged && !offered {
			unoffered[j.typ] = true
		}
	}
	for t := range unoffered {
		p.Unoffered = append(p.Unoffered, t)
	}
	sort.Strings(p.Unoffered)
	for t, n := range floor {
		floor[t] = int(math.Floor(lim.Keep*float64(n) + 1e-9))
	}
	unmet := map[string][]int{}  // type -> indices into demand, oldest first
	beyond := map[string][]int{} // more of the type than any eligible node holds
	blocked := map[string]bool{}
	for i, j := range demand {
		if j.count > biggest[j.typ] {
			// Only a busy or held node may ever start it: as in Slurm's
			// backfill, it does not hold up the younger jobs of its type.
			if j.aged {
				beyond[j.typ] = append(beyond[j.typ], i)
			}
			continue
		}
		if !blocked[j.typ] && j.count <= room[j.typ] {
			room[j.typ] -= j.count
			continue
		}
		blocked[j.typ] = true
		if j.aged {
			unmet[j.typ] = append(unmet[j.typ], i)
		}
	}

	// Step 4: the best change, again and again. Nodes of one kind (one
	// Options and the same counts) are alike: only the first of each
	// free kind is weighed.
	type kind struct {
		nodes []*Node
	}
	var kinds []*kind
	kindOf := map[string]*kind{}
	for _, n := range free {
		key := kindKey(n)
		k := kindOf[key]
		if k == nil {
			k = &kind{}
			kindOf[key] = k
			kinds = append(kinds, k)
		}
		k.nodes = append(k.nodes, n)
	}
	changed := map[string][]slurmconf.GresCount{}
	for len(p.Changes) < lim.MaxNodes {
		var best *Option
		var bestNode *Node
		bestKind, bestGain, bestOldest := -1, 0, 0
		for ki, k := range kinds {
			if len(k.nodes) == 0 || k.nodes[0].Options == nil {
				continue
			}
			n := k.nodes[0]
			for oi := range n.Options.Configs {
				o := &n.Options.Configs[oi]
				if slurmconf.SameGresCounts(o.Counts, n.Current) || !keeps(o.Counts, n.Current, totals, floor) {
					continue
				}
				served := serve(o.Counts, unmet, demand, room, false)
				gain := len(served)
				if gain == 0 {
					continue
				}
				// served is sorted, so served[0] is the oldest job the
				// change starts: of changes that start as many jobs, the
				// one that starts the oldest wins.
				if gain > bestGain || gain == bestGain && (served[0] < bestOldest || served[0] == bestOldest && earlier(n.Name, bestNode.Name)) {
					best, bestNode, bestKind, bestGain, bestOldest = o, n, ki, gain, served[0]
				}
			}
		}
		if bestGain == 0 {
			break
		}
		served := serve(best.Counts, unmet, demand, room, true)
		ch := Change{Node: bestNode.Name, Config: best.Config, Gres: slurmconf.GresList(best.Counts),
			Was: slurmconf.GresList(bestNode.Current), Jobs: make([]string, len(served))}
		for i, d := range served {
			ch.Jobs[i] = demand[d].id
		}
		for _, c := range bestNode.Current {
			totals[strings.ToLower(c.Type)] -= c.Count
		}
		for _, c := range best.Counts {
			totals[strings.ToLower(c.Type)] += c.Count
		}
		p.Changes = append(p.Changes, ch)
		changed[bestNode.Name] = best.Counts
		kinds[bestKind].nodes = kinds[bestKind].nodes[1:]
	}
	for t, ds := range beyond {
		unmet[t] = append(unmet[t], ds...)
	}
	for _, t := range sortedKeys(unmet) {
		ds := unmet[t]
		sort.Ints(ds)
		for _, d := range ds {
			p.Unserved = append(p.Unserved, demand[d].id)
		}
	}
	p.NodeLines = nodeLines(order, byName, changed)
	return p
}

// nodeLines are the fleet's slurm.conf lines, nodes in order, each with
// its counts changed or as they are.
func nodeLines(order []string, byName map[string]*Node, changed map[string][]slurmconf.GresCount) []string {
	groups := make([]fleet.Group, len(order))
	for i, name := range order {
		counts, ok := changed[name]
		if !ok {
			counts = byName[name].Current
		}
		groups[i] = fleet.Group{Nodes: []string{name}, Counts: counts}
	}
	lines := fleet.GroupLines(groups)
	if lines == nil {
		lines = []string{}
	}
	return lines
}

// demandOf is the jobs that ask one node for one type of GPU and that a
// layout may start, oldest first (ties in job id order, so the order
// never depends on the input's).
func demandOf(jobs []Job, lim Limits) []demandJob {
	return slices.DeleteFunc(typedRequests(jobs, lim), func(d demandJob) bool { return d.blocked })
}

// typedRequests is every job that asks one node for one type, in the
// order demandOf gives, those whose reason no layout clears included.
func typedRequests(jobs []Job, lim Limits) []demandJob {
	var out []demandJob
	for _, j := range jobs {
		if j.Nodes != 1 || len(j.GPU) != 1 || j.GPU[0].Type == "" {
			continue
		}
		d := demandJob{id: j.ID, submit: j.Submit, typ: strings.ToLower(j.GPU[0].Type),
			count: j.GPU[0].Count, aged: lim.Now.Sub(j.Submit) > lim.MinWait, seq: len(out), reason: j.Reason, blocked: j.Blocked()}
		out = append(out, d)
	}
	// The order is total (the place in the queue breaks the last ties),
	// so an unstable sort gives one result: a stable sort of 100,000
	// jobs, merging in place, took most of Propose's time.
	slices.SortFunc(out, func(a, b demandJob) int {
		if c := a.submit.Compare(b.submit); c != 0 {
			return c
		}
		switch {
		case idLess(a.id, b.id):
			return -1
		case idLess(b.id, a.id):
			return 1
		}
		return a.seq - b.seq
	})
	return out
}

// idLess orders job ids as numbers where they are (123 before 1000),
// array tasks after their job (123_2 before 123_10).
func idLess(a, b string) bool {
	ja, ta, _ := strings.Cut(a, "_")
	jb, tb, _ := strings.Cut(b, "_")
	if ja != jb {
		return numLess(ja, jb)
	}
	return numLess(ta, tb)
}

func numLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// earlier says whether node a comes before node b in hostlist order.
func earlier(a, b string) bool {
	names := []string{b, a}
	slurmconf.SortHostnames(names)
	return names[0] == a && a != b
}

func offersAny(counts []slurmconf.GresCount, wanted map[string]bool) bool {
	for _, c := range counts {
		if c.Count > 0 && wanted[strings.ToLower(c.Type)] {
			return true
		}
	}
	return false
}

// keeps says whether changing a node from cur to next leaves every type
// at or above its floor.
func keeps(next, cur []slurmconf.GresCount, totals, floor map[string]int) bool {
	delta := map[string]int{}
	for _, c := range cur {
		delta[strings.ToLower(c.Type)] -= c.Count
	}
	for _, c := range next {
		delta[strings.ToLower(c.Type)] += c.Count
	}
	for t, d := range delta {
		if d < 0 && totals[t]+d < floor[t] {
			return false
		}
	}
	return true
}

// serve is the unmet jobs, oldest first per type, that the held nodes' room
// and a node with counts would let start. With update, the node is counted
// as held: its room is added and the jobs it serves leave the unmet demand.
func serve(counts []slurmconf.GresCount, unmet map[string][]int, demand []demandJob, room map[string]int, update bool) []int {
	var out []int
	for _, c := range counts {
		t := strings.ToLower(c.Type)
		left := room[t] + c.Count
		list := unmet[t]
		k := 0
		for k < len(list) && demand[list[k]].count <= left {
			left -= demand[list[k]].count
			out = append(out, list[k])
			k++
		}
		if update {
			room[t], unmet[t] = left, list[k:]
		}
	}
	sort.Ints(out)
	return out
}

// mostOf is the most of each type the node could offer, now or under any
// of its configs. Keep is a share of the fleet's sum of these, which no
// change alters, so that a second run does not allow what the first refused.
func mostOf(n *Node, cache map[*Options]map[string]int) map[string]int {
	opt, ok := cache[n.Options]
	if !ok {
		opt = map[string]int{}
		if n.Options != nil {
			for _, o := range n.Options.Configs {
				for _, c := range o.Counts {
					t := strings.ToLower(c.Type)
					opt[t] = max(opt[t], c.Count)
				}
			}
		}
		cache[n.Options] = opt
	}
	out := make(map[string]int, len(opt)+len(n.Current))
	for t, c := range opt {
		out[t] = c
	}
	for _, c := range n.Current {
		t := strings.ToLower(c.Type)
		out[t] = max(out[t], c.Count)
	}
	return out
}

// kindKey is what nodes of one kind share: their options and counts.
func kindKey(n *Node) string {
	var b strings.Builder
	b.WriteString(slurmconf.GresList(n.Current))
	if n.Options != nil && len(n.Options.Configs) > 0 {
		b.WriteByte('|')
		// Options are shared by pointer among the nodes of a kind.
		fmt.Fprintf(&b, "%p", n.Options)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
