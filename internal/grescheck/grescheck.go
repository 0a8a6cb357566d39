// Package grescheck is `check`: it reads a cluster's gres.conf and
// slurm.conf as slurmd of a given release reads them on each node, and
// reports the records slurmd would hold and every problem it, or
// slurmctld, would have, with a verdict and the exit status that goes
// with it. It needs no NVML and no device files.
package grescheck

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/accounting"
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
	// Accounting are warnings about slurm.conf's accounting lines
	// (accounting.Check); they change no verdict.
	Accounting []slurmconf.Problem `json:"accounting,omitempty"`
	Verdict    string              `json:"verdict"`
	// Status is the exit status: 0 clean, 1 errors or drains, 2 fatal.
	Status int `json:"-"`
	counts map[slurmconf.Severity]int
}

// NodeReport is one node's records and problems.
type NodeReport struct {
	Node     string                   `json:"node"`
	Gres     []slurmconf.SlurmdRecord `json:"gres"`
	Problems []slurmconf.Problem      `json:"problems"`
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
			names, err := slurmconf.ExpandHostlist(lines[i].Nodes)
			if err != nil {
				// slurmd dies reading slurm.conf, on every node.
				slurmFatal = &slurmconf.Problem{Pos: lines[i].Pos, Severity: slurmconf.Fatal,
					Message: fmt.Sprintf("NodeName=%s: %v; slurmd dies reading slurm.conf", lines[i].Nodes, err)}
				break
			}
			for _, n := range names {
				if _, ok := decls[n]; !ok {
					order = append(order, n)
				}
				decls[n] = &lines[i]
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
	checker := f.Checker(in.Version)
	rep := &Report{Nodes: make([]NodeReport, 0, len(nodes)), counts: map[slurmconf.Severity]int{}}
	for _, n := range nodes {
		var nc slurmconf.NodeCheck
		if slurmFatal != nil {
			nc = slurmconf.NodeCheck{Node: n, Problems: []slurmconf.Problem{*slurmFatal}}
		} else {
			var decl *slurmconf.SlurmNode
			if in.SlurmConf != "" {
				decl = decls[n]
			}
			if in.SlurmConf != "" && decl == nil {
				// slurmd -N n finds no line of its own and exits.
				nc = slurmconf.NodeCheck{Node: n, Problems: []slurmconf.Problem{{Pos: in.SlurmConf, Severity: slurmconf.Fatal,
					Message: fmt.Sprintf("no NodeName= line declares %s; slurmd does not start", n)}}}
			} else {
				nc = checker.Check(n, decl)
			}
		}
		if nc.Records == nil {
			nc.Records = noRecords
		}
		if nc.Problems == nil {
			nc.Problems = noProblems
		}
		for _, p := range nc.Problems {
			rep.counts[p.Severity]++
		}
		rep.Nodes = append(rep.Nodes, NodeReport{Node: n, Gres: nc.Records, Problems: nc.Problems})
	}
	rep.Accounting = acct
	rep.Verdict, rep.Status = rep.verdict()
	if n := len(acct); n > 0 {
		rep.Verdict += fmt.Sprintf("; %d accounting warning%s", n, map[bool]string{true: "s"}[n > 1])
	}
	return rep, nil
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
	noRecords  = []slurmconf.SlurmdRecord{}
	noProblems = []slurmconf.Problem{}
)

// verdict sums the problems up, with the exit status.
func (r *Report) verdict() (string, int) {
	nodes := fmt.Sprintf("%d node", len(r.Nodes))
	if len(r.Nodes) != 1 {
		nodes += "s"
	}
	var parts []string
	for _, s := range []slurmconf.Severity{slurmconf.Fatal, slurmconf.Error, slurmconf.Drain} {
		if n := r.counts[s]; n > 0 {
			word := string(s)
			if n > 1 {
				word += "s"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, word))
		}
	}
	switch {
	case r.counts[slurmconf.Fatal] > 0:
		return fmt.Sprintf("fatal: slurmd would not start (%s; %s checked)", strings.Join(parts, ", "), nodes), 2
	case len(parts) > 0:
		return fmt.Sprintf("problems: %s (%s checked)", strings.Join(parts, ", "), nodes), 1
	}
	return fmt.Sprintf("clean: %s checked, no problem", nodes), 0
}

// WriteText prints one line per problem, "FILE:LINE: node N: severity:
// message", then the verdict.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, n := range r.Nodes {
		name := n.Node
		if name == "" {
			name = "*" // the lines for every node alone
		}
		for _, p := range n.Problems {
			fmt.Fprintf(&b, "%s: node %s: %s: %s\n", p.Pos, name, p.Severity, p.Message)
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

// WriteJSON prints the report as JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
