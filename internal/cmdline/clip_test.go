package cmdline

import (
	"strings"
	"testing"
)

// A word of megabytes is cut to its start and its length; the words
// around it, and every shorter message, are kept byte for byte, white
// space included.
func TestClip(t *testing.T) {
	long := "\"" + strings.Repeat("é", 600) + "\""
	msg := "f:1:  unknown key " + long + "\tand more\n"
	want := "f:1:  unknown key \"" + strings.Repeat("é", 31) + "...[1202 bytes]\tand more\n"
	if got := Clip(msg); got != want {
		t.Errorf("Clip = %q, want %q", got, want)
	}
	short := "a  b\t" + strings.Repeat("x", maxWord) + " c"
	if got := Clip(short); got != short {
		t.Errorf("Clip cut a word of %d bytes", maxWord)
	}
}
