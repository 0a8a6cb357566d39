package fleetplan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/drift"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Diff is what in a slurm.conf must change for the planned layouts.
type Diff struct {
	SlurmConf string     `json:"slurm_conf"`
	Same      bool       `json:"same"`
	Nodes     []NodeDiff `json:"nodes"` // every node, in hostlist order
	Verdict   string     `json:"verdict"`
}

// NodeDiff compares one node's Gres= in the slurm.conf with its plan: Counts
// lists the types whose counts differ, and Drains says whether the node would
// drain with its new layout (slurm.conf declares more of a type than it has).
type NodeDiff struct {
	Node    string `json:"node"`
	Planned string `json:"planned"` // the planned Gres= value
	*drift.CountsReport
}

// Diff compares each node's planned Gres= counts with those the
// slurm.conf at path (Includes followed) declares for it, reading the
// file once. A node it does not declare is an error, as for diff.
func (f *Fleet) Diff(path string) (*Diff, error) {
	names := make([]string, len(f.Nodes))
	for i, n := range f.Nodes {
		names[i] = n.Node
	}
	declared, err := slurmconf.ReadNodesGres(path, names)
	if err != nil {
		return nil, err
	}
	d := &Diff{SlurmConf: path, Same: true, Nodes: make([]NodeDiff, len(f.Nodes))}
	for i, n := range f.Nodes {
		ng, ok := declared[n.Node]
		if !ok {
			return nil, fmt.Errorf("%s: no NodeName= line names %s", path, n.Node)
		}
		r, err := drift.CompareCounts(ng.Pos, ng.Gres, n.Counts)
		if err != nil {
			return nil, err
		}
		d.Nodes[i] = NodeDiff{Node: n.Node, Planned: slurmconf.GresList(n.Counts), CountsReport: r}
		d.Same = d.Same && r.Same
	}
	d.Verdict = d.verdict()
	return d, nil
}

// diffGroup is nodes of one slurm.conf line with the same plan: the text
// says them once, under their hostlist.
type diffGroup struct {
	nodes []string
	first *NodeDiff
}

// groups gathers the nodes that differ by where they are declared, what
// is declared and what is planned, in hostlist order.
func (d *Diff) groups() []*diffGroup {
	var out []*diffGroup
	byKey := map[string]*diffGroup{}
	for i := range d.Nodes {
		n := &d.Nodes[i]
		if n.Same {
			continue
		}
		key := n.Source + "\x00" + n.Gres + "\x00" + n.Planned
		g, ok := byKey[key]
		if !ok {
			g = &diffGroup{first: n}
			byKey[key] = g
			out = append(out, g)
		}
		g.nodes = append(g.nodes, n.Node)
	}
	return out
}

func (d *Diff) verdict() string {
	if d.Same {
		return fmt.Sprintf("same: %s declares the planned Gres= of all %s", d.SlurmConf, plural(len(d.Nodes), "node", "nodes"))
	}
	var differ, drain []string
	for _, n := range d.Nodes {
		if !n.Same {
			differ = append(differ, n.Node)
		}
		if n.Drains {
			drain = append(drain, n.Node)
		}
	}
	msg := fmt.Sprintf("different: %s of %d must change in %s", plural(len(differ), "node", "nodes"), len(d.Nodes), d.SlurmConf)
	if len(drain) == 0 {
		return msg + "; none would drain (none declares more than it will offer)"
	}
	return msg + fmt.Sprintf("; %s would drain if the new layout came up first (more declared than offered): %s",
		plural(len(drain), "node", "nodes"), slurmconf.CompressHostlist(drain))
}

// WriteText prints, for each group of nodes whose Gres= must change,
// the line that declares them, the Gres= declared and planned, and each
// type's counts, then the verdict.
func (d *Diff) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, g := range d.groups() {
		n := g.first
		fmt.Fprintf(&b, "%s: %s: Gres=%s -> Gres=%s\n", n.Source, slurmconf.CompressHostlist(g.nodes), orNone(n.Gres), orNone(n.Planned))
		for _, c := range n.Counts {
			drains := ""
			if slurmconf.Drains([]slurmconf.CountChange{c}) {
				drains = ": drains"
			}
			fmt.Fprintf(&b, "  count %s: declared %d, planned %d (%+d)%s\n", slurmconf.GresName(c.Name, c.Type), c.Current, c.Generated, c.Generated-c.Current, drains)
		}
	}
	fmt.Fprintln(&b, d.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the comparison, node by node.
func (d *Diff) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
