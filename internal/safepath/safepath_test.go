package safepath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const other = 65534

// The walk follows a link of the caller's, refuses another user's, and
// with TrustDirs refuses a directory of another user's or one others may
// write that is not sticky, on the way or as the directory opened.
func TestWalk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to another user; CI runs as root")
	}
	tmp := t.TempDir()
	real := filepath.Join(tmp, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(tmp, "mine")
	if err := os.Symlink(real, mine); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(tmp, "theirs")
	if err := os.Symlink(real, theirs); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(theirs, other, other); err != nil {
		t.Fatal(err)
	}
	hers := filepath.Join(tmp, "hers")
	if err := os.Mkdir(hers, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(hers, other, other); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(tmp, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(tmp, "sticky")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(sticky, 0o1777); err != nil {
		t.Fatal(err)
	}
	trust := Options{UID: -1, TrustDirs: true}
	for _, c := range []struct {
		path string
		o    Options
		want string // "" for no error
	}{
		{filepath.Join(mine, "f"), Options{UID: -1}, ""},
		{filepath.Join(theirs, "f"), Options{UID: -1}, "symlink of uid 65534"},
		{theirs, Options{UID: -1}, "symlink of uid 65534"},
		{filepath.Join(hers, "f"), Options{UID: -1}, ""},
		{filepath.Join(hers, "f"), trust, "belongs to uid 65534"},
		{filepath.Join(open, "f"), trust, "writable by others but not sticky"},
		{filepath.Join(sticky, "f"), trust, ""},
		{filepath.Join(tmp, "missing", "f"), trust, "no such file"},
	} {
		p, err := Walk(c.path, c.o)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Walk(%s): %v", c.path, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Walk(%s) = %v; want an error saying %q", c.path, err, c.want)
		}
		if err == nil {
			p.Close()
		}
	}
}

// Dir makes what is missing, mode 0755 whatever the umask, and refuses to
// make anything under a directory another user may change.
func TestDirMkdir(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	tmp := t.TempDir()
	path := filepath.Join(tmp, "a", "b")
	d, err := Dir(path, Options{UID: -1, TrustDirs: true, Mkdir: true})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, p := range []string{filepath.Join(tmp, "a"), path} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != DirMode {
			t.Errorf("%s: %v, %v; want mode %v", p, info.Mode(), err, os.FileMode(DirMode))
		}
	}
	if os.Geteuid() != 0 {
		return
	}
	hers := filepath.Join(tmp, "hers")
	if err := os.Mkdir(hers, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(hers, other, other); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(filepath.Join(hers, "x"), Options{UID: -1, TrustDirs: true, Mkdir: true}); err == nil {
		t.Error("made a directory under another user's")
	}
	if _, err := os.Lstat(filepath.Join(hers, "x")); !os.IsNotExist(err) {
		t.Errorf("%s/x: %v; want none", hers, err)
	}
}

// Private refuses the directory Dir opens where group or others may write
// it, sticky too (TrustDirs already refuses it not sticky), with the mode in
// a typed error; 0755 is taken.
func TestDirPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{UID: -1, TrustDirs: true, Private: true}
	f, err := Dir(dir, o)
	if err != nil {
		t.Fatalf("mode 0755: %v", err)
	}
	f.Close()
	for _, mode := range []os.FileMode{os.ModeSticky | 0o775, os.ModeSticky | 0o777} {
		os.Chmod(dir, mode)
		_, err := Dir(dir, o)
		var open *OpenToOthersError
		if !errors.As(err, &open) || open.Path != dir {
			t.Errorf("mode %v: %v, want an OpenToOthersError naming %s", mode, err, dir)
		}
	}
}
