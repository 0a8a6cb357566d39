package slurmconf

import (
	"fmt"
	"strings"
)

// ForeignLine is a line of a gres.conf that a writer of one node's gpu
// records (gen -o) does not write, and so would drop if it replaced the
// file: ReadOwnGpuRecords refuses it.
type ForeignLine struct {
	Pos  string // file:line
	What string // what the line is: "a comment", "a Name=shard line", ...
}

func (e *ForeignLine) Error() string { return e.Pos + ": " + e.What }

// ReadOwnGpuRecords reads the gres.conf at path, which a writer of node's
// gpu records is about to replace with its own, and returns those records
// as the file has them now. They are the Name=gpu records whose NodeName=
// names node and no other (node "": the records without NodeName=, which
// every node reading the file takes). header says which comment lines at
// the top of the file are the writer's own header (num counts from 1);
// blank lines hold nothing. Every other line, the first in the file, is a
// *ForeignLine error: a comment, a line of another GRES (mps, shard, nic)
// or of other nodes, an AutoDetect= setting, an Include. A line that
// cannot be read is an error naming it, as is a file that cannot be read.
func ReadOwnGpuRecords(path, node string, header func(num int, line string) bool) ([]ParsedRecord, error) {
	src, err := readConf(path)
	if err != nil {
		return nil, err
	}
	// Comments are looked at line by line first: scanLines drops them. A
	// record line before the first foreign comment is still looked at,
	// so that what is refused is the first line of the file at fault.
	comment := foreignComment(src.data, header)
	var (
		own     []ParsedRecord
		ws      []word
		lineErr error
	)
	scanLines(src.data, func(l *logicalLine) bool {
		if comment > 0 && l.num > comment {
			return false
		}
		var r ParsedRecord
		r, ws, lineErr = ownGpuRecord(l, src.name, node, ws[:0])
		if lineErr == nil {
			own = append(own, r)
		}
		return lineErr == nil
	})
	if lineErr != nil {
		return nil, lineErr
	}
	if comment > 0 {
		return nil, &ForeignLine{Pos: fmt.Sprintf("%s:%d", src.name, comment), What: "a comment"}
	}
	return own, nil
}

// foreignComment is the number of the first physical line of data that
// holds a comment other than the header's, or 0. The header is the run of
// lines at the top that header takes for its own.
func foreignComment(data string, header func(num int, line string) bool) int {
	inHeader := true
	for num := 1; data != ""; num++ {
		line, rest, _ := strings.Cut(data, "\n")
		data = rest
		line = strings.TrimSuffix(line, "\r")
		body := stripComment(line)
		switch {
		case inHeader && len(body) < len(line) && isBlankLine(body) && header(num, line):
		case len(body) < len(line):
			return num
		default:
			inHeader = false
		}
	}
	return 0
}

// ownGpuRecord reads logical line l of file as one of node's gpu records
// (see ReadOwnGpuRecords), or says why it is not; ws is scratch space,
// returned for reuse.
func ownGpuRecord(l *logicalLine, file, node string, ws []word) (ParsedRecord, []word, error) {
	pos := linePos(file, l)
	foreign := func(format string, args ...any) error {
		return &ForeignLine{Pos: pos, What: fmt.Sprintf(format, args...)}
	}
	if _, ok := includeTarget(l.text); ok {
		return ParsedRecord{}, ws, foreign("an Include")
	}
	ws, err := lineWords(l, file, ws)
	if err != nil {
		return ParsedRecord{}, ws, err
	}
	r, seen, err := parseRecord(ws, l, file)
	if err != nil {
		return r, ws, err
	}
	r.Pos = pos
	switch {
	case seen&(1<<keyAutoDetect) != 0:
		return r, ws, foreign("an AutoDetect= setting")
	case r.Name == "":
		return r, ws, foreign("a line without Name=")
	case !strings.EqualFold(r.Name, "gpu"):
		return r, ws, foreign("a Name=%s line", r.Name)
	case node == "" && r.Nodes != "":
		return r, ws, foreign("a line of NodeName=%s", r.Nodes)
	case node != "" && r.Nodes == "":
		return r, ws, foreign("a line for every node (no NodeName=)")
	case node != "":
		names, err := ExpandHostlist(r.Nodes)
		if err != nil {
			return r, ws, fmt.Errorf("%s: NodeName=: %v", pos, err)
		}
		if len(names) != 1 || names[0] != node {
			return r, ws, foreign("a line of NodeName=%s", r.Nodes)
		}
	}
	return r, ws, checkRecord(&r)
}
