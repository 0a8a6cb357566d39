package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/atomicfile"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// The comments of merge's gres.conf: its header, who wrote it and what
// went in, then one comment a layout. mergeComment takes these for
// merge's own, whatever build, counts and layouts they name.
const (
	headerWrittenBy = "# gres.conf written by slurm-mig "
	headerMerge     = " merge; regenerate it, do not edit by hand."
	headerShare     = ": nodes with identical records share lines."
	layoutComment   = "# layout "
)

// GresConf renders the cluster gres.conf: a header naming version and the
// counts, then each layout's records under its nodes' hostlist, after a
// comment with its slurm.conf line.
func (f *Fleet) GresConf(version string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s%s%s\n", headerWrittenBy, version, headerMerge)
	fmt.Fprintf(&b, "# %s, %s%s\n", plural(f.nodes, "node", "nodes"), plural(len(f.Layouts), "layout", "layouts"), headerShare)
	for _, s := range f.shareLines() {
		fmt.Fprintf(&b, "# %s%s\n", gresgen.HeaderShare, s)
	}
	for i, l := range f.Layouts {
		hosts := l.Hostlist()
		fmt.Fprintf(&b, "\n%s%d of %d: %s; slurm.conf: %s\n", layoutComment, i+1, len(f.Layouts),
			plural(len(l.Nodes), "node", "nodes"), slurmconf.NodeLine(hosts, l.Counts()))
		for _, r := range l.Records {
			r.NodeName = hosts
			b.WriteString(r.String())
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// mergeComment says whether line num of a gres.conf, a comment, is one
// GresConf writes.
func mergeComment(num int, line string) bool {
	switch {
	case num == 1:
		return strings.HasPrefix(line, headerWrittenBy) && strings.HasSuffix(line, headerMerge)
	case num == 2:
		return strings.HasPrefix(line, "# ") && strings.HasSuffix(line, headerShare)
	}
	return strings.HasPrefix(line, layoutComment) || strings.HasPrefix(line, "# "+gresgen.HeaderShare)
}

// NodeLines renders the slurm.conf lines, NodeName=<hostlist> Gres=..., one
// per Gres= value, each node's Gres= what `slurm-mig node` prints for it.
func (f *Fleet) NodeLines() []byte {
	groups := make([]Group, len(f.Layouts))
	for i, l := range f.Layouts {
		groups[i] = Group{Nodes: l.Nodes, Counts: l.Counts()}
	}
	var b bytes.Buffer
	for _, line := range GroupLines(groups) {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Group is nodes that declare the same Gres= counts.
type Group struct {
	Nodes  []string
	Counts []slurmconf.GresCount
}

// GroupLines renders groups as NodeName=<hostlist> Gres=... lines, one per
// Gres= value in first-seen order; merge and plan both print with it.
func GroupLines(groups []Group) []string {
	type line struct {
		counts []slurmconf.GresCount
		nodes  []string
	}
	var lines []*line
	byGres := map[string]*line{}
	for _, g := range groups {
		gres := slurmconf.GresList(g.Counts)
		nl, ok := byGres[gres]
		if !ok {
			nl = &line{counts: g.Counts}
			byGres[gres] = nl
			lines = append(lines, nl)
		}
		nl.nodes = append(nl.nodes, g.Nodes...)
	}
	out := make([]string, len(lines))
	for i, nl := range lines {
		slurmconf.SortHostnames(nl.nodes)
		out[i] = slurmconf.NodeLine(slurmconf.CompressHostlist(nl.nodes), nl.counts)
	}
	return out
}

// Written is what merge -o reports: the file, whether it changed, and
// what went into it.
type Written struct {
	atomicfile.Result
	Nodes   int `json:"nodes"`
	Layouts int `json:"layouts"`
}

// WriteNodeLines writes NodeLines to path atomically and reports it; a file
// with a line merge does not write, or one it cannot read, is refused and
// left (advice.ClusterNodeLines*).
func (f *Fleet) WriteNodeLines(path string, backup bool) (*Written, error) {
	target, err := atomicfile.Target(path)
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(target); err == nil && info.Mode().IsRegular() {
		anyNode := func(node string) bool { return node != "" }
		var foreign *slurmconf.ForeignLine
		switch err := slurmconf.ForeignNodeLine(target, anyNode, []string{"NodeName", "Gres"}); {
		case errors.As(err, &foreign):
			return nil, advice.Wrap(foreign, advice.ClusterNodeLinesForeignLine, target)
		case err != nil:
			return nil, advice.Wrap(err, advice.ClusterNodeLinesUnreadable, target)
		}
	}
	return f.write(path, f.NodeLines(), backup)
}

// write writes data, the fleet's gres.conf or node lines, to path
// atomically (atomicfile), as gen -o does, and reports the write.
func (f *Fleet) write(path string, data []byte, backup bool) (*Written, error) {
	res, err := atomicfile.Write(path, data, atomicfile.Options{Backup: backup})
	if err != nil {
		return nil, err
	}
	return &Written{Result: res, Nodes: f.nodes, Layouts: len(f.Layouts)}, nil
}

// WriteGresConf writes GresConf to path atomically and reports it; a file
// differing only in its header's build is left, and one with a line merge
// does not write, or one it cannot read, is refused (advice.ClusterGresConf*).
func (f *Fleet) WriteGresConf(path, version string, backup bool) (*Written, error) {
	data := f.GresConf(version)
	target, err := atomicfile.Target(path)
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(target); err == nil && info.Mode().IsRegular() {
		old, err := slurmconf.ForeignGresLine(target, mergeComment, f.names())
		var foreign *slurmconf.ForeignLine
		switch {
		case errors.As(err, &foreign):
			return nil, advice.Wrap(foreign, advice.ClusterGresConfForeignLine, target)
		case err != nil:
			return nil, advice.Wrap(err, advice.ClusterGresConfUnreadable, target)
		}
		if sameButBuild([]byte(old), data) {
			return &Written{Result: atomicfile.Result{Path: target}, Nodes: f.nodes, Layouts: len(f.Layouts)}, nil
		}
	}
	return f.write(path, data, backup)
}

// names are the GRES names (lower case) of the fleet's records.
func (f *Fleet) names() map[string]bool {
	names := map[string]bool{}
	for _, l := range f.Layouts {
		for _, r := range l.Records {
			names[strings.ToLower(r.Name)] = true
		}
	}
	return names
}

// sameButBuild reports whether two gres.conf files of merge differ at
// most in their first lines, each a header of merge naming its build.
func sameButBuild(a, b []byte) bool {
	lineA, restA, _ := bytes.Cut(a, []byte("\n"))
	lineB, restB, _ := bytes.Cut(b, []byte("\n"))
	return mergeComment(1, string(lineA)) && mergeComment(1, string(lineB)) && bytes.Equal(restA, restB)
}

// WriteText writes "PATH: changed (N nodes, M layouts)", as gen -o says it.
func (w Written) WriteText(out io.Writer) error {
	_, err := fmt.Fprintf(out, "%s: %s (%s, %s)\n", w.Path, w.Changes(), plural(w.Nodes, "node", "nodes"), plural(w.Layouts, "layout", "layouts"))
	return err
}

// WriteJSON writes the report as one JSON object.
func (w Written) WriteJSON(out io.Writer) error { return json.NewEncoder(out).Encode(w) }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
