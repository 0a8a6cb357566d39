package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/slurm-mig/slurm-mig/internal/atomicfile"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// GresConf renders the cluster gres.conf: a header saying how many nodes
// and layouts went in, then each layout's records in its nodes' order,
// NodeName= their hostlist, after a comment with the layout's slurm.conf
// line. version names the writer in the header.
func (f *Fleet) GresConf(version string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# gres.conf written by slurm-mig %s merge; regenerate it, do not edit by hand.\n", version)
	fmt.Fprintf(&b, "# %s, %s: nodes with identical records share lines.\n",
		plural(f.nodes, "node", "nodes"), plural(len(f.Layouts), "layout", "layouts"))
	for i, l := range f.Layouts {
		hosts := l.Hostlist()
		fmt.Fprintf(&b, "\n# layout %d of %d: %s; slurm.conf: %s\n", i+1, len(f.Layouts),
			plural(len(l.Nodes), "node", "nodes"), slurmconf.NodeLine(hosts, l.Counts()))
		for _, r := range l.Records {
			r.NodeName = hosts
			b.WriteString(r.String())
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// NodeLines renders the slurm.conf lines, NodeName=<hostlist> Gres=...,
// one for each Gres= value: layouts that differ only in device files
// (other cap minors, other GPU instances) declare the same counts and
// share a line. Each node's Gres= is what `slurm-mig node` prints for it.
func (f *Fleet) NodeLines() []byte {
	type line struct {
		counts []slurmconf.GresCount
		nodes  []string
	}
	var lines []*line
	byGres := map[string]*line{}
	for _, l := range f.Layouts {
		counts := l.Counts()
		gres := slurmconf.GresList(counts)
		nl, ok := byGres[gres]
		if !ok {
			nl = &line{counts: counts}
			byGres[gres] = nl
			lines = append(lines, nl)
		}
		nl.nodes = append(nl.nodes, l.Nodes...)
	}
	var b bytes.Buffer
	for _, nl := range lines {
		slurmconf.SortHostnames(nl.nodes)
		b.WriteString(slurmconf.NodeLine(slurmconf.CompressHostlist(nl.nodes), nl.counts))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Written is what merge -o reports: the file, whether it changed, and
// what went into it.
type Written struct {
	Path    string `json:"path"`
	Changed bool   `json:"changed"`
	Backup  string `json:"backup,omitempty"`
	Nodes   int    `json:"nodes"`
	Layouts int    `json:"layouts"`
}

// Write writes data, the fleet's gres.conf or node lines, to path
// atomically (atomicfile), as gen -o does, and reports the write.
func (f *Fleet) Write(path string, data []byte, backup bool) (*Written, error) {
	res, err := atomicfile.Write(path, data, atomicfile.Options{Backup: backup})
	if err != nil {
		return nil, err
	}
	return &Written{Path: res.Path, Changed: res.Changed, Backup: res.Backup, Nodes: f.nodes, Layouts: len(f.Layouts)}, nil
}

// WriteText writes "PATH: changed (N nodes, M layouts)", as gen -o says it.
func (w Written) WriteText(out io.Writer) error {
	state := map[bool]string{false: "unchanged", true: "changed"}[w.Changed]
	_, err := fmt.Fprintf(out, "%s: %s (%s, %s)\n", w.Path, state, plural(w.Nodes, "node", "nodes"), plural(w.Layouts, "layout", "layouts"))
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
