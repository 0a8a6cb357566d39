package rebalance

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Evaluator works out, with migplan, the configs each node may take and
// the Gres= counts each gives it, as plan prints them. Nodes whose GPUs
// are alike (the same models, profile tables and layouts) are one kind,
// worked out once: a fleet of 10,000 nodes has a handful of kinds.
type Evaluator struct {
	Configs []*migplan.Selected
	Gres    gresgen.Options
	kinds   map[string]*evaluated
}

type evaluated struct {
	current []slurmconf.GresCount
	options *Options
}

// Node is what the evaluator makes of one node's model: its counts now
// and its options. An error other than a config's refusal (a type name
// that clashes) is returned.
func (e *Evaluator) Node(n *model.Node) ([]slurmconf.GresCount, *Options, error) {
	key := nodeKind(n)
	if k, ok := e.kinds[key]; ok {
		return k.current, k.options, nil
	}
	per, err := gresgen.GPUCounts(n, e.Gres)
	if err != nil {
		return nil, nil, err
	}
	k := &evaluated{current: gresgen.SumCounts(per), options: &Options{}}
	for _, sel := range e.Configs {
		plan, err := migplan.Make(n, sel, func(error) {})
		var refusal *migplan.Refusal
		switch {
		case errors.As(err, &refusal):
			k.options.Refused = append(k.options.Refused, Refused{Config: sel.Name, Why: refusal.Error()})
			continue
		case err != nil:
			return nil, nil, err
		}
		slurm, err := plan.Counts("", e.Gres)
		if err != nil {
			return nil, nil, err
		}
		k.options.Configs = append(k.options.Configs, Option{Config: sel.Name, Counts: countsOf(slurm)})
	}
	if e.kinds == nil {
		e.kinds = map[string]*evaluated{}
	}
	e.kinds[key] = k
	return k.current, k.options, nil
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
func nodeKind(n *model.Node) string {
	var b strings.Builder
	for _, g := range n.GPUs {
		fmt.Fprintf(&b, "%d|%s|%s|%t|%t|", g.Index, g.Name, g.PCIDeviceID, g.MigEnabled, g.MigPending)
		for _, m := range g.MigDevices {
			b.WriteString(m.Profile)
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(m.GISlices))
			b.WriteByte(',')
			b.WriteString(strconv.FormatUint(m.MemoryMiB, 10))
			b.WriteByte(';')
		}
		b.WriteByte('|')
		for _, p := range g.MigProfiles {
			fmt.Fprintf(&b, "%d,%s,%d,%d,%d:", p.ID, p.Name, p.Instances, p.MemoryMiB, p.Slices)
			for _, pl := range p.Placements {
				fmt.Fprintf(&b, "%d+%d,", pl.Start, pl.Size)
			}
			for _, ci := range p.CIProfiles {
				fmt.Fprintf(&b, "/%d,%s,%d,%d", ci.ID, ci.Name, ci.Slices, ci.Instances)
			}
			b.WriteByte(';')
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Fleet is the nodes Propose weighs: one per snapshot, named by the short
// name of its host, in the state slurmctld gives it. A node slurmctld
// does not know is held. Two snapshots of one node are an error naming
// both files.
func Fleet(snaps []*model.Node, states map[string]NodeState, e *Evaluator) ([]Node, error) {
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
			n.Why = st.Why()
		} else {
			n.Why = "slurmctld does not know it (not in the node states)"
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}
