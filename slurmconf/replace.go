package slurmconf

import (
	"fmt"
	"slices"
	"strings"
)

// A writer that replaces a whole file (gen -o, node -o, merge -o) loses
// every line it does not write. ReadOwnGpuRecords, ForeignGresLine and
// ForeignNodeLine find such a line first, so that the writer can refuse.

// ForeignLine is a line of a config file that its writer does not write,
// and so would drop if it replaced the file.
type ForeignLine struct {
	Pos  string // file:line
	What string // what the line is: "a comment", "a Name=shard line", ...
}

func (e *ForeignLine) Error() string { return e.Pos + ": " + e.What }

// ReadOwnGpuRecords returns the gpu records of node alone (node "": of no
// NodeName=) in the gres.conf at path, which gen's writer is to replace;
// any line but these, header's comments and blanks is a *ForeignLine.
func ReadOwnGpuRecords(path, node string, header func(num int, line string) bool) ([]ParsedRecord, error) {
	src, err := readConf(path)
	if err != nil {
		return nil, err
	}
	var own []ParsedRecord
	var ws []word
	atTop := func(num int, line string, top bool) bool { return top && header(num, line) }
	err = firstForeign(src.data, src.name, atTop, func(l *logicalLine) error {
		r, _, scratch, err := foreignRecord(l, src.name, ws[:0])
		ws = scratch
		if err != nil {
			return err
		}
		if err := ownGpuRecord(&r, node); err != nil {
			return err
		}
		own = append(own, r)
		return nil
	})
	return own, err
}

// ownGpuRecord checks that r, a record, is one of node's gpu records (see
// ReadOwnGpuRecords), and fills in its values.
func ownGpuRecord(r *ParsedRecord, node string) error {
	foreign := func(format string, args ...any) error {
		return &ForeignLine{Pos: r.Pos, What: fmt.Sprintf(format, args...)}
	}
	switch {
	case !strings.EqualFold(r.Name, "gpu"):
		return foreign("a Name=%s line", r.Name)
	case node == "" && r.Nodes != "":
		return foreign("a line of NodeName=%s", r.Nodes)
	case node != "" && r.Nodes == "":
		return foreign("a line for every node (no NodeName=)")
	case node != "":
		names, err := ExpandHostlist(r.Nodes)
		if err != nil {
			return fmt.Errorf("%s: NodeName=: %v", r.Pos, err)
		}
		if len(names) != 1 || names[0] != node {
			return foreign("a line of NodeName=%s", r.Nodes)
		}
	}
	return checkRecord(r)
}

// ForeignGresLine returns the gres.conf at path, which a writer of whole
// files is to replace, as read; its error is its first line not blank, own's
// comment or a record of a GRES in names (lower case): a *ForeignLine.
func ForeignGresLine(path string, own func(num int, line string) bool, names map[string]bool) (string, error) {
	src, err := readConf(path)
	if err != nil {
		return "", err
	}
	var ws []word
	anywhere := func(num int, line string, _ bool) bool { return own(num, line) }
	return src.data, firstForeign(src.data, src.name, anywhere, func(l *logicalLine) error {
		r, _, scratch, err := foreignRecord(l, src.name, ws[:0])
		ws = scratch
		if err == nil && !names[strings.ToLower(r.Name)] {
			err = &ForeignLine{Pos: r.Pos, What: fmt.Sprintf("a Name=%s line", r.Name)}
		}
		return err
	})
}

// firstForeign returns the first error, in file order, in data, read from
// file: a comment accept does not take (num from 1; top: among the file's
// opening comments) is a *ForeignLine, and line is given each logical line.
func firstForeign(data, file string, accept func(num int, line string, top bool) bool, line func(l *logicalLine) error) error {
	comment := foreignComment(data, accept)
	var err error
	scanLines(data, func(l *logicalLine) bool {
		// A line after the foreign comment is not looked at: the
		// comment comes first. One that starts before it and goes on
		// past it (a continued line) is.
		if comment > 0 && l.num > comment {
			return false
		}
		err = line(l)
		return err == nil
	})
	if err == nil && comment > 0 {
		err = &ForeignLine{Pos: fmt.Sprintf("%s:%d", file, comment), What: "a comment"}
	}
	return err
}

// foreignComment is the number of the first physical line of data that
// holds a comment accept does not take, or 0. scanLines drops comments,
// so they are looked at here, line by line, as scanLines cuts them.
func foreignComment(data string, accept func(num int, line string, top bool) bool) int {
	top := true
	for num := 1; data != ""; num++ {
		line, rest, _ := strings.Cut(data, "\n")
		data = rest
		line = strings.TrimSuffix(line, "\r")
		body := stripComment(line)
		switch {
		case len(body) == len(line):
			top = false // no comment
		case !isBlankLine(body) || !accept(num, line, top):
			return num
		}
	}
	return 0
}

// foreignRecord reads logical line l of file as a record and refuses
// what no writer of records writes: an Include, an AutoDetect= setting, a
// line without Name=. ws is scratch space, returned for reuse.
func foreignRecord(l *logicalLine, file string, ws []word) (ParsedRecord, uint, []word, error) {
	pos := linePos(file, l)
	if _, ok := includeTarget(l.text); ok {
		return ParsedRecord{}, 0, ws, &ForeignLine{Pos: pos, What: "an Include"}
	}
	ws, err := lineWords(l, file, ws)
	if err != nil {
		return ParsedRecord{}, 0, ws, err
	}
	r, seen, twice, err := parseRecord(ws, l, file)
	if err != nil {
		return r, seen, ws, err
	}
	r.Pos = pos
	if twice != "" {
		return r, seen, ws, fmt.Errorf("%s: %s= given twice", pos, twice)
	}
	switch {
	case seen&(1<<keyAutoDetect) != 0:
		err = &ForeignLine{Pos: pos, What: "an AutoDetect= setting"}
	case r.Name == "":
		err = &ForeignLine{Pos: pos, What: "a line without Name="}
	}
	return r, seen, ws, err
}

// ForeignNodeLine returns, as a *ForeignLine, the first line of the file at
// path that is not blank or a line of nodes mine takes whose keys are all
// among keys; nil when there is none.
func ForeignNodeLine(path string, mine func(node string) bool, keys []string) error {
	src, err := readConf(path)
	if err != nil {
		return err
	}
	var ws []word
	none := func(int, string, bool) bool { return false }
	return firstForeign(src.data, src.name, none, func(l *logicalLine) error {
		foreign := func(format string, args ...any) error {
			return &ForeignLine{Pos: linePos(src.name, l), What: fmt.Sprintf(format, args...)}
		}
		if _, ok := includeTarget(l.text); ok {
			return foreign("an Include")
		}
		if ws, err = lineWords(l, src.name, ws[:0]); err != nil {
			return err
		}
		node, of := "", ""
		if strings.EqualFold(ws[0].key, "NodeName") {
			node, of = ws[0].value, " of NodeName="+ws[0].value
		}
		switch {
		case !mine(node) && node != "":
			return foreign("a line of NodeName=%s", node)
		case !mine(node):
			return foreign("a line without NodeName=")
		}
		for _, w := range ws {
			if w.key == "" {
				return fmt.Errorf("%s: %q is not a key=value pair", linePos(src.name, l), w.value)
			}
			if !slices.ContainsFunc(keys, func(k string) bool { return strings.EqualFold(k, w.key) }) {
				return foreign("a %s= on the line%s", w.key, of)
			}
		}
		return nil
	})
}
