package advice

import (
	"errors"
	"io/fs"
	"testing"
)

// An Error says its package's message alone, keeps the error it wraps in
// reach of errors.Is and errors.As, and carries its Fix and Args.
func TestWrap(t *testing.T) {
	err := Wrap(fs.ErrNotExist, GresConfUnreadable, "gres.conf")
	var a *Error
	if !errors.As(err, &a) || a.Fix != GresConfUnreadable || len(a.Args) != 1 || a.Args[0] != "gres.conf" {
		t.Errorf("Wrap: %+v", a)
	}
	if err.Error() != fs.ErrNotExist.Error() || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Wrap says %q and is ErrNotExist: %v", err, errors.Is(err, fs.ErrNotExist))
	}
}

// Fixes lists every Fix once, none of them the zero value.
func TestFixes(t *testing.T) {
	seen := map[Fix]bool{}
	for _, f := range Fixes() {
		if f == 0 || seen[f] {
			t.Errorf("Fixes lists %d twice or the zero Fix", f)
		}
		seen[f] = true
	}
	if !seen[Snapshot] || !seen[ClusterNodeLinesUnreadable] {
		t.Errorf("Fixes %v leaves out the first or the last", Fixes())
	}
}

// A Hinted error says its message alone, keeps the error it wraps in
// reach of errors.Is, and gives its hint through Hinter.
func TestHinted(t *testing.T) {
	err := Hinted(fs.ErrNotExist, "; make it")
	var h Hinter
	if !errors.As(err, &h) || h.Hint() != "; make it" {
		t.Errorf("Hinted: %v is no Hinter of its hint", err)
	}
	if err.Error() != fs.ErrNotExist.Error() || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Hinted says %q and is ErrNotExist: %v", err, errors.Is(err, fs.ErrNotExist))
	}
}
