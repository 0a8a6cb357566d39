package slurmconf

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// A RecordReader reads gres.conf files that stand alone (gen's output),
// every record in order and checked; an Include or AutoDetect= is an error.
// Lines alike but for NodeName= share one Record; for one goroutine.
type RecordReader struct {
	records map[string]*Record // by the line's text less its NodeName= word
	nodes   map[string]string  // NodeName= values, each kept once
	buf     []byte
	ws      []word
	lines   []RecordLine
	header  Header
	data    string // the file the last Read read
}

// Header is the slurm.conf line that a file's `# slurm.conf: ` comment
// (the header gen writes) says the records need: its node and Gres=.
type Header struct {
	Num  int    // its line number; 0 where the file has none
	Node string // NodeName=
	Gres string // Gres=, "" where none
}

// headerPrefix starts the comment of gen's header that says the node's
// slurm.conf line.
const headerPrefix = "# slurm.conf: "

// Header is the last file read's `# slurm.conf: ` header, among its
// first lines, where gen writes it.
func (r *RecordReader) Header() Header { return r.header }

// readHeader finds the header in the first lines of data.
func readHeader(data string) Header {
	for num := 1; num <= 3 && data != ""; num++ {
		line, rest, _ := strings.Cut(data, "\n")
		data = rest
		text, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), headerPrefix)
		if !ok {
			continue
		}
		h := Header{Num: num}
		for _, f := range strings.Fields(text) {
			k, v, _ := strings.Cut(f, "=")
			switch {
			case strings.EqualFold(k, "NodeName"):
				h.Node = v
			case strings.EqualFold(k, "Gres"):
				h.Gres = v
			}
		}
		return h
	}
	return Header{}
}

// Record is a checked gres.conf record, without NodeName=, shared by the
// lines that read the same apart from NodeName=. It is read only.
type Record struct {
	GresRecord        // NodeName is empty
	Text       string // GresRecord.String(): the line as slurm-mig writes it, less NodeName=
	ID         int    // numbers the reader's records from 0, in the order first read
}

// RecordLine is one record line of a file.
type RecordLine struct {
	Nodes  string // NodeName= as written (a hostlist); "" when the line has none
	Num    int    // its line number, from 1
	Record *Record
}

// Read reads the file at path. The lines it returns are valid until the
// next call. Errors name the file and line.
func (r *RecordReader) Read(path string) ([]RecordLine, error) {
	data, _, err := readConfInto(path, &r.buf)
	if err != nil {
		return nil, err
	}
	r.data = data
	r.lines = r.lines[:0]
	r.header = readHeader(data)
	var lineErr error
	scanLines(data, func(l *logicalLine) bool {
		lineErr = r.addLine(l, path)
		return lineErr == nil
	})
	if lineErr != nil {
		return nil, lineErr
	}
	return r.lines, nil
}

func (r *RecordReader) addLine(l *logicalLine, file string) error {
	// A line as gen writes it, whose record was read before, needs no
	// more than its NodeName=: most lines of a fleet.
	if nodes, rest, ok := leadingNodeName(l.text); ok {
		if rec, hit := r.records[rest]; hit {
			r.lines = append(r.lines, RecordLine{Nodes: r.intern(nodes), Num: l.num, Record: rec})
			return nil
		}
	}
	if _, ok := includeTarget(l.text); ok {
		return advice.Hinted(fmt.Errorf("%s: Include is not followed here", linePos(file, l)), ": give the included file itself")
	}
	ws, err := lineWords(l, file, r.ws[:0])
	r.ws = ws
	if err != nil {
		return err
	}
	// The line less its NodeName= word: the same text is the same record.
	// With NodeName= first, as gen writes it, that is a substring.
	nodes, rest := "", l.text
	for _, w := range ws {
		if id, ok := gresKeyID(w.key); ok && id == keyNodeName {
			nodes = w.value
			if isBlankLine(l.text[:w.start]) {
				rest = l.text[w.end:]
			} else {
				rest = l.text[:w.start] + l.text[w.end:]
			}
			break
		}
	}
	// A line that is not a record's (its first key wrong) may read as one
	// with NodeName= taken off: it is parsed, and refused, not looked up.
	first := -1
	if len(ws) > 0 {
		if id, ok := gresKeyID(ws[0].key); ok {
			first = int(id)
		}
	}
	rec, ok := r.records[rest]
	if !ok || first != int(keyName) && first != int(keyNodeName) {
		if rec, err = r.newRecord(ws, l, file); err != nil {
			return err
		}
		if r.records == nil {
			r.records = map[string]*Record{}
		}
		r.records[strings.Clone(rest)] = rec
	}
	r.lines = append(r.lines, RecordLine{Nodes: r.intern(nodes), Num: l.num, Record: rec})
	return nil
}

// leadingNodeName splits a line that starts with a plain NodeName= word
// (no quote or escape in it) into its value and the rest of the line: the
// cut addLine makes with the line's words, found without them.
func leadingNodeName(text string) (nodes, rest string, ok bool) {
	i := 0
	for i < len(text) && isBlank(text[i]) {
		i++
	}
	const key = "nodename="
	if len(text)-i < len(key) || !strings.EqualFold(text[i:i+len(key)], key) {
		return "", "", false
	}
	start := i + len(key)
	end := start
	for ; end < len(text) && !isBlank(text[end]); end++ {
		if c := text[end]; c == '"' || c == '\\' {
			return "", "", false
		}
	}
	return text[start:end], text[end:], true
}

// newRecord parses and checks a line not seen before.
func (r *RecordReader) newRecord(ws []word, l *logicalLine, file string) (*Record, error) {
	pr, seen, twice, err := parseRecord(ws, l, file)
	if err != nil {
		return nil, err
	}
	pr.Pos = linePos(file, l)
	if twice != "" {
		return nil, fmt.Errorf("%s: %s= given twice", pr.Pos, twice)
	}
	if seen&(1<<keyAutoDetect) != 0 {
		return nil, advice.Hinted(fmt.Errorf("%s: AutoDetect= is a setting of the node reading gres.conf, not a record", pr.Pos), "; set it in the cluster's gres.conf by hand")
	}
	if err := checkRecord(&pr); err != nil {
		return nil, err
	}
	rec := &Record{GresRecord: pr.GresRecord, ID: len(r.records)}
	rec.NodeName = ""
	rec.Text = rec.GresRecord.String()
	return rec, nil
}

// intern keeps one copy of each NodeName= value, so that the lines of a
// file do not hold on to the file's text.
func (r *RecordReader) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := r.nodes[s]; ok {
		return v
	}
	if r.nodes == nil {
		r.nodes = map[string]string{}
	}
	v := strings.Clone(s)
	r.nodes[v] = v
	return v
}

// CommentLines are the bodies of the comment lines, after "# " and
// prefix, of the file the last Read read: what a writer noted beside its
// records (gen's "# share: " lines). Valid until the next Read.
func (r *RecordReader) CommentLines(prefix string) []string {
	var out []string
	data := r.data
	want := "# " + prefix
	for data != "" {
		line, rest, _ := strings.Cut(data, "\n")
		data = rest
		if strings.HasPrefix(line, want) {
			out = append(out, strings.TrimSpace(strings.TrimSuffix(line[len(want):], "\r")))
		}
	}
	return out
}
