package cmdline

// This file keeps what a command echoes of its input readable: a word of
// a file that is megabytes long (a line with no newline, a binary file
// read as a config) is cut short wherever a message or a report quotes it.

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Longest words a message keeps whole, and what is kept of a longer one.
// No word slurm-mig writes comes near: the longest are hostlists and
// Gres= lists of a few hundred bytes.
const (
	maxWord  = 1024
	keptWord = 64
)

// Clip cuts every word of msg longer than maxWord bytes to its first
// keptWord bytes and its length, "aaaa...[3000000 bytes]": messages quote
// the input they refuse, and a huge word would hide the message itself.
func Clip(msg string) string {
	if len(msg) <= maxWord {
		return msg
	}
	var b strings.Builder
	for len(msg) > 0 {
		i := strings.IndexFunc(msg, unicode.IsSpace)
		if i < 0 {
			i = len(msg)
		}
		word := msg[:i]
		if len(word) > maxWord {
			cut := keptWord
			for cut > 0 && !utf8.RuneStart(word[cut]) {
				cut--
			}
			word = fmt.Sprintf("%s...[%d bytes]", word[:cut], len(word))
		}
		b.WriteString(word)
		msg = msg[i:]
		j := strings.IndexFunc(msg, func(r rune) bool { return !unicode.IsSpace(r) })
		if j < 0 {
			j = len(msg)
		}
		b.WriteString(msg[:j])
		msg = msg[j:]
	}
	return b.String()
}

// Clipped is a report whose text is clipped (Clip), for the reports that
// quote their input (diff, check, merge): what they print is read, never
// pasted into a config. Its JSON is as the report writes it.
type Clipped struct{ Report }

// WriteText writes the report's text with every overlong word cut.
func (c Clipped) WriteText(w io.Writer) error {
	var b strings.Builder
	if err := c.Report.WriteText(&b); err != nil {
		return err
	}
	_, err := io.WriteString(w, Clip(b.String()))
	return err
}
