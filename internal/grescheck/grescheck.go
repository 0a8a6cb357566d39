// Package grescheck is `check`: it reads a cluster's gres.conf and
// slurm.conf as slurmd of a given release reads them on each node, and
// reports the records slurmd would hold and every problem it, or
// slurmctld, would have, with a verdict and the exit status that goes
// with it. It needs no NVML and no device files.
package grescheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/accounting"
	"github.com/slurm-mig/slurm-mig/internal/slurmd"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Inputs say what to check.
type Inputs struct {
	GresConf  string // a gres.conf path
	SlurmConf string // a slurm.conf path, or ""
	// Nodes to check; none: every node slurm.conf declares, else every
	// node gres.conf names, else the lines for every node alone.
	Nodes   []string
	Version slurmconf.Version // the release of slurmd; not known: the newest rules
}

// Report is the result, in the JSON shape check --json prints.
type Report struct {
	Nodes []NodeReport `json:"nodes"`
	// Problems are the cluster's own: of no one node (the two files
	// name the nodes otherwise).
	Problems []slurmconf.Problem `json:"problems,omitempty"`
	// Accounting are warnings about slurm.conf's accounting lines
	// (accounting.Check).
	Accounting []slurmconf.Problem `json:"accounting,omitempty"`
	Verdict    string              `json:"verdict"`
	// Status is the exit status: 0 clean, 1 errors, drains or warnings,
	// 2 fatal.
	Status int `json:"-"`
	counts map[slurmconf.Severity]int
	causes []cause
	cause  map[slurmconf.Problem]int // index in causes
}

// ofCluster is the node of the cluster's own problems.
const ofCluster = "\x00"

// cause is one problem, with the nodes that have it: said once.
type cause struct {
	p     slurmconf.Problem
	nodes []string
}

// NodeReport is one node's records and problems.
type NodeReport struct {
	Node     string                `json:"node"`
	Gres     []slurmd.SlurmdRecord `json:"gres"`
	Problems []slurmconf.Problem   `json:"problems"`
}

// Check reads the files and checks every node. Its error is a file that
// cannot be read; everything slurmd would say is in the Report.
func Check(in Inputs) (*Report, error) {
	f, err := slurmconf.ReadGresFile(in.GresConf)
	if err != nil {
		return nil, err
	}
	decls := map[string]*slurmconf.SlurmNode{}
	var order []string
	var slurmFatal *slurmconf.Problem
	var acct []slurmconf.Problem
	if in.SlurmConf != "" {
		lines, err := slurmconf.ReadSlurmNodes(in.SlurmConf)
		if err != nil {
			return nil, err
		}
		if acct, err = accountingProblems(in.SlurmConf, lines); err != nil {
			return nil, err
		}
		for i := range lines {
			names, err := f.Names().Expand(lines[i].Nodes)
			if errors.Is(err, slurmconf.ErrNameBudget) {
				return nil, fmt.Errorf("%s: NodeName=%s: %w", lines[i].Pos, slurmconf.QuoteShort(lines[i].Nodes), err)
			}
			if err != nil {
				// slurmd dies reading slurm.conf, on every node.
				slurmFatal = &slurmconf.Problem{Pos: lines[i].Pos, Severity: slurmconf.Fatal,
					Message: fmt.Sprintf("NodeName=%s: %v; slurmd dies reading slurm.conf", lines[i].Nodes, err)}
				break
			}
			for _, n := range names {
				if first, ok := decls[n]; ok {
					// slurmctld and slurmd die: every node's slurmd.
					fe := slurmconf.DeclaredTwice(in.SlurmConf, n, first.Pos, lines[i].Pos)
					slurmFatal = &fe.Problem
					break
				}
				order = append(order, n)
				decls[n] = &lines[i]
			}
			if slurmFatal != nil {
				break
			}
		}
	}
	nodes := in.Nodes
	if len(nodes) == 0 {
		nodes = order
	}
	if len(nodes) == 0 {
		nodes = f.NodeNames()
	}
	if len(nodes) == 0 {
		nodes = []string{""}
	}
	checker := slurmd.NewChecker(f, in.Version)
	rep := &Report{Nodes: make([]NodeReport, 0, len(nodes)), counts: map[slurmconf.Severity]int{}}
	if p := namesDiffer(in, f, order); p != nil {
		rep.Problems = append(rep.Problems, *p)
		rep.note(*p, ofCluster)
	}
	for _, n := range nodes {
		var nc slurmd.NodeCheck
		if slurmFatal != nil {
			nc = slurmd.NodeCheck{Node: n, Problems: []slurmconf.Problem{*slurmFatal}}
		} else {
			var decl *slurmconf.SlurmNode
			if in.SlurmConf != "" {
				decl = decls[n]
			}
			if in.SlurmConf != "" && decl == nil {
				// slurmd -N n finds no line of its own and exits.
				nc = slurmd.NodeCheck{Node: n, Problems: []slurmconf.Problem{{Pos: in.SlurmConf, Severity: slurmconf.Fatal,
					Message: fmt.Sprintf("no NodeName= line declares %s; slurmd does not start", n)}}}
			} else {
				nc = checker.Check(n, decl)
			}
			if in.SlurmConf == "" && len(in.Nodes) > 0 && len(nc.Records) == 0 && len(nc.Problems) == 0 {
				// Nothing says the node should have GRES, but a node
				// asked for by name and given none is most often a typo.
				nc.Problems = []slurmconf.Problem{{Pos: in.GresConf, Severity: slurmconf.Warning,
					Message: fmt.Sprintf("no line gives node %s any GRES (its name misspelt?); with slurm.conf it is checked against its declaration", n)}}
			}
		}
		if nc.Records == nil {
			nc.Records = noRecords
		}
		if nc.Problems == nil {
			nc.Problems = noProblems
		}
		for _, p := range nc.Problems {
			rep.note(p, n)
		}
		rep.Nodes = append(rep.Nodes, NodeReport{Node: n, Gres: nc.Records, Problems: nc.Problems})
	}
	rep.Accounting = acct
	rep.Verdict, rep.Status = rep.verdict()
	// A hostlist of gres.conf past the run's budget was skipped as a
	// line slurmd skips; it is no such thing, and refuses the run.
	if err := f.Names().Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", in.GresConf, err)
	}
	return rep, nil
}

// note counts a problem of node (ofCluster for the cluster's own) once a
// cause: the same problem of many nodes is one.
func (r *Report) note(p slurmconf.Problem, node string) {
	if i, ok := r.cause[p]; ok {
		r.causes[i].nodes = append(r.causes[i].nodes, node)
		return
	}
	if r.cause == nil {
		r.cause = map[slurmconf.Problem]int{}
	}
	r.cause[p] = len(r.causes)
	r.causes = append(r.causes, cause{p, []string{node}})
	r.counts[p.Severity]++
}

// namesDiffer says, once, where the two files name nodes otherwise
// (gpu[1-4], gpu[001-004]): slurmd matches names exactly and reads no
// gres.conf line of its own on the nodes slurm.conf declares.
func namesDiffer(in Inputs, f *slurmconf.GresFile, declared []string) *slurmconf.Problem {
	if in.SlurmConf == "" || len(declared) == 0 {
		return nil
	}
	named := f.NodeNames()
	inGres := make(map[string]bool, len(named))
	for _, n := range named {
		inGres[n] = true
	}
	inSlurm := make(map[string]bool, len(declared))
	for _, n := range declared {
		inSlurm[n] = true
	}
	var onlyGres, onlySlurm []string
	for _, n := range named {
		if !inSlurm[n] {
			onlyGres = append(onlyGres, n)
		}
	}
	for _, n := range declared {
		if !inGres[n] {
			onlySlurm = append(onlySlurm, n)
		}
	}
	if len(onlyGres) == 0 || len(onlySlurm) == 0 {
		return nil
	}
	return &slurmconf.Problem{Pos: in.GresConf, Severity: slurmconf.Error,
		Message: fmt.Sprintf("its lines name %s, which slurm.conf (%s) does not declare, and none names %s, which it does; Slurm matches node names exactly, so slurmd reads no line of these for its node",
			slurmconf.CompressHostlist(onlyGres), in.SlurmConf, slurmconf.CompressHostlist(onlySlurm))}
}

// accountingProblems are what the slurm.conf at path's accounting lines
// leave out of the GPU types its node lines declare.
func accountingProblems(path string, nodes []slurmconf.SlurmNode) ([]slurmconf.Problem, error) {
	a, err := slurmconf.ReadAccounting(path)
	if err != nil {
		return nil, err
	}
	return accounting.Check(nodes, a), nil
}

// noRecords and noProblems print as [] in JSON, not null.
var (
	noRecords  = []slurmd.SlurmdRecord{}
	noProblems = []slurmconf.Problem{}
)

// verdict sums the problems up, with the exit status.
func (r *Report) verdict() (string, int) {
	nodes := fmt.Sprintf("%d node", len(r.Nodes))
	if len(r.Nodes) != 1 {
		nodes += "s"
	}
	var parts []string
	for _, s := range []slurmconf.Severity{slurmconf.Fatal, slurmconf.Error, slurmconf.Drain, slurmconf.Warning} {
		if n := r.counts[s]; n > 0 {
			word := string(s)
			if n > 1 {
				word += "s"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, word))
		}
	}
	// Accounting warnings are warnings too: check exits 1 for them, as
	// for slurmd's (docs/check.md).
	if n := len(r.Accounting); n == 1 {
		parts = append(parts, "1 accounting warning")
	} else if n > 1 {
		parts = append(parts, fmt.Sprintf("%d accounting warnings", n))
	}
	switch {
	case r.counts[slurmconf.Fatal] > 0:
		return fmt.Sprintf("fatal: slurmd would not start (%s; %s checked)", strings.Join(parts, ", "), nodes), 2
	case len(parts) > 0:
		return fmt.Sprintf("problems: %s (%s checked)", strings.Join(parts, ", "), nodes), 1
	}
	return fmt.Sprintf("clean: %s checked, no problem", nodes), 0
}

// WriteText prints one line per cause, "FILE:LINE: node N: severity:
// message" (nodes N[1-3] where several nodes have it; no node for the
// cluster's own), then the verdict.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.causes {
		p := c.p
		switch {
		case c.nodes[0] == ofCluster:
			fmt.Fprintf(&b, "%s: %s: %s\n", p.Pos, p.Severity, p.Message)
		case len(c.nodes) == 1:
			fmt.Fprintf(&b, "%s: node %s: %s: %s\n", p.Pos, nodeName(c.nodes[0]), p.Severity, p.Message)
		default:
			fmt.Fprintf(&b, "%s: nodes %s: %s: %s\n", p.Pos, slurmconf.CompressHostlist(c.nodes), p.Severity, p.Message)
		}
	}
	for _, p := range r.Accounting {
		fmt.Fprintf(&b, "%s: accounting: %s: %s\n", p.Pos, p.Severity, p.Message)
	}
	b.WriteString(r.Verdict)
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// nodeName is how a line names a node: * for the lines for every node
// alone.
func nodeName(n string) string {
	if n == "" {
		return "*"
	}
	return n
}

// WriteJSON prints the report as JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
