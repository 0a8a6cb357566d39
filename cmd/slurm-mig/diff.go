package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// exitDifferent is diff's "they differ" exit, as diff(1) has it.
const exitDifferent = 1

// errDifferent makes run exit 1 without printing an error.
type errDifferent struct{}

func (errDifferent) Error() string { return "different" }

type diffCmd struct {
	sourceFlags
	recordFlags
	GresConf  string `placeholder:"FILE" help:"Compare with this gres.conf (default /etc/slurm/gres.conf when nothing else is compared); a pipe, or - for standard input, works too."`
	SlurmConf string `placeholder:"FILE" help:"Compare the Gres= counts this node's NodeName line declares in FILE (a pipe, or - for standard input)."`
	Running   bool   `help:"Compare the Gres= the running slurmctld has for this node (scontrol show node)."`
	JSON      bool   `name:"json" help:"Print the result as JSON."`
}

const defaultGresConf = "/etc/slurm/gres.conf"

// diffReport is diff's result; its JSON form is for automation.
type diffReport struct {
	Node      string          `json:"node"`
	Same      bool            `json:"same"`
	GresConf  *gresConfReport `json:"gres_conf,omitempty"`
	SlurmConf *countsReport   `json:"slurm_conf,omitempty"`
	Running   *countsReport   `json:"running,omitempty"`
	Verdict   string          `json:"verdict"`
}

type gresConfReport struct {
	Path string `json:"path"`
	Same bool   `json:"same"`
	slurmconf.GresDiff
}

type countsReport struct {
	Source string                  `json:"source"` // file:line of the NodeName line, or "scontrol"
	Gres   string                  `json:"gres"`   // the Gres= value in force
	Same   bool                    `json:"same"`
	Counts []slurmconf.CountChange `json:"counts"`
	// Drains: some count declared is more than the node has, which
	// drains it; automation fails on this, not on any difference.
	Drains bool `json:"drains"`
	// State and Reason are slurmctld's, with --running. A node whose
	// registration slurmctld refused (INVAL) is never "same": its Gres=
	// is then what the node reported, and Reason says what is wrong.
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func (c *diffCmd) Run(e *env, g *cli) error {
	if c.GresConf == slurmconf.Stdin && c.SlurmConf == slurmconf.Stdin {
		return fmt.Errorf("--gres-conf and --slurm-conf cannot both read standard input")
	}
	node, err := c.load(e, g)
	if err != nil {
		return err
	}
	e.releaseNVML() // before reading configs and asking slurmctld
	recs, _, err := c.records(e, node)
	if err != nil {
		return err
	}
	name := c.NodeName
	if name == "" {
		if name, err = c.defaultNodeName(e, node); err != nil {
			return err
		}
	}
	gresConf := c.GresConf
	if gresConf == "" && c.SlurmConf == "" && !c.Running {
		gresConf = defaultGresConf
	}

	rep := diffReport{Node: name, Same: true}
	generated := slurmconf.CountGres(recs)
	if gresConf != "" {
		r, err := diffGresConf(gresConf, name, recs)
		if err != nil {
			return err
		}
		rep.GresConf, rep.Same = r, rep.Same && r.Same
	}
	if c.SlurmConf != "" {
		ng, err := slurmconf.ReadNodeGres(c.SlurmConf, name)
		if err != nil {
			return err
		}
		r, err := diffCounts(ng.Pos, ng.Gres, generated)
		if err != nil {
			return err
		}
		rep.SlurmConf, rep.Same = r, rep.Same && r.Same
	}
	if c.Running {
		node, err := runningNode(name)
		if err != nil {
			return err
		}
		r, err := diffCounts("scontrol", node.gres, generated)
		if err != nil {
			return err
		}
		r.State, r.Reason = node.state, node.reason
		r.Same = r.Same && !strings.Contains(node.state, "INVAL")
		rep.Running, rep.Same = r, rep.Same && r.Same
	}
	rep.Verdict = verdict(&rep, generated)

	var buf bytes.Buffer
	if c.JSON {
		out, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(append(out, '\n'))
	} else {
		writeDiffText(&buf, &rep)
	}
	if err := writeAll(e.stdout, &buf); err != nil {
		return err
	}
	if !rep.Same {
		return errDifferent{}
	}
	return nil
}

func diffGresConf(path, node string, generated []slurmconf.GresRecord) (*gresConfReport, error) {
	conf, err := slurmconf.ReadGresConf(path, node)
	if err != nil {
		return nil, err
	}
	cur, err := slurmconf.SplitUnits(conf.GresRecords())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	gen, err := slurmconf.SplitUnits(generated)
	if err != nil {
		return nil, err
	}
	d := slurmconf.DiffUnits(gpuUnits(cur), gen)
	return &gresConfReport{Path: path, Same: d.Same(), GresDiff: d}, nil
}

func diffCounts(source, gres string, generated []slurmconf.GresCount) (*countsReport, error) {
	current, err := slurmconf.ParseGresList(gres)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	d := slurmconf.DiffCounts(gpuCounts(current), generated)
	return &countsReport{Source: source, Gres: gres, Same: len(d) == 0, Counts: d, Drains: slurmconf.Drains(d)}, nil
}

// gpuUnits and gpuCounts keep the GRES slurm-mig writes: other GRES a
// site declares (mps, shard, nic) are not its business.
func gpuUnits(units []slurmconf.Unit) []slurmconf.Unit {
	var out []slurmconf.Unit
	for _, u := range units {
		if strings.EqualFold(u.Name, "gpu") {
			out = append(out, u)
		}
	}
	return out
}

func gpuCounts(counts []slurmconf.GresCount) []slurmconf.GresCount {
	var out []slurmconf.GresCount
	for _, c := range counts {
		if strings.EqualFold(c.Name, "gpu") {
			out = append(out, c)
		}
	}
	return out
}

// slurmctldNode is what slurmctld says of a node.
type slurmctldNode struct{ gres, state, reason string }

// scontrolReason is Reason='s value: free text, up to the next key.
var scontrolReason = regexp.MustCompile(`(?:^| )Reason=(.*?)(?: [A-Z][A-Za-z]*=|$)`)

// runningNode asks slurmctld, through scontrol run without a shell, for
// the node's Gres=, State= and Reason=.
func runningNode(node string) (slurmctldNode, error) {
	var n slurmctldNode
	path, err := exec.LookPath("scontrol")
	if err != nil {
		return n, fmt.Errorf("--running needs scontrol: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(path, "show", "node", "-o", node)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return n, fmt.Errorf("scontrol show node %s: %s", node, oneLine(errors.New(msg)))
	}
	out := strings.TrimSpace(stdout.String())
	found := false
	for _, field := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(field, "Gres="); ok {
			n.gres, found = v, true
		}
		if v, ok := strings.CutPrefix(field, "State="); ok {
			n.state = v
		}
	}
	if !found {
		return n, fmt.Errorf("scontrol show node %s: no Gres= in its answer", node)
	}
	if m := scontrolReason.FindStringSubmatch(out); m != nil && m[1] != "(null)" {
		n.reason = m[1]
	}
	return n, nil
}

// verdict sums the comparison up in one line an admin reads first.
func verdict(r *diffReport, generated []slurmconf.GresCount) string {
	total := 0
	for _, c := range generated {
		total += c.Count
	}
	if r.Same {
		return fmt.Sprintf("same: %s matches this node's %s", sources(r), countOf(total, "device"))
	}
	var parts []string
	if g := r.GresConf; g != nil && !g.Same {
		parts = append(parts, fmt.Sprintf("gres.conf has %d to add, %d to remove, %d to change", len(g.Added), len(g.Removed), len(g.Changed)))
	}
	if run := r.Running; run != nil && strings.Contains(run.State, "INVAL") {
		parts = append(parts, fmt.Sprintf("slurmctld holds %s in %s: %s", r.Node, run.State, orNone(run.Reason)))
	}
	for _, cr := range []struct {
		what string
		r    *countsReport
	}{{"slurm.conf", r.SlurmConf}, {"slurmctld", r.Running}} {
		if cr.r == nil || len(cr.r.Counts) == 0 {
			continue
		}
		var items []string
		for _, c := range cr.r.Counts {
			items = append(items, fmt.Sprintf("%s %d declared, %d here", gresName(c.Name, c.Type), c.Current, c.Generated))
		}
		msg := cr.what + ": " + strings.Join(items, ", ")
		if cr.r.Drains {
			msg += " (slurmctld drains a node that has fewer than declared)"
		}
		parts = append(parts, msg)
	}
	return "different: " + strings.Join(parts, "; ")
}

func sources(r *diffReport) string {
	var s []string
	if r.GresConf != nil {
		s = append(s, r.GresConf.Path)
	}
	if r.SlurmConf != nil {
		s = append(s, "slurm.conf ("+r.SlurmConf.Source+")")
	}
	if r.Running != nil {
		s = append(s, "slurmctld")
	}
	return strings.Join(s, " and ")
}

func gresName(name, typ string) string {
	if typ == "" {
		return name
	}
	return name + ":" + typ
}

// writeDiffText prints the comparison: per device +/-/~, per type the
// counts, then the verdict.
func writeDiffText(buf *bytes.Buffer, r *diffReport) {
	if g := r.GresConf; g != nil && !g.Same {
		fmt.Fprintf(buf, "--- %s (in force)\n+++ generated for %s\n", g.Path, r.Node)
		for _, u := range g.Removed {
			fmt.Fprintf(buf, "- %s %s\n", gresName(u.Name, u.Type), strings.Join(u.Files, ","))
		}
		for _, u := range g.Added {
			fmt.Fprintf(buf, "+ %s %s\n", gresName(u.Name, u.Type), strings.Join(u.Files, ","))
		}
		for _, ch := range g.Changed {
			var what []string
			for _, f := range ch.Fields {
				from, to := unitField(ch.From, f), unitField(ch.To, f)
				what = append(what, fmt.Sprintf("%s %s -> %s", f, orNone(from), orNone(to)))
			}
			fmt.Fprintf(buf, "~ %s: %s\n", strings.Join(ch.Files, ","), strings.Join(what, ", "))
		}
		writeCounts(buf, "gres.conf", g.Counts)
	}
	if s := r.SlurmConf; s != nil && !s.Same {
		fmt.Fprintf(buf, "%s: Gres=%s\n", s.Source, orNone(s.Gres))
		writeCounts(buf, "slurm.conf", s.Counts)
	}
	if s := r.Running; s != nil && !s.Same {
		fmt.Fprintf(buf, "slurmctld: Gres=%s State=%s Reason=%s\n", orNone(s.Gres), orNone(s.State), orNone(s.Reason))
		writeCounts(buf, "slurmctld", s.Counts)
	}
	fmt.Fprintln(buf, r.Verdict)
}

func writeCounts(buf *bytes.Buffer, what string, counts []slurmconf.CountChange) {
	for _, c := range counts {
		fmt.Fprintf(buf, "  count %s: %s %d, generated %d (%+d)\n", gresName(c.Name, c.Type), what, c.Current, c.Generated, c.Generated-c.Current)
	}
}

func unitField(u slurmconf.Unit, field string) string {
	switch field {
	case "type":
		return gresName(u.Name, u.Type)
	case "cores":
		return u.Cores
	case "links":
		return u.Links
	case "flags":
		return u.Flags
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
