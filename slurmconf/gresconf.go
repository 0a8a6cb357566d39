package slurmconf

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
}

// GresConf is a parsed gres.conf: its records and global settings.
type GresConf struct {
	Records    []ParsedRecord
	AutoDetect string // a global AutoDetect=, if any
}

// gresKeys are the gres.conf keywords (gres.c), by lower-case name.
var gresKeys = map[string]bool{
	"nodename": true, "name": true, "type": true, "file": true, "files": true,
	"multiplefiles": true, "count": true, "cores": true, "cpus": true,
	"links": true, "flags": true, "autodetect": true,
}

// ReadGresConf reads a gres.conf and the files it Includes (relative paths
// are taken from the including file's directory). Errors name the file and
// line.
func ReadGresConf(path string) (*GresConf, error) {
	conf := &GresConf{}
	if err := conf.read(path, nil); err != nil {
		return nil, err
	}
	return conf, nil
}

func (c *GresConf) read(path string, chain []string) error {
	for _, p := range chain {
		if p == path {
			return fmt.Errorf("%s: Include loop: %s", chain[0], strings.Join(append(chain, path), " -> "))
		}
	}
	if len(chain) >= maxIncludeDepth {
		return fmt.Errorf("%s: Includes nested deeper than %d", path, maxIncludeDepth)
	}
	data, err := readConf(path)
	if err != nil {
		return err
	}
	chain = append(chain, path)
	for _, l := range scanLines(data) {
		pos := fmt.Sprintf("%s:%d", path, l.num)
		if inc, ok := includeTarget(l.text); ok {
			if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(path), inc)
			}
			if err := c.read(inc, chain); err != nil {
				return fmt.Errorf("%s: %w", pos, err)
			}
			continue
		}
		if err := c.addLine(&l, pos); err != nil {
			return err
		}
	}
	return nil
}

func readConf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", path)
	}
	if info.Size() > maxConfBytes {
		return "", fmt.Errorf("%s: %d bytes is too large for a Slurm config", path, info.Size())
	}
	buf := make([]byte, info.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && info.Size() > 0 {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if strings.IndexByte(string(buf), 0) >= 0 {
		return "", fmt.Errorf("%s: binary data (NUL byte); not a Slurm config", path)
	}
	return string(buf), nil
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

func (c *GresConf) addLine(l *logicalLine, pos string) error {
	ws, err := words(l)
	if err != nil {
		return fmt.Errorf("%s: %v", pos, strings.TrimPrefix(err.Error(), fmt.Sprintf("line %d: ", l.num)))
	}
	r := ParsedRecord{Pos: pos}
	seen := map[string]bool{}
	for _, w := range ws {
		key := strings.ToLower(w.key)
		if !gresKeys[key] {
			if w.key == "" {
				return fmt.Errorf("%s: %q is not a key=value pair", pos, w.value)
			}
			return fmt.Errorf("%s: unknown gres.conf keyword %q", pos, w.key)
		}
		if key == "files" {
			key = "file"
		}
		if seen[key] {
			return fmt.Errorf("%s: %s= given twice", pos, w.key)
		}
		seen[key] = true
		switch key {
		case "nodename":
			r.Nodes = w.value
			r.NodeName = w.value
		case "name":
			r.Name = w.value
		case "type":
			r.Type = w.value
		case "file":
			r.File = w.value
		case "multiplefiles":
			files, err := ExpandHostlist(w.value)
			if err != nil {
				return fmt.Errorf("%s: MultipleFiles=: %v", pos, err)
			}
			r.MultipleFiles = files
		case "count":
			n, err := parseCount(w.value)
			if err != nil {
				return fmt.Errorf("%s: Count=%s: %v", pos, w.value, err)
			}
			r.Count = n
		case "cores", "cpus":
			r.Cores = w.value
		case "links":
			r.Links = w.value
		case "flags":
			r.Flags = w.value
		case "autodetect":
			r.AutoDetect = w.value
		}
	}
	switch {
	case r.Name == "" && r.AutoDetect != "" && len(seen) <= 2 && (len(seen) == 1 || seen["nodename"]):
		if r.Nodes == "" {
			c.AutoDetect = r.AutoDetect
		}
		return nil // AutoDetect=... alone is a setting, not a record
	case r.Name == "":
		return fmt.Errorf("%s: record without Name=", pos)
	case r.File != "" && len(r.MultipleFiles) > 0:
		return fmt.Errorf("%s: File= and MultipleFiles= exclude each other", pos)
	case len(r.MultipleFiles) == 1:
		return fmt.Errorf("%s: MultipleFiles= needs at least two files", pos)
	}
	if r.File != "" {
		files, err := ExpandHostlist(r.File)
		if err != nil {
			return fmt.Errorf("%s: File=: %v", pos, err)
		}
		if r.Count != 0 && r.Count != uint64(len(files)) {
			return fmt.Errorf("%s: Count=%d but File= names %d files", pos, r.Count, len(files))
		}
	}
	c.Records = append(c.Records, r)
	return nil
}

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
	return v * mult, nil
}

// ForNode returns the records that apply to node: those without NodeName=
// and those whose NodeName= hostlist names it.
func (c *GresConf) ForNode(node string) ([]GresRecord, error) {
	var out []GresRecord
	for _, r := range c.Records {
		if r.Nodes != "" {
			ok, err := hostlistHas(r.Nodes, node)
			if err != nil {
				return nil, fmt.Errorf("%s: NodeName=: %v", r.Pos, err)
			}
			if !ok {
				continue
			}
		}
		out = append(out, r.GresRecord)
	}
	return out, nil
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
