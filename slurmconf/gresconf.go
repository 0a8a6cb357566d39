package slurmconf

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/fileio"
)

// maxConfBytes bounds one config file: a 10,000-node cluster's gres.conf
// is a few MiB.
const maxConfBytes = 256 << 20

// maxIncludeDepth bounds Include nesting; deeper is taken for a loop.
const maxIncludeDepth = 16

// ParsedRecord is a gres.conf record with where it was read.
type ParsedRecord struct {
	GresRecord
	Nodes      string // the NodeName= hostlist as written; empty for all nodes
	AutoDetect string // a per-line AutoDetect=
	Pos        string // "file:line"

	multipleFiles, count string // as written, checked only for this node's lines
}

// GresConf is what a gres.conf says for one node: its records and the
// AutoDetect= setting in force for it.
type GresConf struct {
	Records       []ParsedRecord
	AutoDetect    string // the node's AutoDetect=, else the global one, if any
	AutoDetectPos string // file:line of that AutoDetect=
	// Named says some line's NodeName= names the node; Others are the
	// names on other lines. A file that never names the node most likely
	// names it otherwise (gpu01.cluster.example where Slurm says gpu01).
	Named  bool
	Others OtherNodes
	// Problems are what slurmd logs of the node's lines and goes on
	// from, in order.
	Problems       []Problem
	units          int  // GRES units of the records so far, bounded by maxNodeUnits
	nodeAutoDetect bool // AutoDetect is the node's own, which the global one does not undo
	// globalAutoDetect is the file:line of the last global AutoDetect=.
	globalAutoDetect string
}

// maxNodeUnits bounds the GRES units one node's records may add up to, so
// that hostile ranges (File=/dev/x[0-65535] on every line) cannot make a
// reader use gigabytes. Real nodes have a few hundred at most.
const maxNodeUnits = 1 << 16

// gresKey numbers the gres.conf keywords (Slurm's gres.c) for a per-line
// "seen" bit set.
type gresKey uint

const (
	keyNodeName gresKey = iota
	keyName
	keyType
	keyFile
	keyMultipleFiles
	keyCount
	keyCores
	keyLinks
	keyFlags
	keyAutoDetect
)

// gresKeys are the keywords by lower-case name. Files= is File='s alias,
// CPUs= the old name of Cores=.
var gresKeys = map[string]gresKey{
	"nodename": keyNodeName, "name": keyName, "type": keyType, "file": keyFile, "files": keyFile,
	"multiplefiles": keyMultipleFiles, "count": keyCount, "cores": keyCores, "cpus": keyCores,
	"links": keyLinks, "flags": keyFlags, "autodetect": keyAutoDetect,
}

// gresKeyID looks a keyword up without regard to case, without allocating
// (a cluster's gres.conf has a hundred thousand of them).
func gresKeyID(key string) (gresKey, bool) {
	var buf [16]byte
	if len(key) > len(buf) {
		return 0, false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	id, ok := gresKeys[string(buf[:len(key)])]
	return id, ok
}

// ReadGresConf reads a gres.conf and its Includes and keeps the records that
// apply to node, checked as slurmd checks them: the error is what slurmd
// dies of (*FatalError) or an unreadable file; what it skips are Problems.
func ReadGresConf(path, node string) (*GresConf, error) {
	f, err := ReadGresFile(path)
	if err != nil {
		return nil, err
	}
	return f.Node(node)
}

// Stdin is the name that makes ReadGresConf and ReadNodeGres read standard
// input, as diff tools take "-"; messages call it StdinName.
const (
	Stdin     = "-"
	StdinName = "<stdin>"
)

// confSource is a config file's content and how it was read.
type confSource struct {
	data string
	name string // the path, or StdinName
	// stream is true for standard input, a pipe or a socket (diff
	// --gres-conf <(ssh node cat /etc/slurm/gres.conf)): it has no
	// directory to take a relative Include from.
	stream bool
}

// readConf reads a config file, a pipe or (path "-") standard input, all
// bounded by maxConfBytes, and refuses binary data. Files and pipes are
// read as readConfInto reads them.
func readConf(path string) (confSource, error) {
	if path != Stdin {
		var buf []byte
		data, fifo, err := readConfInto(path, &buf)
		return confSource{data: data, name: path, stream: fifo}, err
	}
	src := confSource{name: StdinName}
	b, stream, err := fileio.ReadStdin(src.name, maxConfBytes, func(size int64) error {
		if size >= 0 {
			return fmt.Errorf("%s: %d bytes is too large for a Slurm config", src.name, size)
		}
		return fmt.Errorf("%s: more than %d MiB is too large for a Slurm config", src.name, maxConfBytes>>20)
	})
	src.stream = stream
	if err != nil {
		return src, err
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return src, fmt.Errorf("%s: binary data (NUL byte); not a Slurm config", src.name)
	}
	src.data = string(b)
	return src, nil
}

// readConfInto reads a fragment, a regular file or a pipe (merge
// <(ssh gpu01 slurm-mig gen)), as readConf does, through *buf, which is
// kept for the next call (fileio.ReadRaw). fifo says the path was a pipe.
func readConfInto(path string, buf *[]byte) (data string, fifo bool, err error) {
	b, fifo, err := fileio.ReadRaw(path, buf, maxConfBytes, func(size int64) error {
		if size >= 0 {
			return fmt.Errorf("%s: %d bytes is too large for a Slurm config", path, size)
		}
		return fmt.Errorf("%s: more than %d MiB is too large for a Slurm config", path, maxConfBytes>>20)
	})
	if err != nil {
		return "", false, err
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return "", false, fmt.Errorf("%s: binary data (NUL byte); not a Slurm config", path)
	}
	return string(b), fifo, nil
}

// includeTarget recognises "Include <file>" (any case), as Slurm does.
func includeTarget(text string) (string, bool) {
	t := strings.TrimLeft(text, " \t")
	if len(t) < len("include ") || !strings.EqualFold(t[:len("include")], "include") || !isBlank(t[len("include")]) {
		return "", false
	}
	fields := strings.Fields(t[len("include"):])
	if len(fields) == 0 {
		return "", false
	}
	return unescape(fields[0]), true
}

// lineWords splits line l of file into words (appended to ws), with
// errors that name the file and line.
func lineWords(l *logicalLine, file string, ws []word) ([]word, error) {
	ws, err := words(l, ws)
	if err != nil {
		return ws, fmt.Errorf("%s: %v", linePos(file, l), err)
	}
	return ws, nil
}

// parseRecord reads the words of gres.conf line l into a record, unchecked
// and without Pos, with the keywords it names and one given twice; its
// error is one slurmd dies of (an unknown keyword, a wrong first key).
func parseRecord(ws []word, l *logicalLine, file string) (r ParsedRecord, seen uint, twice string, err error) {
	for i, w := range ws {
		id, ok := gresKeyID(w.key)
		if !ok {
			if w.key == "" {
				return r, 0, "", fmt.Errorf("%s: %q is not a key=value pair", linePos(file, l), w.value)
			}
			return r, 0, "", fmt.Errorf("%s: unknown gres.conf keyword %q", linePos(file, l), w.key)
		}
		switch {
		case i == 0 && id != keyName && id != keyNodeName && id != keyAutoDetect:
			return r, 0, "", fmt.Errorf("%s: a line starts with Name=, NodeName= or AutoDetect=, not %s=", linePos(file, l), w.key)
		case i > 0 && ws[0].key != "" && gresKeyMust(ws[0].key) == keyAutoDetect:
			return r, 0, "", fmt.Errorf("%s: AutoDetect= first on a line stands alone; put NodeName= or Name= first", linePos(file, l))
		}
		if seen&(1<<id) != 0 && twice == "" {
			twice = w.key
		}
		seen |= 1 << id
		switch id {
		case keyNodeName:
			r.Nodes, r.NodeName = w.value, w.value
		case keyName:
			r.Name = w.value
		case keyType:
			r.Type = w.value
		case keyFile:
			r.File = w.value
		case keyMultipleFiles:
			r.multipleFiles = w.value
		case keyCount:
			r.count = w.value
		case keyCores:
			r.Cores = w.value
		case keyLinks:
			r.Links = w.value
		case keyFlags:
			r.Flags = w.value
		case keyAutoDetect:
			r.AutoDetect = w.value
		}
	}
	return r, seen, twice, nil
}

// gresKeyMust is gresKeyID for a key already known to be a keyword.
func gresKeyMust(key string) gresKey {
	id, _ := gresKeyID(key)
	return id
}

// linePos is "file:line" for a line of file.
func linePos(file string, l *logicalLine) string { return file + ":" + strconv.Itoa(l.num) }

// isSetting reports whether a line is an AutoDetect= setting (global, or
// for the nodes of its NodeName=) rather than a record.
func isSetting(r *ParsedRecord, seen uint) bool {
	return r.Name == "" && r.AutoDetect != "" && seen&^(1<<keyNodeName|1<<keyAutoDetect) == 0
}

// setAutoDetect keeps the AutoDetect= in force for the node as slurmd -G
// reads it (docs/slurm-syntax.md); a second node-local one that differs is
// fatal.
func (c *GresConf) setAutoDetect(r *ParsedRecord, setting bool) error {
	switch {
	case r.AutoDetect == "":
	case r.Nodes != "":
		if !c.nodeAutoDetect {
			c.AutoDetect, c.AutoDetectPos, c.nodeAutoDetect = r.AutoDetect, r.Pos, true
		} else if !strings.EqualFold(c.AutoDetect, r.AutoDetect) {
			return Fatalf(r.Pos, "AutoDetect=%s differs from the node's AutoDetect=%s at %s; slurmd: \"duplicate node-local AutoDetect specification does not match the first\"", r.AutoDetect, c.AutoDetect, c.AutoDetectPos)
		}
	case setting:
		// The global AutoDetect= is one setting: slurmd logs a second
		// one and takes the last.
		if c.globalAutoDetect != "" {
			c.problem(r.Pos, Error, "a second global AutoDetect= (the first at %s); slurmd logs \"AutoDetect specified more than once, latest value used\"", c.globalAutoDetect)
		}
		c.globalAutoDetect = r.Pos
		if !c.nodeAutoDetect {
			c.AutoDetect, c.AutoDetectPos = r.AutoDetect, r.Pos
		}
	}
	return nil
}

// checkRecord checks a record's values as Slurm does, and fills in its
// MultipleFiles and Count from what was written.
func checkRecord(r *ParsedRecord) error {
	if r.Name == "" {
		return fmt.Errorf("%s: record without Name=", r.Pos)
	}
	if r.multipleFiles != "" {
		files, err := ExpandHostlist(r.multipleFiles)
		if err != nil {
			return fmt.Errorf("%s: MultipleFiles=: %v", r.Pos, err)
		}
		switch {
		case r.File != "":
			return fmt.Errorf("%s: File= and MultipleFiles= exclude each other", r.Pos)
		case len(files) < 2:
			return fmt.Errorf("%s: MultipleFiles= needs at least two files", r.Pos)
		}
		r.MultipleFiles = files
	}
	if r.count != "" {
		n, err := parseCount(r.count)
		if err != nil {
			return fmt.Errorf("%s: Count=%s: %v", r.Pos, r.count, err)
		}
		r.Count = n
	}
	if r.File != "" {
		files, err := ExpandHostlist(r.File)
		if err != nil {
			return fmt.Errorf("%s: File=: %v", r.Pos, err)
		}
		if len(files) == 0 {
			return fmt.Errorf("%s: File=%s names no file", r.Pos, r.File)
		}
		if r.Count != 0 && r.Count != uint64(len(files)) && !SharingGres(r.Name) {
			noun := "files"
			if len(files) == 1 {
				noun = "file"
			}
			return fmt.Errorf("%s: Count=%d but File= names %d %s", r.Pos, r.Count, len(files), noun)
		}
	}
	return nil
}

// maxCount bounds counts: Slurm keeps GRES counts in 64 bits, but no
// node has more than 2^32 of anything, and int must hold a count.
const maxCount = 1 << 32

// parseCount reads a Slurm count: digits with an optional k, m, g or t
// suffix (powers of 1024).
func parseCount(s string) (uint64, error) {
	mult := uint64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a count")
	}
	if v > maxCount/mult {
		return 0, fmt.Errorf("count larger than %d", uint64(maxCount))
	}
	return v * mult, nil
}

// GresRecords returns the records as plain gres.conf records.
func (c *GresConf) GresRecords() []GresRecord {
	out := make([]GresRecord, len(c.Records))
	for i, r := range c.Records {
		out[i] = r.GresRecord
	}
	return out
}

// hostlistHas reports whether the hostlist expression names node, without
// expanding expressions that cannot (a cheap prefix test first: a cluster
// file has thousands of lines for other nodes).
func hostlistHas(expr, node string) (bool, error) {
	if !strings.ContainsAny(expr, "[, \t") {
		return expr == node, nil
	}
	names, err := ExpandHostlist(expr)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n == node {
			return true, nil
		}
	}
	return false, nil
}
