package slurmconf

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Severity says what slurmd, or slurmctld, does about a problem.
type Severity string

const (
	// Fatal: slurmd refuses to start.
	Fatal Severity = "fatal"
	// Error: slurmd logs an error and goes on, skipping the line or
	// reading it otherwise than written.
	Error Severity = "error"
	// Drain: slurmctld marks the node down, its GRES not as declared.
	Drain Severity = "drain"
	// Warning: slurmd says nothing, yet reads the lines otherwise than
	// written.
	Warning Severity = "warning"
)

// Problem is one thing slurmd of a node would say of its config.
type Problem struct {
	Pos      string   `json:"pos"` // file:line
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s: %s", p.Pos, p.Severity, p.Message)
}

// FatalError is a gres.conf that slurmd refuses: it dies reading it.
type FatalError struct{ Problem }

func (e *FatalError) Error() string { return e.Pos + ": " + e.Message }

// fatalf makes a FatalError; pos may be "" where the message has it.
func Fatalf(pos, format string, args ...any) *FatalError {
	return &FatalError{Problem{Pos: pos, Severity: Fatal, Message: fmt.Sprintf(format, args...)}}
}

// asFatal turns an error of a line ("file:line: message") into a
// FatalError with its position apart.
func AsFatal(err error) *FatalError {
	var fe *FatalError
	if errors.As(err, &fe) {
		return fe
	}
	msg := err.Error()
	pos := ""
	// "file:line: message": the position is up to the second ": ".
	if i := strings.Index(msg, ": "); i > 0 {
		if j := strings.LastIndexByte(msg[:i], ':'); j > 0 {
			pos, msg = msg[:i], msg[i+2:]
		}
	}
	return &FatalError{Problem{Pos: pos, Severity: Fatal, Message: msg}}
}

// GresFile is a gres.conf read once, with the files it Includes, for
// every node: each line's words parsed, its values checked only when a
// node reads it (Node), as slurmd checks only its own node's lines.
type GresFile struct {
	lines []gresLine
	// fatal is a line no node's slurmd gets past (a syntax error, an
	// unknown keyword): slurmd reads every line before choosing its own.
	fatal *FatalError
	// hosts caches NodeName= hostlists, expanded, by their text: a
	// cluster's lines name the same groups of nodes again and again.
	hosts map[string]hostSet
	// index, once Index has run: the lines of each node named, and
	// those every node reads (no NodeName=, or one that is no hostlist,
	// which every node's slurmd logs).
	index  map[string][]int
	common []int
	// names bounds what the run's hostlists expand to (NameBudget).
	names *NameBudget
}

// Names is the run's budget of hostlist names, which this file's
// hostlists count against; a caller that expands the run's other
// hostlists (check's slurm.conf) counts them against it too.
func (f *GresFile) Names() *NameBudget { return f.names }

// GresFileOf is a GresFile of records already read and checked (a
// RecordReader's), for a model of slurmd that reads them again.
func GresFileOf(recs []ParsedRecord) *GresFile {
	f := &GresFile{lines: make([]gresLine, 0, len(recs))}
	for _, r := range recs {
		units, err := r.Units()
		f.lines = append(f.lines, gresLine{rec: r, checked: true, units: units, checkErr: err})
	}
	return f
}

// NodeLines are the lines that name node, once Index has run: nodes with
// the same lines read the same records.
func (f *GresFile) NodeLines(node string) []int { return f.index[node] }

// gresLine is one line of a GresFile.
type gresLine struct {
	rec   ParsedRecord
	seen  uint
	twice string // a keyword given twice
	// checked, checkErr and units cache checkRecord, which depends on
	// the line alone.
	checked  bool
	checkErr error
	units    int
}

// hostSet is an expanded NodeName= hostlist, or why it is none.
type hostSet struct {
	names map[string]bool
	err   error
}

// ReadGresFile reads a gres.conf and its Includes (see ReadGresConf).
// Its error is a file that cannot be read; a line every slurmd dies of
// is the error of Node.
func ReadGresFile(path string) (*GresFile, error) {
	f := &GresFile{names: NewNameBudget()}
	var ws []word
	err := walkConf(path, nil, func(l *logicalLine, file string) bool {
		var err error
		if ws, err = lineWords(l, file, ws[:0]); err != nil {
			f.fatal = AsFatal(err)
			return false
		}
		r, seen, twice, err := parseRecord(ws, l, file)
		if err != nil {
			f.fatal = AsFatal(err)
			return false
		}
		r.Pos = linePos(file, l)
		f.lines = append(f.lines, gresLine{rec: r, seen: seen, twice: twice})
		return true
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Fatal is the line that every node's slurmd dies of, or nil.
func (f *GresFile) Fatal() *FatalError { return f.fatal }

// NodeNames are the names that the file's NodeName= hostlists give, in
// order, each once; hostlists that are none are left out.
func (f *GresFile) NodeNames() []string {
	var out []string
	seen := map[string]bool{}
	for i := range f.lines {
		nodes := f.lines[i].rec.Nodes
		if nodes == "" || seen[nodes] {
			continue
		}
		seen[nodes] = true
		names, err := f.hostlistNames(nodes)
		if err != nil {
			continue
		}
		for _, n := range names {
			if !seen["\x00"+n] {
				seen["\x00"+n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// hostlistNames expands expr, counting it against the run's budget once:
// an expression expanded before (hostlist's cache) is expanded again for
// free.
func (f *GresFile) hostlistNames(expr string) ([]string, error) {
	if hs, ok := f.hosts[expr]; ok && hs.err == nil {
		return ExpandHostlist(expr)
	}
	return f.names.Expand(expr)
}

// hostlist is the expanded NodeName= hostlist expr, cached.
func (f *GresFile) hostlist(expr string) hostSet {
	if hs, ok := f.hosts[expr]; ok {
		return hs
	}
	var hs hostSet
	names, err := f.hostlistNames(expr)
	if err != nil {
		hs.err = err
	} else {
		hs.names = make(map[string]bool, len(names))
		for _, n := range names {
			hs.names[n] = true
		}
	}
	if f.hosts == nil {
		f.hosts = map[string]hostSet{}
	}
	f.hosts[expr] = hs
	return hs
}

// Index expands every NodeName= hostlist once, so that Node reads only the
// lines of its node and of every node, for reading many nodes of one file.
// Node then no longer notes the other nodes' names (GresConf.Others).
func (f *GresFile) Index() {
	f.index = map[string][]int{}
	f.common = f.common[:0]
	for i := range f.lines {
		nodes := f.lines[i].rec.Nodes
		if nodes == "" {
			f.common = append(f.common, i)
			continue
		}
		if !strings.ContainsAny(nodes, "[, \t") {
			f.index[nodes] = append(f.index[nodes], i)
			continue
		}
		hs := f.hostlist(nodes)
		if hs.err != nil {
			f.common = append(f.common, i)
			continue
		}
		for n := range hs.names {
			f.index[n] = append(f.index[n], i)
		}
	}
}

// Node keeps the records that apply to node, as slurmd on that node reads
// them. The error is what slurmd dies of (a *FatalError); what it logs
// and goes on from is in the GresConf's Problems.
func (f *GresFile) Node(node string) (*GresConf, error) {
	c := &GresConf{}
	if f.index != nil {
		// The node's lines and the common ones, in file order.
		own, common := f.index[node], f.common
		for len(own) > 0 || len(common) > 0 {
			var i int
			if len(common) == 0 || len(own) > 0 && own[0] < common[0] {
				i, own = own[0], own[1:]
			} else {
				i, common = common[0], common[1:]
			}
			if err := f.addLine(c, &f.lines[i], node); err != nil {
				return c, AsFatal(err)
			}
		}
		if f.fatal != nil {
			return c, f.fatal
		}
		return c, nil
	}
	for i := range f.lines {
		if err := f.addLine(c, &f.lines[i], node); err != nil {
			return c, AsFatal(err)
		}
	}
	if f.fatal != nil {
		return c, f.fatal
	}
	return c, nil
}

// addLine reads one line for node.
func (f *GresFile) addLine(c *GresConf, l *gresLine, node string) error {
	r := l.rec
	if r.Nodes != "" {
		var mine bool
		if !strings.ContainsAny(r.Nodes, "[, \t") {
			mine = r.Nodes == node
		} else {
			hs := f.hostlist(r.Nodes)
			if hs.err != nil {
				// slurmd skips the line on every node: it logs a range
				// it cannot read, but not a '[' left open.
				sev := Error
				if !strings.Contains(r.Nodes, "]") {
					sev = Warning
				}
				c.problem(r.Pos, sev, "NodeName=%s: %v; slurmd skips the line", r.Nodes, hs.err)
				return nil
			}
			mine = hs.names[node]
		}
		if !mine {
			_ = c.Others.note(r.Nodes, node) // the hostlist expanded above
			return nil
		}
		c.Named = true
	}
	if l.twice != "" {
		c.problem(r.Pos, Error, "%s= given twice; slurmd reads the last value", l.twice)
	}
	setting := isSetting(&r, l.seen)
	if err := c.setAutoDetect(&r, setting); err != nil {
		return err
	}
	if setting {
		return nil // AutoDetect=... alone is a setting, not a record
	}
	if r.Name == "" {
		c.problem(r.Pos, Error, "record without Name= (slurmd: \"Invalid GRES data, no type name\"); slurmd skips it")
		return nil
	}
	if !l.checked {
		l.checkErr = checkRecord(&l.rec)
		if l.checkErr == nil {
			l.units, l.checkErr = l.rec.Units()
			if l.checkErr != nil {
				l.checkErr = fmt.Errorf("%s: %v", r.Pos, l.checkErr)
			}
		}
		l.checked = true
	}
	if l.checkErr != nil {
		return l.checkErr
	}
	if c.units += l.units; c.units > maxNodeUnits {
		return fmt.Errorf("%s: the node's records add up to more than %d GRES units", r.Pos, maxNodeUnits)
	}
	c.Records = append(c.Records, l.rec)
	return nil
}

// problem notes a problem slurmd logs and goes on from.
func (c *GresConf) problem(pos string, sev Severity, format string, args ...any) {
	c.Problems = append(c.Problems, Problem{Pos: pos, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// CheckLines finds what slurmd of release v dies of in the node's records
// taken together (Slurm's gres.c): a GRES with records both with and
// without files or a type; two records without files of one GRES and type.
func (c *GresConf) CheckLines(v Version) error {
	type has struct {
		files, none    string // the first record with files, without
		typed, untyped string // with Type=, without
		countOnly      map[string]string
	}
	byName := map[string]*has{}
	var order []string
	for i := range c.Records {
		r := &c.Records[i]
		name := strings.ToLower(r.Name)
		h := byName[name]
		if h == nil {
			h = &has{countOnly: map[string]string{}}
			byName[name] = h
			order = append(order, name)
		}
		if r.File != "" || len(r.MultipleFiles) > 0 {
			if h.files == "" {
				h.files = r.Pos
			}
		} else {
			if h.none == "" {
				h.none = r.Pos
			}
			typ := strings.ToLower(r.Type)
			// GPU records without files are dropped before this check.
			if first, ok := h.countOnly[typ]; ok && name != "gpu" {
				return Fatalf(r.Pos, "a second %s record without files (the first at %s); slurmd: \"gres.conf duplicate records for %s\"", r.Name, first, r.Name)
			}
			h.countOnly[typ] = r.Pos
		}
		if r.Type != "" {
			if h.typed == "" {
				h.typed = r.Pos
			}
		} else if h.untyped == "" {
			h.untyped = r.Pos
		}
	}
	for _, name := range order {
		h := byName[name]
		if h.files != "" && h.none != "" {
			return Fatalf(h.none, "%s records with File= (%s) and without; slurmd: \"some records have File specification while others do not\"", name, h.files)
		}
		if h.typed != "" && h.untyped != "" {
			return Fatalf(h.untyped, "%s records with Type= (%s) and without; slurmd: \"some records have Type= specification while others do not\"", name, h.typed)
		}
	}
	return nil
}

// CheckEnvFlags is slurmd's check, from 21.08, that a record's *_env flags
// match those of the record of the same GRES before it; it returns the
// error slurmd dies of (docs/slurm-syntax.md).
func (c *GresConf) CheckEnvFlags(v Version) error {
	if v.Before(envFlagsSince) {
		return nil
	}
	const unset = ""
	inForce := map[string]string{} // by the name without case
	pos := map[string]string{}
	for i := range c.Records {
		r := &c.Records[i]
		key := strings.ToLower(r.Name)
		prev := inForce[key]
		env := envFlagsOf(r.Flags, v)
		switch {
		case env != "" && prev != unset && env != prev:
			return Fatalf(r.Pos, "Flags=%s: the *_env flags differ from those of the %s record before it, at %s; slurmd: \"does not match env flags for previous GRES of same node and name\"", r.Flags, r.Name, pos[key])
		case env != "":
		case r.Name != "gpu":
			env = unset
		default:
			env = "default"
		}
		pos[key] = r.Pos
		inForce[key] = env
	}
	return nil
}

// envFlagsSince: the *_env flags came in 21.08.
var envFlagsSince = Version{21, 8, -1}

// explicitFlagsSince, explicitFlagsUntil: the releases whose slurmd takes
// any Flags= as the record's whole set of *_env flags, so Flags=CountOnly
// says "none", not "the default" (seen in 24.11.5, not 22.05.8 or 26.05.5).
var (
	explicitFlagsSince = Version{24, 11, -1}
	explicitFlagsUntil = Version{26, 5, -1}
)

// envFlagsOf is envFlags as release v reads a Flags= value: "" for the
// default, "none" where v takes a Flags= without *_env words as none.
func envFlagsOf(flags string, v Version) string {
	env := envFlags(flags)
	if env == "" && flags != "" && !v.Before(explicitFlagsSince) && v.Before(explicitFlagsUntil) {
		return "none"
	}
	return env
}

// envFlags are the *_env words of a Flags= value, lower-case, sorted.
func envFlags(flags string) string {
	if flags == "" {
		return ""
	}
	var env []string
	for _, w := range strings.Split(strings.ToLower(flags), ",") {
		if w = strings.TrimSpace(w); strings.HasSuffix(w, "_env") {
			env = append(env, w)
		}
	}
	sort.Strings(env)
	return strings.Join(env, ",")
}

// checkShared: slurmd dies on a shared GRES (mps, shard) with no GPU
// to share ("failed to merge SHARED and SHARING configuration").
func (c *GresConf) CheckShared() error {
	gpu := false
	for i := range c.Records {
		gpu = gpu || c.Records[i].Name == "gpu"
	}
	for i := range c.Records {
		if r := &c.Records[i]; SharingGres(r.Name) && !gpu {
			return Fatalf(r.Pos, "Name=%s with no Name=gpu to share; slurmd: \"failed to merge SHARED and SHARING configuration\"", r.Name)
		}
	}
	return nil
}
