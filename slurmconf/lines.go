package slurmconf

import (
	"fmt"
	"strings"
)

// Slurm's config files are read as its parse_config.c reads them: an
// unescaped '#' starts a comment, an odd number of trailing '\' continues
// the line, "\\" and "\#" stand for '\' and '#', and keys ignore case.

// logicalLine is one line after comments and continuations are dealt with.
type logicalLine struct {
	text string // joined content, comments and continuation marks removed
	num  int    // number of its first physical line, from 1
	// segs maps text back to the file, so a value can be replaced in
	// place keeping every other byte (node --update). A line without
	// continuations is one segment.
	segs []segment
}

// segment is a piece of text that sits at file offset fileOff.
type segment struct{ textOff, fileOff int }

// fileOffset returns the offset in the file of position pos of l.text.
func (l *logicalLine) fileOffset(pos int) int {
	for i := len(l.segs) - 1; i >= 0; i-- {
		if s := l.segs[i]; pos >= s.textOff {
			return s.fileOff + (pos - s.textOff)
		}
	}
	return 0
}

// scanLines calls visit with each non-empty logical line of data, in order,
// until visit returns false. A line without continuations is a substring of
// data, so a cluster-wide file is not copied line by line.
func scanLines(data string, visit func(l *logicalLine) bool) {
	var cur logicalLine
	var joined []byte // the text so far of a continued line
	continued := false
	num := 0
	for off := 0; off < len(data); {
		end := strings.IndexByte(data[off:], '\n')
		next := len(data)
		if end < 0 {
			end = len(data)
		} else {
			end += off
			next = end + 1
		}
		num++
		body, more := stripContinuation(stripComment(strings.TrimSuffix(data[off:end], "\r")))
		if !continued {
			cur = logicalLine{num: num, segs: cur.segs[:0]}
			joined = joined[:0]
		}
		cur.segs = append(cur.segs, segment{textOff: len(joined), fileOff: off})
		off = next
		if more || continued {
			joined = append(joined, body...)
			continued = more
			if more {
				continue
			}
			cur.text = string(joined)
		} else {
			cur.text = body
		}
		if !isBlankLine(cur.text) && !visit(&cur) {
			return
		}
	}
	if continued && !isBlankLine(string(joined)) { // a file ending in a continuation
		cur.text = string(joined)
		visit(&cur)
	}
}

func isBlankLine(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isBlank(s[i]) {
			return false
		}
	}
	return true
}

// stripComment cuts s at the first '#' preceded by an even number of '\'.
func stripComment(s string) string {
	if strings.IndexByte(s, '#') < 0 {
		return s // most lines: found by a fast scan
	}
	bs := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '#':
			if bs%2 == 0 {
				return s[:i]
			}
			bs = 0
		case '\\':
			bs++
		default:
			bs = 0
		}
	}
	return s
}

// stripContinuation removes a trailing odd run of '\' (and the blanks
// after it), which joins the line to the next.
func stripContinuation(s string) (string, bool) {
	t := strings.TrimRight(s, " \t\r\v\f")
	bs := 0
	for i := len(t) - 1; i >= 0 && t[i] == '\\'; i-- {
		bs++
	}
	if bs%2 == 1 {
		return t[:len(t)-1], true
	}
	return s, false
}

// unescape turns "\\" into '\' and "\#" into '#', as Slurm does after
// joining lines.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// word is one key=value word of a line, with where it and its value sit.
type word struct {
	key        string // as written
	value      string // unquoted, unescaped
	valStart   int    // offsets of the value as written in the line's text
	valEnd     int
	start, end int // offsets of the whole word, quotes included
}

// words appends a logical line's key=value words to out; a value may be
// double-quoted to hold blanks, and a word without '=' has an empty key.
// Its errors say what is wrong, not where: the caller adds "file:line: ".
func words(l *logicalLine, out []word) ([]word, error) {
	s := l.text
	for i := 0; i < len(s); {
		if isBlank(s[i]) {
			i++
			continue
		}
		start := i
		eq := -1
		for i < len(s) && !isBlank(s[i]) && s[i] != '"' {
			if s[i] == '=' && eq < 0 {
				eq = i
			}
			i++
		}
		w := word{start: start}
		if eq < 0 {
			w.valStart, w.valEnd = start, i
		} else {
			w.key = s[start:eq]
			w.valStart = eq + 1
		}
		if i < len(s) && s[i] == '"' {
			if eq < 0 || i != eq+1 {
				return nil, fmt.Errorf("misplaced '\"' in %q", s[start:])
			}
			close := strings.IndexByte(s[i+1:], '"')
			if close < 0 {
				return nil, fmt.Errorf("unterminated '\"' in %q", s[start:])
			}
			w.valStart, w.valEnd = i+1, i+1+close
			i = w.valEnd + 1
			if i < len(s) && !isBlank(s[i]) {
				return nil, fmt.Errorf("text right after a closing '\"' in %q", s[start:])
			}
		} else if eq >= 0 {
			w.valEnd = i
		}
		w.value = unescape(s[w.valStart:w.valEnd])
		w.end = i
		out = append(out, w)
	}
	return out, nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }
