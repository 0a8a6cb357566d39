// Package fleet merges the gres.conf fragments gen writes on each node into
// one cluster gres.conf and its slurm.conf node lines, for configless Slurm;
// what it reads, keeps and refuses is in docs/fleet.md.
package fleet

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/accounting"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/slurmd"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Fleet is the merged cluster: every node, in the layout it has.
type Fleet struct {
	Layouts []*Layout // ordered by their first node, as hostlists sort
	nodes   int
	// shares are each fragment's share lines (gen's "# share: "), and
	// shareOf the fragment each node was first read from.
	shares  [][]string
	shareOf map[string]int
	files   []string
}

// Layout is one list of records and the nodes that have exactly it.
type Layout struct {
	Nodes    []string               // sorted as hostlists sort
	Records  []slurmconf.GresRecord // in the nodes' own order, NodeName left empty
	counts   []slurmconf.GresCount
	hostlist string // Nodes compressed, once merge has sorted them
}

// Nodes is how many nodes the fleet has.
func (f *Fleet) Nodes() int { return f.nodes }

// Hostlist is the layout's nodes as a Slurm hostlist: gpu[001-040,042].
func (l *Layout) Hostlist() string { return l.hostlist }

// Counts are the layout's Gres= totals per name and type, as `node`
// counts a node's records.
func (l *Layout) Counts() []slurmconf.GresCount { return l.counts }

// Fragments expands FILE and DIR arguments into fragment files: a file as
// given, a directory's *.conf (not dot files) in name order; output, if
// set, must not be among them (advice.OutputIsInput).
func Fragments(args []string, output string) ([]string, error) {
	if output != "" {
		cwd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		// An output that is, or would be, one of a directory's fragments.
		out := abs(cwd, output)
		for _, arg := range args {
			if abs(cwd, arg) == out || isFragment(filepath.Base(out)) && abs(cwd, filepath.Join(arg, filepath.Base(out))) == out {
				return nil, inputIsOutput(output)
			}
		}
	}
	return fileio.Expand(args, ".conf", "*.conf fragments")
}

// abs is filepath.Abs with the working directory looked up once, not
// once a file.
func abs(cwd, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(cwd, path)
}

// isFragment says which files of a directory are fragments.
func isFragment(name string) bool {
	return strings.HasSuffix(name, ".conf") && !strings.HasPrefix(name, ".")
}

// inputIsOutput refuses an output among the fragments: a merged file
// among them would be read back as one next time.
func inputIsOutput(output string) error {
	return advice.Wrap(fmt.Errorf("%s is among the inputs", output), advice.OutputIsInput)
}

// Merge reads the fragments that args name (see Fragments) and merges
// them; output is the file the result will be written to, if any.
func Merge(args []string, output string) (*Fleet, error) {
	files, err := Fragments(args, output)
	if err != nil {
		return nil, err
	}
	return Read(files)
}

// Read reads the fragments, several at a time, and merges them. An error
// names the file and line; with several bad fragments it is the first in
// the order given.
func Read(paths []string) (*Fleet, error) {
	frags := make([][]assignment, len(paths))
	shares := make([][]string, len(paths))
	errs := make([]error, len(paths))
	names := slurmconf.NewNameBudget()
	fileio.Each(len(paths), func() *reader { return &reader{names: names} }, func(r *reader, i int) {
		frags[i], errs[i] = r.read(paths[i])
		if errs[i] == nil {
			shares[i] = r.records.CommentLines(gresgen.HeaderShare)
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	f, err := merge(paths, frags)
	if err != nil {
		return nil, err
	}
	f.shares, f.files = shares, paths
	return f, nil
}

// reader reads fragments one after another (one reader a goroutine).
type reader struct {
	records   slurmconf.RecordReader
	layouts   map[string]*readLayout // by the IDs of their records
	hostlists map[string][]string    // NodeName= hostlists, expanded
	names     *slurmconf.NameBudget  // the merge's, shared by its readers
	sig       []byte
	// headerOK: the layouts whose records were found to add up to a
	// header's Gres=; a fleet's fragments share a few layouts.
	headerOK map[headerKey]bool
}

// headerKey is a layout with the Gres= of a header.
type headerKey struct {
	layout *readLayout
	gres   string
}

// readLayout is one list of records as a reader met it first.
type readLayout struct {
	key    string                 // the records' lines: what nodes must share
	recs   []slurmconf.GresRecord // NodeName empty
	texts  []string               // each record's line, less NodeName=
	layout *Layout                // the merged layout, once merge has met it
}

// assignment gives a node, in a fragment, a list of records.
type assignment struct {
	node   string
	layout *readLayout
	lines  []int // the numbers of the lines they are on
}

// read reads one fragment and gives each node it names the records that
// name it, in file order.
func (r *reader) read(path string) ([]assignment, error) {
	lines, err := r.records.Read(path)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s: no gres.conf records (a node without GPUs needs no fragment; an empty one may be a failed gen)", path)
	}
	for _, l := range lines {
		if l.Nodes == "" {
			return nil, advice.Wrap(fmt.Errorf("%s:%d: record without NodeName=: a fleet fragment must name its node", path, l.Num), advice.FragmentNodeName)
		}
		if rec := l.Record; strings.EqualFold(rec.Name, "gpu") && rec.File == "" && len(rec.MultipleFiles) == 0 {
			// slurmd drops it where mps or shard is configured, and
			// dies where other GPU records have files.
			return nil, fmt.Errorf("%s:%d: a gpu record without File= or MultipleFiles=: slurmd gives a job no device file for it; gen writes every GPU with its files", path, l.Num)
		}
	}
	h := r.records.Header()
	// gen names one node on every line: all its lines are the node's.
	if one := lines[0].Nodes; slurmconf.OneHost(one) && allFor(lines, one) {
		nums := make([]int, len(lines))
		for i, l := range lines {
			nums[i] = l.Num
		}
		l := r.layout(lines, nil)
		// The same records under the same header read the same, whatever
		// node they name: checked once.
		if k := (headerKey{l, h.Gres}); h.Node != one || !r.headerOK[k] {
			if err := checkHeader(path, h, lines); err != nil {
				return nil, err
			}
			if h.Node == one {
				if r.headerOK == nil {
					r.headerOK = map[headerKey]bool{}
				}
				r.headerOK[k] = true
			}
		}
		return []assignment{{one, l, nums}}, nil
	}
	if err := checkHeader(path, h, lines); err != nil {
		return nil, err
	}
	// Otherwise each node gets the lines whose hostlists name it.
	var order []string
	mine := map[string][]int{}
	for i, l := range lines {
		nodes, err := r.expand(l.Nodes)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: NodeName=: %v", path, l.Num, err)
		}
		for _, n := range nodes {
			idx, seen := mine[n]
			if !seen {
				order = append(order, n)
			}
			if len(idx) > 0 && idx[len(idx)-1] == i {
				continue // a hostlist naming the node twice gives it the record once
			}
			mine[n] = append(idx, i)
		}
	}
	out := make([]assignment, len(order))
	for i, n := range order {
		nums := make([]int, len(mine[n]))
		for j, k := range mine[n] {
			nums[j] = lines[k].Num
		}
		out[i] = assignment{n, r.layout(lines, mine[n]), nums}
	}
	return out, nil
}

// checkHeader refuses a fragment that slurmd, given its header's slurm.conf
// line, would read as other GPUs than its records (cut short, or edited),
// as the one model of slurmd's reading says (slurmd.ReadLines).
func checkHeader(path string, h slurmconf.Header, lines []slurmconf.RecordLine) error {
	if h.Num == 0 || h.Node == "" {
		return nil
	}
	var recs []slurmd.Line
	for _, l := range lines {
		recs = append(recs, slurmd.Line{Record: l.Record.GresRecord, Nodes: l.Nodes, Pos: fmt.Sprintf("%s:%d", path, l.Num)})
	}
	// GresTypes= is the cluster's: the header names the node's GRES.
	types := []string{"gpu"}
	for _, item := range slurmconf.SplitGresList(h.Gres) {
		name, _, _ := strings.Cut(item, ":")
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(types, name) {
			types = append(types, name)
		}
	}
	decl := &slurmconf.SlurmNode{Nodes: h.Node, Gres: h.Gres, GresTypes: strings.Join(types, ","), Pos: fmt.Sprintf("%s:%d", path, h.Num)}
	nc := slurmd.ReadLines(recs, h.Node, slurmconf.Version{}, decl)
	// A device given twice, a file in two GPUs: merge's own checks say
	// those, of the records alone.
	var why *slurmconf.Problem
	for i := range nc.Problems {
		if p := &nc.Problems[i]; p.Severity == slurmconf.Drain {
			why = p
			break
		}
	}
	for i := range nc.Misread {
		if p := &nc.Misread[i]; why == nil && p.Severity == slurmconf.Warning {
			why = p
		}
	}
	if why == nil {
		return nil
	}
	return advice.Hinted(fmt.Errorf("%s:%d: the records do not add up to this header (NodeName=%s Gres=%s): %s: %s; a fragment cut short or edited after gen wrote it",
		path, h.Num, h.Node, h.Gres, why.Pos, why.Message), " (run gen again on the node)")
}

func allFor(lines []slurmconf.RecordLine, nodes string) bool {
	for _, l := range lines {
		if l.Nodes != nodes {
			return false
		}
	}
	return true
}

// expand expands a NodeName= hostlist, once a reader.
func (r *reader) expand(hostlist string) ([]string, error) {
	if nodes, ok := r.hostlists[hostlist]; ok {
		return nodes, nil
	}
	nodes, err := r.names.Expand(hostlist)
	if err != nil {
		return nil, err
	}
	if r.hostlists == nil {
		r.hostlists = map[string][]string{}
	}
	r.hostlists[hostlist] = nodes
	return nodes, nil
}

// layout finds the layout of the lines picked by idx (all when nil):
// lines of records met before in the same order are the same layout.
func (r *reader) layout(lines []slurmconf.RecordLine, idx []int) *readLayout {
	pick := func(yield func(slurmconf.RecordLine) bool) {
		if idx == nil {
			for _, l := range lines {
				if !yield(l) {
					return
				}
			}
			return
		}
		for _, i := range idx {
			if !yield(lines[i]) {
				return
			}
		}
	}
	r.sig = r.sig[:0]
	for l := range pick {
		r.sig = binary.AppendUvarint(r.sig, uint64(l.Record.ID))
	}
	if l, ok := r.layouts[string(r.sig)]; ok {
		return l
	}
	l := &readLayout{}
	var key strings.Builder
	for line := range pick {
		key.WriteString(line.Record.Text)
		key.WriteByte('\n')
		l.recs = append(l.recs, line.Record.GresRecord)
		l.texts = append(l.texts, line.Record.Text)
	}
	l.key = key.String()
	if r.layouts == nil {
		r.layouts = map[string]*readLayout{}
	}
	r.layouts[string(r.sig)] = l
	return l
}

// merge puts every node into the layout of its records, refusing a node
// given different records in two places.
func merge(paths []string, frags [][]assignment) (*Fleet, error) {
	byKey := map[string]*Layout{}
	type placement struct {
		assignment
		file int
	}
	byNode := map[string]placement{}
	f := &Fleet{shareOf: map[string]int{}}
	for file, frag := range frags {
		for _, a := range frag {
			l := a.layout.layout
			if l == nil {
				if l = byKey[a.layout.key]; l == nil {
					if err := checkDevices(paths[file], a); err != nil {
						return nil, err
					}
					counts, err := slurmconf.CountGres(a.layout.recs)
					if err != nil { // unreachable: the reader checked File=
						return nil, fmt.Errorf("%s:%d: %v", paths[file], a.lines[0], err)
					}
					l = &Layout{Records: a.layout.recs, counts: counts}
					byKey[a.layout.key] = l
					f.Layouts = append(f.Layouts, l)
				}
				a.layout.layout = l
			}
			if p, seen := byNode[a.node]; seen {
				if p.layout.layout != l {
					return nil, conflict(a.node, paths[p.file], p.assignment, paths[file], a)
				}
				continue
			}
			byNode[a.node] = placement{a, file}
			f.shareOf[a.node] = file
			l.Nodes = append(l.Nodes, a.node)
		}
	}
	f.nodes = len(byNode)
	byFirst := map[string]*Layout{}
	firsts := make([]string, len(f.Layouts))
	for i, l := range f.Layouts {
		slurmconf.SortHostnames(l.Nodes)
		byFirst[l.Nodes[0]], firsts[i] = l, l.Nodes[0]
		// CompressHostlist is checked against scontrol by the tests; this
		// makes sure no node ever gets another's lines.
		l.hostlist = slurmconf.CompressHostlist(l.Nodes)
		if got, err := slurmconf.ExpandHostlist(l.hostlist); err != nil || !slices.Equal(got, l.Nodes) {
			return nil, fmt.Errorf("internal error: hostlist %s does not give back its %d nodes (%v)", l.hostlist, len(l.Nodes), err)
		}
	}
	slurmconf.SortHostnames(firsts)
	for i, n := range firsts {
		f.Layouts[i] = byFirst[n]
	}
	return f, nil
}

// conflict describes the first record in which two files' records of a
// node differ.
func conflict(node, fileA string, a assignment, fileB string, b assignment) error {
	ta, tb := a.layout.texts, b.layout.texts
	for i := range max(len(ta), len(tb)) {
		switch {
		case i >= len(ta):
			return fmt.Errorf("node %s is given twice with different records: %s:%d has %s, but %s has no more records for it (its last is at line %d)",
				node, fileB, b.lines[i], tb[i], fileA, a.lines[len(ta)-1])
		case i >= len(tb):
			return fmt.Errorf("node %s is given twice with different records: %s:%d has %s, but %s has no more records for it (its last is at line %d)",
				node, fileA, a.lines[i], ta[i], fileB, b.lines[len(tb)-1])
		case ta[i] != tb[i]:
			return fmt.Errorf("node %s is given twice with different records: %s:%d has %s, %s:%d has %s",
				node, fileA, a.lines[i], ta[i], fileB, b.lines[i], tb[i])
		}
	}
	panic("fleet: layouts of different keys have the same records") // keys are the records' lines
}

// checkDevices refuses a layout whose records name one device twice for one
// GRES (mps or shard on a GPU's file are not a second device); a is where
// the layout was first read, in file.
func checkDevices(file string, a assignment) error {
	type device struct{ name, files string } // files sorted: the same set in any order
	seen := map[device]int{}                 // -> line
	for i, r := range a.layout.recs {
		var shown []string // as the record names them
		switch {
		case len(r.MultipleFiles) > 0:
			shown = []string{strings.Join(r.MultipleFiles, ",")}
		case r.File != "":
			files, err := slurmconf.ExpandHostlist(r.File)
			if err != nil {
				return fmt.Errorf("%s:%d: File=: %v", file, a.lines[i], err)
			}
			shown = files
		}
		for _, d := range shown {
			files := strings.Split(d, ",")
			slices.Sort(files)
			key := device{strings.ToLower(r.Name), strings.Join(files, ",")}
			if at, dup := seen[key]; dup {
				return fmt.Errorf("%s:%d: device %s is given twice for node %s (first at line %d)", file, a.lines[i], d, a.node, at)
			}
			seen[key] = a.lines[i]
		}
	}
	return nil
}

// AccountingNodes are the fleet's nodes with their types' shares from the
// fragments' "# share: " lines; a type whose fragment notes none is an
// error naming the fragment.
func (f *Fleet) AccountingNodes() ([]accounting.Node, error) {
	tables := make([]map[string]accounting.Type, len(f.shares))
	var out []accounting.Node
	for _, l := range f.Layouts {
		for _, n := range l.Nodes {
			file := f.shareOf[n]
			if tables[file] == nil {
				tables[file] = map[string]accounting.Type{}
				for _, s := range f.shares[file] {
					t, err := accounting.ParseShareLine(s)
					if err != nil {
						return nil, fmt.Errorf("%s: %v", f.files[file], err)
					}
					k := strings.ToLower(t.Name)
					if old, dup := tables[file][k]; dup && accounting.ShareLine(old) != s {
						return nil, advice.Wrap(fmt.Errorf("%s: type %s has two share lines (%s; %s): one name for two sizes", f.files[file], t.Name, accounting.ShareLine(old), s), advice.TypeMap)
					}
					tables[file][k] = t
				}
			}
			an := accounting.Node{Name: n}
			for _, c := range l.counts {
				if !strings.EqualFold(c.Name, "gpu") {
					continue
				}
				t, ok := tables[file][strings.ToLower(c.Type)]
				if !ok {
					return nil, advice.Hinted(fmt.Errorf("%s: no \"# %s%s ...\" line for node %s's type %s", f.files[file], gresgen.HeaderShare, c.Type, n, c.Type),
						": regenerate the fragment with this slurm-mig's gen, from NVML or a snapshot with MIG profile tables (schema 2)")
				}
				an.Types = append(an.Types, t)
			}
			out = append(out, an)
		}
	}
	return out, nil
}

// shareLines are the share lines of every fragment, each once, in the
// order first met: the merged gres.conf notes them, so that it can be
// merged again.
func (f *Fleet) shareLines() []string {
	var out []string
	seen := map[string]bool{}
	for _, lines := range f.shares {
		for _, s := range lines {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}
