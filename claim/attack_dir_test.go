package claim

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Item 1: a racer that swaps a fresh claims directory for a symlink, in a
// parent it may write, gets nothing made 1777; such a parent is refused.
func TestAttackSymlinkRace(t *testing.T) {
	a := newAttackers(t)
	p := newPrecious(t, a)
	shared := a.dir(t, "shared", 0o777, 0) // writable by all, not sticky
	path := filepath.Join(shared, "claims")
	a.start(t, nobody, "race-symlink", path, p.dir)
	opened := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		os.Remove(path) // the racer's symlink or the last round's directory
		d, err := OpenDir(path)
		if err == nil {
			opened++
			d.Close()
		} else if !strings.Contains(err.Error(), "writable by others but not sticky") {
			t.Errorf("claims directory in a parent anyone may change: %v, want it refused for that", err)
		}
		p.check(t)
	}
	if opened > 0 {
		t.Errorf("a claims directory in a parent anyone may change was opened %d times, want refused", opened)
	}
}

// Item 1: a claims path through a directory another user owns, through
// a non-sticky directory others may write, or through a symlink another
// user owns is refused: that user could swap what it leads to. A symlink
// planted at the claims path itself in a sticky parent is refused too.
func TestAttackClaimsPath(t *testing.T) {
	a := newAttackers(t)
	p := newPrecious(t, a)
	theirs := a.dir(t, "theirs", 0o755, nobody)
	a.dir(t, "open", 0o777, 0)
	under := a.dir(t, "open/sub", 0o755, 0)
	real := a.dir(t, "real", 0o755, 0)
	link := filepath.Join(a.base, "link")
	if err := os.Symlink(real, link); err != nil || os.Lchown(link, nobody, nobody) != nil {
		t.Fatal(err)
	}
	rootLink := filepath.Join(a.base, "rootlink")
	if err := os.Symlink(real, rootLink); err != nil {
		t.Fatal(err)
	}
	sticky := a.dir(t, "sticky", 0o1777, 0)
	planted := filepath.Join(sticky, "claims")
	if err := os.Symlink(p.dir, planted); err != nil || os.Lchown(planted, nobody, nobody) != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(theirs, "claims"), "belongs to uid 65534"},
		{filepath.Join(under, "claims"), "writable by others but not sticky"},
		{filepath.Join(link, "claims"), "symlink of uid 65534"},
		{planted, "not a directory (a symlink?)"},
	} {
		d, err := OpenDir(tc.path)
		if err == nil {
			d.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenDir(%s): %v, want refused: %q", tc.path, err, tc.want)
		}
	}
	p.check(t)
	// A symlink of root's leads where it says.
	d, err := OpenDir(filepath.Join(rootLink, "claims"))
	if err != nil {
		t.Fatalf("through root's symlink: %v", err)
	}
	d.Close()
	if st, err := os.Stat(filepath.Join(real, "claims")); err != nil || st.Mode() != fs.ModeDir|fs.ModeSticky|0o777 {
		t.Errorf("made through root's symlink: %v %v", st.Mode(), err)
	}
}

// Root makes what is missing of the way to the claims directory mode
// 0755, and the claims directory 1777, whatever its umask.
func TestOpenDirUmask(t *testing.T) {
	a := newAttackers(t)
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(a.base, "run/slurm-mig/claims")
	d, err := OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	for dir, want := range map[string]fs.FileMode{
		filepath.Join(a.base, "run"):           fs.ModeDir | 0o755,
		filepath.Join(a.base, "run/slurm-mig"): fs.ModeDir | 0o755,
		path:                                   fs.ModeDir | fs.ModeSticky | 0o777,
	} {
		if st, err := os.Stat(dir); err != nil || st.Mode() != want {
			t.Errorf("%s: %v %v, want %v", dir, st.Mode(), err, want)
		}
	}
}
