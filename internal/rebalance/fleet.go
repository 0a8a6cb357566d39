package rebalance

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Evaluator works out, with migplan, the configs each node may take and
// the Gres= counts each gives it, as plan prints them. Nodes whose GPUs are
// alike (models, profile tables, layouts) are one kind, worked out once.
type Evaluator struct {
	Configs []*migplan.Selected
	Gres    gresgen.Options
	kinds   map[string]*evaluated
	tables  tables
}

// tables numbers the profile tables the evaluator has seen, so that a
// node's kind names its GPUs' tables by number. Equal tables are one
// pointer (model.Tables), so a table is its pointer.
type tables map[*model.ProfileTable]int

// id is the table's number; 0 for no table.
func (t *tables) id(table *model.ProfileTable) int {
	if table == nil {
		return 0
	}
	if *t == nil {
		*t = tables{}
	}
	id, ok := (*t)[table]
	if !ok {
		id = len(*t) + 1
		(*t)[table] = id
	}
	return id
}

type evaluated struct {
	current []slurmconf.GresCount
	options *Options
}

// Node is what the evaluator makes of one node's model: its counts now
// and its options. An error other than a config's refusal (a type name
// that clashes) is returned.
func (e *Evaluator) Node(n *model.Node) ([]slurmconf.GresCount, *Options, error) {
	key := e.nodeKind(n)
	if k, ok := e.kinds[key]; ok {
		return k.current, k.options, nil
	}
	per, err := gresgen.GPUCounts(n, e.Gres)
	if err != nil {
		return nil, nil, err
	}
	opts, err := e.options(n, false)
	if err != nil {
		return nil, nil, err
	}
	k := &evaluated{current: gresgen.SumCounts(per), options: opts}
	if e.kinds == nil {
		e.kinds = map[string]*evaluated{}
	}
	e.kinds[key] = k
	return k.current, k.options, nil
}

// Kind is the evaluator's view of a snapshot standing for several nodes of
// one hardware (migplan.Hardware): the configs whose counts do not depend on
// a node's layout, and the layouts (by layoutKey) such a node may be in now.
type Kind struct {
	Options *Options
	layouts map[string]bool
}

// Kind works out ref's kind. A config that leaves one of its GPUs as it
// is (no entry takes it) would give each node the counts of its own
// layout there, which ref does not know: it is refused for the kind.
func (e *Evaluator) Kind(ref *model.Node) (*Kind, error) {
	per, err := gresgen.GPUCounts(ref, e.Gres)
	if err != nil {
		return nil, err
	}
	opts, err := e.options(ref, true)
	if err != nil {
		return nil, err
	}
	k := &Kind{Options: opts, layouts: map[string]bool{layoutKey(gresgen.SumCounts(per)): true}}
	for _, o := range opts.Configs {
		k.layouts[layoutKey(o.Counts)] = true
	}
	return k, nil
}

// options works out n's configs with migplan. With shared, n stands for
// other nodes too, and a config that leaves one of its MIG-capable GPUs
// as it is, is refused.
func (e *Evaluator) options(n *model.Node, shared bool) (*Options, error) {
	opts := &Options{}
	for _, sel := range e.Configs {
		plan, err := migplan.Make(n, sel)
		var refusal *migplan.Refusal
		switch {
		case errors.As(err, &refusal):
			r := Refused{Config: sel.Name, Why: refusal.Error()}
			if h := advice.Hinter(nil); errors.As(err, &h) {
				r.Hint = h.Hint()
			}
			opts.Refused = append(opts.Refused, r)
			continue
		case err != nil:
			return nil, err
		}
		if g := plan.OwnLayout(); shared && g != nil {
			opts.Refused = append(opts.Refused, Refused{Config: sel.Name,
				Why:  fmt.Sprintf("it leaves GPU %d (%s) as it is, so its counts are each node's own", g.Index, g.Name),
				Hint: "; give the node's own snapshot"})
			continue
		}
		slurm, err := plan.Counts("", e.Gres)
		if err != nil {
			return nil, err
		}
		opts.Configs = append(opts.Configs, Option{Config: sel.Name, Counts: countsOf(slurm)})
	}
	return opts, nil
}

// layoutKey is a Gres= list as a set: its types (without case) and
// counts, in type order, without the types counted 0.
func layoutKey(counts []slurmconf.GresCount) string {
	m := map[string]int{}
	for _, c := range counts {
		m[strings.ToLower(c.Type)] += c.Count
	}
	items := make([]string, 0, len(m))
	for t, c := range m {
		if c != 0 {
			items = append(items, t+":"+strconv.Itoa(c))
		}
	}
	sort.Strings(items)
	return strings.Join(items, ",")
}

// countsOf are plan's node counts, summed over its GPUs.
func countsOf(s *migplan.Slurm) []slurmconf.GresCount {
	per := make([][]slurmconf.GresCount, len(s.GPUs))
	for i, g := range s.GPUs {
		for _, c := range g.Gres {
			per[i] = append(per[i], slurmconf.GresCount{Name: "gpu", Type: c.Type, Count: c.Count})
		}
	}
	return gresgen.SumCounts(per)
}

// nodeKind is what decides what migplan and gresgen make of a node: for
// each GPU its index, model, PCI id, MIG mode, MIG devices' profiles and
// profile table (every field that plan reads).
func (e *Evaluator) nodeKind(n *model.Node) string {
	// Appended by hand, not with fmt, and the tables by number: this
	// runs once for each node of the fleet.
	b := make([]byte, 0, 256)
	num := func(v int) { b = strconv.AppendInt(b, int64(v), 10); b = append(b, ',') }
	str := func(v string) { b = append(b, v...); b = append(b, ',') }
	for _, g := range n.GPUs {
		num(g.Index)
		str(g.Name)
		str(g.PCIDeviceID)
		b = strconv.AppendBool(b, g.MigEnabled)
		b = strconv.AppendBool(b, g.MigPending)
		b = append(b, '|')
		for _, m := range g.MigDevices {
			str(m.Profile)
			num(m.GISlices)
			b = strconv.AppendUint(b, m.MemoryMiB, 10)
			b = append(b, ';')
		}
		b = append(b, '|')
		num(e.tables.id(g.Profiles))
		b = append(b, '\n')
	}
	return string(b)
}

// Fleet is the nodes Propose weighs: the snapshots' and Hardware's, and
// slurmctld's other GPU nodes, held, as are snapshot nodes it lacks or counts
// otherwise and Hardware nodes of no layout. Unknown Hardware or twice: errors.
func Fleet(snaps []*model.Node, hw []migplan.Hardware, states map[string]NodeState, e *Evaluator) ([]Node, error) {
	nodes := make([]Node, 0, len(snaps))
	from := map[string]string{}
	for _, s := range snaps {
		name, _, _ := strings.Cut(s.Hostname, ".")
		if err := slurmconf.CheckNodeName(name); err != nil {
			return nil, fmt.Errorf("%s: host %q: %v", s.Snapshot, s.Hostname, err)
		}
		if prev, dup := from[name]; dup {
			return nil, fmt.Errorf("%s: node %s is given twice (also by %s)", s.Snapshot, name, prev)
		}
		from[name] = s.Snapshot
		cur, opts, err := e.Node(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Snapshot, err)
		}
		n := Node{Name: name, Current: cur, Options: opts}
		if st, ok := states[name]; ok {
			n.Why, n.RunsJobs = st.Why(), st.RunsJobs()
			if !slurmconf.SameGresCounts(cur, st.Gres) && st.OutOfService() == "" {
				// The change would start from counts slurmctld does not
				// hold, and the controller refuses it then.
				n.Stale = true
				n.Why = fmt.Sprintf("slurmctld holds Gres=%s, not its snapshot's %s: an old snapshot, or a slurm.conf not updated", slurmconf.GresList(st.Gres), slurmconf.GresList(cur))
			}
		} else {
			n.Why = "slurmctld does not know it (not in the node states)"
		}
		nodes = append(nodes, n)
	}
	for _, h := range hw {
		k, err := e.Kind(h.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.Spec, err)
		}
		for _, name := range h.Nodes {
			if prev, dup := from[name]; dup {
				return nil, fmt.Errorf("%s: node %s is given twice (also by %s)", h.Spec, name, prev)
			}
			from[name] = h.Spec
			st, ok := states[name]
			if !ok {
				return nil, fmt.Errorf("%s: node %s is not in the node states", h.Spec, name)
			}
			n := Node{Name: name, Current: st.Gres, Options: k.Options, Why: st.Why(), RunsJobs: st.RunsJobs()}
			if !k.layouts[layoutKey(st.Gres)] {
				n.Options = nil
				if n.Why == "" {
					n.Why = fmt.Sprintf("its Gres=%s is no layout of the GPUs of %s (now or under an allowed config)", slurmconf.GresList(st.Gres), h.Spec)
					n.Hint = ": give the node's own snapshot"
				}
			}
			nodes = append(nodes, n)
		}
	}
	// The rest of slurmctld's GPU nodes: their GPUs are unknown, so they
	// are held; their counts are still the fleet's, for Keep and for the
	// node lines.
	for name, st := range states {
		if _, known := from[name]; !known && len(st.Gres) > 0 {
			nodes = append(nodes, Node{Name: name, Current: st.Gres, Why: "no snapshot gives its GPUs, neither its own nor one declared for it"})
		}
	}
	return nodes, nil
}

// Refusal is a config some nodes cannot take, for one reason, with
// what would help apart (advice.Hinter's words, "" for none).
type Refusal struct {
	Config string   `json:"config"`
	Nodes  []string `json:"nodes"`
	Why    string   `json:"why"`
	Hint   string   `json:"-"`
}

// Refusals are the nodes' refused configs among named, one a config and
// reason, its nodes in the order given and the configs in named's: an
// admin who names configs learns why a node is offered none of them.
func Refusals(nodes []Node, named []string) []Refusal {
	rank := map[string]int{}
	for i, config := range named {
		rank[config] = i
	}
	var out []Refusal
	at := map[Refused]int{} // a config, reason and hint: its entry in out
	for _, n := range nodes {
		if n.Options == nil {
			continue
		}
		for _, r := range n.Options.Refused {
			if _, ok := rank[r.Config]; !ok {
				continue
			}
			i, ok := at[r]
			if !ok {
				i, at[r] = len(out), len(out)
				out = append(out, Refusal{Config: r.Config, Why: r.Why, Hint: r.Hint})
			}
			out[i].Nodes = append(out[i].Nodes, n.Name)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return rank[out[a].Config] < rank[out[b].Config] })
	return out
}

// ReadSnapshots reads the snapshots args name (snapshot.Files), several at
// a time, for they are most of what rebalance reads. An error names the
// file; of several bad files, it is the first in the order given.
func ReadSnapshots(args []string) ([]*model.Node, error) {
	files, err := snapshot.Files(args)
	if err != nil {
		return nil, err
	}
	snaps := make([]*model.Node, len(files))
	errs := make([]error, len(files))
	// A reader a goroutine, all sharing one set of tables.
	var tables model.Tables
	newReader := func() *snapshot.Reader { return snapshot.NewReader(&tables) }
	fileio.Each(len(files), newReader, func(reader *snapshot.Reader, i int) {
		snaps[i], errs[i] = reader.Load(files[i])
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return snaps, nil
}
