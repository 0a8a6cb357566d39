// Package fleetplan is plan for many nodes: each node's layout once its
// config is applied (migplan), the next slurm.conf lines grouped as merge
// groups them, and (Diff) what the running slurm.conf must change.
package fleetplan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/accounting"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/fleet"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Fleet is the plan of every node, and their slurm.conf lines.
type Fleet struct {
	// NodeLines are the grouped NodeName= lines of the next layouts.
	NodeLines []string `json:"node_lines"`
	// Nodes are in hostlist order.
	Nodes []*Node `json:"nodes"`
}

// Node is one node's plan: its name, the snapshot it was read from (its
// own, or that of the hardware it is declared to have), and what
// single-node plan --json says of it.
type Node struct {
	Node     string `json:"node"`
	Snapshot string `json:"snapshot"`
	*migplan.Slurm
	// source is how messages name where the node comes from: its own
	// snapshot, or its Hardware's Spec.
	source string
	// types are the node's gpu types as it will be, with their shares,
	// when Inputs.Accounting asks for them.
	types []accounting.Type
}

// Inputs are what Make plans from.
type Inputs struct {
	Snapshots []string // snapshot files (Snapshots)
	// Hardware are nodes declared to have the GPUs of one snapshot's
	// node, in place of a snapshot each: they are planned once a
	// config, and their lines differ only in their names.
	Hardware []migplan.Hardware
	Assign   *Assign
	Gres     gresgen.Options // type names, as gen and node name them
	// Name gives a snapshot's node its Slurm name, as single-node plan
	// names it (its short hostname).
	Name func(*model.Node) (string, error)
	// Accounting keeps each node's types with their shares, for
	// AccountingNodes.
	Accounting bool
}

// Make plans each snapshot's node, then each Hardware's nodes; it refuses
// as single-node plan does, the first failure in the order given naming its
// node. Warnings come in that order, those before a failure with it.
func Make(in Inputs) (*Fleet, []error, error) {
	paths := in.Snapshots
	nodes := make([]*Node, len(paths))
	errs := make([]error, len(paths))
	warns := make([][]error, len(paths))
	// A reader a goroutine, all sharing one set of tables.
	var tables model.Tables
	newReader := func() *snapshot.Reader { return snapshot.NewReader(&tables) }
	fileio.Each(len(paths), newReader, func(reader *snapshot.Reader, i int) {
		nodes[i], errs[i] = planNode(reader, paths[i], in, &warns[i])
	})
	var warnings []error
	for i, err := range errs {
		if err != nil {
			return nil, warnings, err
		}
		warnings = append(warnings, warns[i]...)
	}
	for _, h := range in.Hardware {
		hn, err := planHardware(h, in, &warnings)
		if err != nil {
			return nil, warnings, err
		}
		nodes = append(nodes, hn...)
	}
	f, err := group(nodes, in.Assign)
	return f, warnings, err
}

// planNode reads one snapshot and plans its node, keeping its warnings
// for Make to say in order.
func planNode(reader *snapshot.Reader, path string, in Inputs, warns *[]error) (*Node, error) {
	node, err := reader.Load(path)
	if err != nil {
		return nil, err
	}
	name, err := in.Name(node)
	if err != nil {
		return nil, err
	}
	warn := func(err error) { *warns = append(*warns, fmt.Errorf("node %s (%s): %w", name, path, err)) }
	p, err := migplan.Make(node, in.Assign.For(name))
	if err != nil {
		return nil, fmt.Errorf("node %s (%s): %w", name, path, err)
	}
	for _, w := range p.Warnings {
		warn(w)
	}
	s, err := p.Counts(name, in.Gres)
	if err != nil {
		return nil, fmt.Errorf("node %s (%s): %w", name, path, err)
	}
	for _, w := range s.Warnings {
		warn(w)
	}
	types, err := plannedTypes(p, in)
	if err != nil {
		return nil, fmt.Errorf("node %s (%s): %w", name, path, err)
	}
	// The node as it will be has given its counts: a fleet keeps only
	// those, or 10,000 nodes would keep every snapshot's profile tables
	// in memory to the end.
	s.Plan.Node = nil
	return &Node{Node: name, Snapshot: path, Slurm: s, source: path, types: types}, nil
}

// planHardware plans h's nodes once per config, as one snapshot's GPUs; a
// config that keeps a MIG-capable GPU's own layout is refused (hint: a
// snapshot per node). Warnings, once for all the nodes, go to warnings.
func planHardware(h migplan.Hardware, in Inputs, warnings *[]error) ([]*Node, error) {
	byConfig := map[*migplan.Selected][]string{}
	var configs []*migplan.Selected
	for _, name := range h.Nodes {
		if err := slurmconf.CheckNodeName(name); err != nil {
			return nil, fmt.Errorf("%s: node %q: %v", h.Spec, name, err)
		}
		sel := in.Assign.For(name)
		if _, seen := byConfig[sel]; !seen {
			configs = append(configs, sel)
		}
		byConfig[sel] = append(byConfig[sel], name)
	}
	nodes := make([]*Node, 0, len(h.Nodes))
	for _, sel := range configs {
		names := byConfig[sel]
		who, them := "node "+names[0], "the node its own snapshot"
		if len(names) > 1 {
			who, them = "nodes "+slurmconf.CompressHostlist(names), "the nodes their own snapshots"
		}
		who += " (" + h.Spec + ")"
		p, err := migplan.Make(h.Snapshot, sel)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		var warns []error
		warn := func(err error) { warns = append(warns, fmt.Errorf("%s: %w", who, err)) }
		for _, w := range p.Warnings {
			warn(w)
		}
		if g := p.OwnLayout(); g != nil {
			return nil, advice.Hinted(fmt.Errorf("%s: %s: config %q: GPU %d (%s): no entry takes it, so it keeps each node's own layout, which one snapshot for many nodes does not know",
				who, sel.File, sel.Name, g.Index, g.Name), "; give "+them)
		}
		s, err := p.Counts("", in.Gres)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		for _, w := range s.Warnings {
			warn(w)
		}
		types, err := plannedTypes(p, in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		s.Plan.Node = nil // as planNode drops it
		*warnings = append(*warnings, warns...)
		for _, name := range names {
			named := *s
			named.NodeLine = slurmconf.NodeLine(name, s.Counts)
			nodes = append(nodes, &Node{Node: name, Snapshot: h.Snapshot.Snapshot, Slurm: &named, source: h.Spec, types: types})
		}
	}
	return nodes, nil
}

// group refuses a node given twice, sorts the nodes as hostlists sort,
// and groups their lines.
func group(nodes []*Node, assign *Assign) (*Fleet, error) {
	byName := make(map[string]*Node, len(nodes))
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if first, dup := byName[n.Node]; dup {
			return nil, fmt.Errorf("node %s is given twice: %s and %s", n.Node, first.source, n.source)
		}
		byName[n.Node] = n
		names = append(names, n.Node)
	}
	if err := assign.checkGiven(presence(names)); err != nil {
		return nil, err
	}
	slurmconf.SortHostnames(names)
	f := &Fleet{Nodes: make([]*Node, len(names))}
	groups := make([]fleet.Group, len(names))
	for i, name := range names {
		n := byName[name]
		f.Nodes[i] = n
		groups[i] = fleet.Group{Nodes: []string{name}, Counts: n.Counts}
	}
	f.NodeLines = fleet.GroupLines(groups)
	return f, nil
}

// plannedTypes are the gpu types of the node as plan p will make it,
// with their shares, when in asks for them.
func plannedTypes(p *migplan.Plan, in Inputs) ([]accounting.Type, error) {
	if !in.Accounting {
		return nil, nil
	}
	devs, err := gresgen.DeviceTypes(p.Node, in.Gres)
	if err != nil {
		return nil, err
	}
	return accounting.NodeTypes(p.Node, devs)
}

// AccountingNodes are the nodes with their planned types (Inputs.Accounting).
func (f *Fleet) AccountingNodes() []accounting.Node {
	out := make([]accounting.Node, len(f.Nodes))
	for i, n := range f.Nodes {
		out[i] = accounting.Node{Name: n.Node, Types: n.types}
	}
	return out
}

func presence(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// WriteText prints the grouped node lines.
func (f *Fleet) WriteText(w io.Writer) error {
	_, err := io.WriteString(w, strings.Join(f.NodeLines, "\n")+"\n")
	return err
}

// WriteJSON prints the node lines and each node's plan.
func (f *Fleet) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}
