package slurmconf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
)

// NodeGres is what slurm.conf declares for one node's GRES.
type NodeGres struct {
	Gres string // the Gres= value in force, "" when none
	Pos  string // file:line of the NodeName line, and of the DEFAULT it inherits Gres= from
}

// ReadNodeGres finds node's Gres= in a slurm.conf (following Includes):
// from the NodeName= line whose hostlist names it, or else from the last
// NodeName=DEFAULT line before it that sets Gres= (ReadSlurmNode).
func ReadNodeGres(path, node string) (NodeGres, error) {
	n, err := ReadSlurmNode(path, node)
	if err != nil {
		return NodeGres{}, err
	}
	return n.NodeGres(), nil
}

// NodeGres is the line's Gres= in force, with where it was written.
func (n *SlurmNode) NodeGres() NodeGres {
	if n.gresFrom == "" {
		return NodeGres{Gres: n.Gres, Pos: n.Pos}
	}
	return NodeGres{Gres: n.Gres, Pos: n.Pos + " (Gres= of NodeName=DEFAULT at " + n.gresFrom + ")"}
}

// ReadNodesGres is ReadNodeGres for many nodes, reading the file once:
// each node's Gres= by its name. A node no line names is missing from
// the map; one that two lines name is an error, as for one node.
func ReadNodesGres(path string, nodes []string) (map[string]NodeGres, error) {
	want := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		want[n] = true
	}
	lines, err := ReadSlurmNodes(path)
	if err != nil {
		return nil, err
	}
	found := make(map[string]NodeGres, len(nodes))
	for i := range lines {
		l := &lines[i]
		names := []string{l.Nodes}
		if !OneHost(l.Nodes) {
			if names, err = ExpandHostlist(l.Nodes); err != nil {
				return nil, fmt.Errorf("%s: NodeName=: %v", l.Pos, err)
			}
		}
		for _, n := range names {
			if !want[n] {
				continue
			}
			if first, dup := found[n]; dup {
				return nil, DeclaredTwice(path, n, first.Pos, l.Pos)
			}
			found[n] = l.NodeGres()
		}
	}
	return found, nil
}

// confName is how errors name the slurm.conf at path.
func confName(path string) string {
	if path == Stdin {
		return StdinName
	}
	return path
}

// walkConf calls visit for each logical line of path and its Includes, with
// the file it is in, until visit returns false; every file read counts
// against one budget, which bounds Includes repeated without a loop.
func walkConf(path string, chain []string, visit func(l *logicalLine, file string) bool) error {
	budget := int64(maxIncludeBudget)
	return walkConfIn(path, chain, &budget, visit)
}

// maxIncludeBudget bounds what one walk of a config and its Includes reads,
// each file counting its bytes but at least minIncludeCost, so rereading a
// small file ends too. What is read is kept, so it bounds memory as well.
const (
	maxIncludeBudget = 64 << 20
	minIncludeCost   = 16 << 10
)

// errIncludeBudget is the refusal of a walk past its budget; it is not
// wrapped in the chain of Includes that led there, which would make a
// line of every level's file:line. Its hint is what most likely made it.
var errIncludeBudget = advice.Hinted(fmt.Errorf("Includes read more than %d MiB in all (counting each file read at least %d KiB): too much for a Slurm config", maxIncludeBudget>>20, minIncludeCost>>10),
	"; is a file Included over and over?")

func walkConfIn(path string, chain []string, budget *int64, visit func(l *logicalLine, file string) bool) error {
	if len(chain) >= maxIncludeDepth {
		return fmt.Errorf("%s: Includes nested deeper than %d", path, maxIncludeDepth)
	}
	if *budget <= 0 {
		return fmt.Errorf("%s: %w", chain[0], errIncludeBudget)
	}
	src, err := readConf(path)
	if err != nil {
		return err
	}
	if *budget -= max(int64(len(src.data)), minIncludeCost); *budget < 0 && len(chain) > 0 {
		return fmt.Errorf("%s: %w", chain[0], errIncludeBudget)
	}
	chain = append(chain, path)
	var incErr error
	scanLines(src.data, func(l *logicalLine) bool {
		inc, ok := includeTarget(l.text)
		if !ok {
			return visit(l, src.name)
		}
		if !filepath.IsAbs(inc) {
			if src.stream {
				// A pipe's content came from elsewhere (another node,
				// another directory): the working directory would be a
				// guess, and a wrong one reads some other file.
				incErr = advice.Hinted(fmt.Errorf("%s:%d: Include %s: a relative Include in a config read from a pipe or standard input has no directory to be taken from", src.name, l.num, inc),
					"; pass the file itself, or make the Include absolute")
				return false
			}
			inc = filepath.Join(filepath.Dir(path), inc)
		}
		if loop := includeLoop(chain, inc); loop != nil {
			loop.at = fmt.Sprintf("%s:%d", src.name, l.num)
			incErr = loop
			return false
		}
		if err := walkConfIn(inc, chain, budget, visit); err != nil {
			var loop *includeLoopError
			if !errors.Is(err, errIncludeBudget) && !errors.As(err, &loop) {
				err = fmt.Errorf("%s:%d: %w", src.name, l.num, err)
			}
			incErr = err // a loop names the Include that closes it, and the budget its file, once
			return false
		}
		return true
	})
	return incErr
}

// includeLoopError is an Include of a file that is being read already.
// It is said once, at the Include that closes the loop, with the files
// of the loop each named once: not again at every Include on the way.
type includeLoopError struct {
	at    string   // file:line of the Include that closes the loop
	chain []string // the files of the loop, from the one included again
}

func (e *includeLoopError) Error() string {
	if len(e.chain) == 1 {
		return fmt.Sprintf("%s: Include loop: %s includes itself", e.at, e.chain[0])
	}
	return fmt.Sprintf("%s: Include loop: %s -> back to %s", e.at, strings.Join(e.chain, " -> "), e.chain[0])
}

// includeLoop is the loop that including inc from the last file of chain
// makes, nil if none: inc is a file being read already, whatever path
// names it (relative, absolute, through a link).
func includeLoop(chain []string, inc string) *includeLoopError {
	incAbs, _ := filepath.Abs(inc)
	for i, p := range chain {
		pAbs, _ := filepath.Abs(p)
		if same := pAbs == incAbs || fileio.SameFile(p, inc); same {
			return &includeLoopError{chain: append([]string(nil), chain[i:]...)}
		}
	}
	return nil
}

// ParseGresList reads a Gres= value, from slurm.conf ("gpu:a100:2") or
// scontrol, which adds socket bindings ("gpu:a100:2(S:0-1)"); "(null)" is
// empty. Counts of one name and type (compared without case) are added up.
func ParseGresList(s string) ([]GresCount, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" {
		return nil, nil
	}
	var out []GresCount
	for _, item := range SplitGresList(s) {
		if i := strings.IndexByte(item, '('); i >= 0 {
			item = item[:i]
		}
		parts := strings.Split(item, ":")
		// no_consume is a flag word, not a type or count.
		kept := parts[:0]
		for _, p := range parts {
			if !strings.EqualFold(p, "no_consume") {
				kept = append(kept, p)
			}
		}
		parts = kept
		c := GresCount{Name: parts[0], Count: 1}
		if c.Name == "" {
			return nil, fmt.Errorf("Gres=%s: empty name in %q", s, item)
		}
		rest := parts[1:]
		if len(rest) > 0 {
			if n, err := parseCount(rest[len(rest)-1]); err == nil {
				c.Count = int(n)
				rest = rest[:len(rest)-1]
			}
		}
		switch len(rest) {
		case 0:
		case 1:
			c.Type = rest[0]
		default:
			return nil, fmt.Errorf("Gres=%s: cannot read %q (want name[:type][:count])", s, item)
		}
		out = addCount(out, c)
	}
	return out, nil
}

// SplitGresList splits a GRES list (slurm.conf's Gres=, scontrol's
// GresUsed=) at the commas between its items, not those inside an item's
// parentheses, such as GresUsed's (IDX:0,2).
func SplitGresList(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func addCount(counts []GresCount, c GresCount) []GresCount {
	for i := range counts {
		if strings.EqualFold(counts[i].Name, c.Name) && strings.EqualFold(counts[i].Type, c.Type) {
			counts[i].Count += c.Count
			return counts
		}
	}
	return append(counts, c)
}

// UpdateNodeGresFile is the slurm.conf at path with the gpu items of node's
// own NodeName= line's Gres= set to gpus, every other byte kept. A line
// without Gres= inherits NodeName=DEFAULT's, found through Includes.
func UpdateNodeGresFile(path, node, gpus string) ([]byte, error) {
	text, _, err := readConfInto(path, new([]byte))
	if err != nil {
		return nil, err
	}
	inherited := func() (string, error) {
		ng, err := ReadNodeGres(path, node)
		return ng.Gres, err
	}
	updated, err := UpdateNodeGres(text, path, node, gpus, inherited)
	var none *noNodeLineError
	if errors.As(err, &none) {
		// The node's line may be in an Included file: say which.
		if n, rerr := ReadSlurmNode(path, node); rerr == nil && !strings.HasPrefix(n.Pos, path+":") {
			return nil, advice.Hinted(fmt.Errorf("%s: no NodeName=%s line of its own; %s declares it, in an Included file, which is not edited", path, node, n.Pos),
				"; update that file instead")
		}
	}
	return []byte(updated), err
}

// noNodeLineError is a slurm.conf's text with no NodeName= line of the
// node's own, not even in a hostlist.
type noNodeLineError struct{ file, node string }

func (e *noNodeLineError) Error() string {
	return fmt.Sprintf("%s: no NodeName=%s line (an Included file is not edited)", e.file, e.node)
}

// UpdateNodeGres returns slurm.conf data with the gpu items of node's own
// NodeName= line set to gpus, every other byte kept (a line naming others is
// refused); inherited, the Gres= in force, is asked only for a line without.
func UpdateNodeGres(data, name, node, gpus string, inherited func() (string, error)) (string, error) {
	type hit struct {
		line  *logicalLine
		words []word
		pos   string
	}
	var own []hit
	var shared []string
	var declared []string // every line that declares node, own or shared: file:line
	var lineErr error
	scanLines(data, func(l *logicalLine) bool {
		pos := fmt.Sprintf("%s:%d", name, l.num)
		if _, ok := includeTarget(l.text); ok {
			return true
		}
		ws, err := words(l, nil)
		if err != nil {
			lineErr = fmt.Errorf("%s: %v", pos, err)
			return false
		}
		if len(ws) == 0 || !strings.EqualFold(ws[0].key, "NodeName") {
			return true
		}
		if ws[0].value == node {
			line := *l
			line.segs = append([]segment(nil), l.segs...) // l is reused for the next line
			own = append(own, hit{&line, ws, pos})
			declared = append(declared, pos)
			return true
		}
		if strings.EqualFold(ws[0].value, "DEFAULT") {
			return true
		}
		if ok, err := hostlistHas(ws[0].value, node); err == nil && ok {
			shared = append(shared, fmt.Sprintf("NodeName=%s (%s)", ws[0].value, pos))
			declared = append(declared, pos)
		}
		return true
	})
	if lineErr != nil {
		return "", lineErr
	}
	switch {
	case len(declared) > 1:
		// slurmctld and slurmd die of it (FindNode): no line is the one
		// to set.
		return "", DeclaredTwice(name, node, declared[0], declared[1])
	case len(own) == 0 && len(shared) > 0:
		return "", advice.Hinted(fmt.Errorf("%s: %s is declared only in %s, together with other nodes", name, node, strings.Join(shared, ", ")),
			fmt.Sprintf("; give it a NodeName=%s line of its own (taking it out of that hostlist), or set Gres= for the whole group by hand", node))
	case len(own) == 0:
		return "", &noNodeLineError{file: name, node: node}
	}
	h := own[0]
	// Slurm takes the last Gres= of a line ("specified more than once,
	// latest value used"), so that is the one to set.
	for i := len(h.words) - 1; i >= 1; i-- {
		w := h.words[i]
		if !strings.EqualFold(w.key, "Gres") {
			continue
		}
		start := h.line.fileOffset(w.valStart)
		end := start + (w.valEnd - w.valStart)
		if data[start:end] != h.line.text[w.valStart:w.valEnd] {
			return "", advice.Hinted(fmt.Errorf("%s: the Gres= value is split across lines", h.pos), "; edit it by hand")
		}
		return data[:start] + setGpuItems(data[start:end], gpus) + data[end:], nil
	}
	// No Gres= yet: add it right after the NodeName= value, with the
	// other items of the Gres= the line inherited until now.
	from, err := inherited()
	if err != nil {
		return "", err
	}
	if i := strings.IndexAny(from, " \t\"#\\"); i >= 0 {
		return "", advice.Hinted(fmt.Errorf("%s: the Gres= this line inherits from NodeName=DEFAULT (%s) has %q, which cannot be copied onto it as it reads", h.pos, from, from[i]), "; give the line a Gres= by hand")
	}
	nw := h.words[0]
	at := h.line.fileOffset(nw.valEnd-1) + 1
	if at < len(data) && data[at] == '"' {
		at++
	}
	return data[:at] + " Gres=" + setGpuItems(from, gpus) + data[at:], nil
}

// setGpuItems is the Gres= value old with its gpu items replaced by gpus,
// at the first gpu item's place or first where there is none; every other
// item stays as written, in its order.
func setGpuItems(old, gpus string) string {
	var out []string
	placed := false
	if t := strings.TrimSpace(old); t != "" && t != "(null)" {
		for _, item := range SplitGresList(old) {
			if !isGpuItem(item) {
				out = append(out, item)
				continue
			}
			if !placed && gpus != "" {
				out = append(out, gpus)
			}
			placed = true
		}
	}
	if !placed && gpus != "" {
		out = append([]string{gpus}, out...)
	}
	return strings.Join(out, ",")
}

// isGpuItem reports whether a Gres= item (gpu, gpu:a100:2, GPU:2(S:0))
// is a gpu one: its name compares as diff compares it, without case.
func isGpuItem(item string) bool {
	name := item
	if i := strings.IndexAny(name, ":("); i >= 0 {
		name = name[:i]
	}
	return strings.EqualFold(strings.TrimSpace(unescape(name)), "gpu")
}

// GresTypeCounts reads a Gres= value as slurmd numbers one GRES name: one
// entry per type as written (Type "" for none), in order, repeated types'
// counts added up, socket bindings and no_consume dropped.
func GresTypeCounts(gres, name string) ([]GresCount, error) {
	gres = strings.TrimSpace(gres)
	if gres == "" || gres == "(null)" {
		return nil, nil
	}
	var out []GresCount
	add := func(typ string, n int) {
		for i := range out {
			if out[i].Type == typ {
				out[i].Count += n
				return
			}
		}
		out = append(out, GresCount{Name: name, Type: typ, Count: n})
	}
	for _, item := range SplitGresList(gres) {
		if i := strings.IndexByte(item, '('); i >= 0 {
			item = item[:i]
		}
		if item == name {
			add("", 1)
			continue
		}
		rest, ok := strings.CutPrefix(item, name+":")
		if !ok {
			continue
		}
		parts := strings.Split(rest, ":")
		count := 1
		if last := parts[len(parts)-1]; last != "" && last[0] >= '0' && last[0] <= '9' {
			n, err := parseCount(last)
			if err != nil {
				return nil, fmt.Errorf("Gres=%s: bad count in %q", gres, item)
			}
			count = int(n)
			parts = parts[:len(parts)-1]
		}
		typed := false
		for _, p := range parts {
			if p == "" || strings.EqualFold(p, "no_consume") {
				continue
			}
			add(p, count)
			typed = true
		}
		if !typed {
			add("", count)
		}
	}
	return out, nil
}

// SlurmNode is a NodeName= line of slurm.conf, with what it inherits
// from the NodeName=DEFAULT lines before it: the nodes it declares, their
// Gres= and the CPU layout that Cores= in gres.conf is held to.
type SlurmNode struct {
	Nodes string // the NodeName= hostlist as written
	Gres  string
	Pos   string // file:line
	// gresFrom is the file:line of the NodeName=DEFAULT whose Gres= the
	// line inherits; "" for its own, or none.
	gresFrom string
	// GresTypes is slurm.conf's GresTypes=, which every node shares,
	// with the file:line it is set at ("" where it is not).
	GresTypes, GresTypesPos string
	// The CPU layout words, 0 where not given.
	CPUs, Boards, Sockets, SocketsPerBoard, CoresPerSocket, ThreadsPerCore int
}

// Cores is the number of cores the line declares, as Slurm numbers
// gres.conf's abstract core ids; 0 when it says too little to tell.
func (n *SlurmNode) Cores() int {
	if n.CoresPerSocket > 0 {
		sockets := n.Sockets
		if sockets == 0 {
			sockets = max(n.Boards, 1) * max(n.SocketsPerBoard, 1)
		}
		return sockets * n.CoresPerSocket
	}
	if n.CPUs > 0 {
		return n.CPUs / max(n.ThreadsPerCore, 1)
	}
	return 0
}

// hasGres reports whether a line's words set Gres=.
func hasGres(ws []word) bool {
	for _, w := range ws[1:] {
		if strings.EqualFold(w.key, "Gres") {
			return true
		}
	}
	return false
}

// ReadSlurmNodes reads every NodeName= line of a slurm.conf (following
// Includes), in order, each with the defaults of the NodeName=DEFAULT
// lines before it.
func ReadSlurmNodes(path string) ([]SlurmNode, error) {
	var (
		out       []SlurmNode
		deflt     SlurmNode
		gresTypes string
		typesPos  string
		ws        []word
		lineErr   error
	)
	visit := func(l *logicalLine, file string) bool {
		if ws, lineErr = lineWords(l, file, ws[:0]); lineErr != nil {
			return false
		}
		if len(ws) > 0 && strings.EqualFold(ws[0].key, "GresTypes") {
			gresTypes, typesPos = ws[0].value, linePos(file, l)
		}
		if len(ws) == 0 || !strings.EqualFold(ws[0].key, "NodeName") {
			return true
		}
		n := deflt
		n.Nodes, n.Pos = ws[0].value, linePos(file, l)
		for _, w := range ws[1:] {
			var p *int
			switch strings.ToLower(w.key) {
			case "gres":
				n.Gres, n.gresFrom = w.value, ""
				continue
			case "cpus", "procs":
				p = &n.CPUs
			case "boards":
				p = &n.Boards
			case "sockets":
				p = &n.Sockets
			case "socketsperboard":
				p = &n.SocketsPerBoard
			case "corespersocket":
				p = &n.CoresPerSocket
			case "threadspercore":
				p = &n.ThreadsPerCore
			default:
				continue
			}
			v, err := strconv.Atoi(w.value)
			if err != nil || v < 0 {
				lineErr = fmt.Errorf("%s: %s=%s is not a number", n.Pos, w.key, w.value)
				return false
			}
			*p = v
		}
		if strings.EqualFold(n.Nodes, "DEFAULT") {
			if hasGres(ws) {
				n.gresFrom = n.Pos
			}
			deflt = n
			deflt.Nodes, deflt.Pos = "", ""
			return true
		}
		out = append(out, n)
		return true
	}
	if err := walkConf(path, nil, visit); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].GresTypes, out[i].GresTypesPos = gresTypes, typesPos
	}
	return out, lineErr
}

// SharingConfigured reports whether slurm.conf's GresTypes= names mps or
// shard: slurmd then reads the GPUs device by device, as the GPUs that
// mps or shard share.
func (n *SlurmNode) SharingConfigured() bool {
	for _, t := range strings.Split(n.GresTypes, ",") {
		if SharingGres(strings.TrimSpace(t)) {
			return true
		}
	}
	return false
}

// ReadSlurmNode is node's NodeName= line of a slurm.conf (following
// Includes), with what it inherits from NodeName=DEFAULT (FindNode).
func ReadSlurmNode(path, node string) (*SlurmNode, error) {
	lines, err := ReadSlurmNodes(path)
	if err != nil {
		return nil, err
	}
	return FindNode(lines, path, node)
}

// FindNode is the one place that decides which NodeName= line declares
// node: none is an error naming the names there are, and two is the
// *FatalError slurmctld and slurmd die of, at the second line.
func FindNode(lines []SlurmNode, path, node string) (*SlurmNode, error) {
	var (
		found  *SlurmNode
		others OtherNodes
	)
	for i := range lines {
		l := &lines[i]
		ok, err := hostlistHas(l.Nodes, node)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: NodeName=: %v", l.Pos, err)
		case ok && found != nil:
			return nil, DeclaredTwice(path, node, found.Pos, l.Pos)
		case ok:
			found = l
		default:
			if err := others.note(l.Nodes, node); err != nil {
				return nil, fmt.Errorf("%s: NodeName=: %v", l.Pos, err)
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no NodeName= line names %s%s", confName(path), node, others.Said(node))
	}
	return found, nil
}

// DeclaredTwice is what slurmctld and slurmd die of where two NodeName=
// lines of path name node, at first and second.
func DeclaredTwice(path, node, first, second string) *FatalError {
	return Fatalf(second, "%s is declared twice, at %s and %s; slurmctld and slurmd do not start (\"Duplicated NodeName %s in the config file\")", node, first, second, node)
}
