package jobmap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// The attacks of issue 34 on the job map directory: another user (uid
// 65534) has a hand in DIR's path, and root's Prolog must neither write
// outside it nor give a directory it did not make another mode.

const attacker = 65534

// attackerDir is a directory of uid 65534 (mode mode) in a fresh test
// directory.
func attackerDir(t *testing.T, parent, name string, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, attacker, attacker); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

func plantLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, attacker, attacker); err != nil {
		t.Fatal(err)
	}
}

// TestAttackDirPath: a link of uid 65534's, in a sticky directory or in
// a directory of hers, on DIR's path or as DIR, leads to a root-only
// directory; her own directory on the way could be swapped under the
// walk; a DIR its group may write lets the group plant lines. Each is
// refused with one line, and nothing in the root-only directory, or
// its mode, changes.
func TestAttackDirPath(t *testing.T) {
	testtools.RequireRoot(t, "plants files as uid 65534")
	opts, tmp := testNode(t)
	secret := filepath.Join(tmp, "secret")
	if err := os.Mkdir(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(tmp, "sticky")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(sticky, 0o1777); err != nil {
		t.Fatal(err)
	}
	hers := attackerDir(t, tmp, "hers", 0o755)
	plantLink(t, secret, filepath.Join(sticky, "map"))
	plantLink(t, secret, filepath.Join(hers, "map"))
	plantLink(t, tmp, filepath.Join(sticky, "up"))
	group := filepath.Join(tmp, "group")
	if err := os.Mkdir(group, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(group, 0o775); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want, hint string }{
		{filepath.Join(sticky, "map"), "symlink of uid 65534", ""},
		{filepath.Join(hers, "map"), "belongs to uid 65534", ""},
		{filepath.Join(sticky, "up", "secret"), "symlink of uid 65534", ""},
		{filepath.Join(hers, "new"), "belongs to uid 65534", ""},
		{group, "writable by others", ""},
	} {
		before := treeState(t, secret)
		for _, remove := range []bool{false, true} {
			_, err := Run(Options{Dir: c.dir, Remove: remove, Map: opts}, lookup(jobEnv(7, 1000, "6")))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("DIR %s (remove %v): err = %v; want one line saying %q", c.dir, remove, err, c.want)
			}
			if h := hintOf(err); h != c.hint {
				t.Errorf("DIR %s (remove %v): err = %v, its hint %q, want %q", c.dir, remove, err, h, c.hint)
			}
		}
		if after := treeState(t, secret); after != before {
			t.Errorf("DIR %s: the root-only directory changed:\n%s\nto\n%s", c.dir, before, after)
		}
	}
	if names, _ := os.ReadDir(hers); len(names) != 1 {
		t.Errorf("root made %d entries in uid 65534's directory", len(names)-1)
	}
}

// TestAttackState (issue 34): a device state another user owns, or that
// others may write, is not trusted: she could rewrite it (its
// generation is a hash anyone can recompute) and misroute every job's
// devices. The Prolog (and env, by the same jobenv.Load) refuses it in
// one line, and writes nothing.
func TestAttackState(t *testing.T) {
	testtools.RequireRoot(t, "gives the state to uid 65534")
	opts, tmp := testNode(t)
	dir := filepath.Join(tmp, "map")
	for _, c := range []struct {
		uid        int
		mode       os.FileMode
		want, hint string
	}{
		{attacker, 0o644, "belongs to uid 65534", " (make it root's, mode 0644)"},
		{0, 0o666, "writable by others", " (chmod 0644 it)"},
		{0, 0o664, "writable by others", " (chmod 0644 it)"},
	} {
		if err := os.Chown(opts.State, c.uid, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(opts.State, c.mode); err != nil {
			t.Fatal(err)
		}
		_, err := Run(Options{Dir: dir, Map: opts}, lookup(jobEnv(7, 1000, "6")))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("state of uid %d, mode %v: err = %v; want one line saying %q", c.uid, c.mode, err, c.want)
		}
		if h := hintOf(err); h != c.hint {
			t.Errorf("state of uid %d, mode %v: err = %v, its hint %q, want %q", c.uid, c.mode, err, h, c.hint)
		}
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("state of uid %d, mode %v: the map directory was made", c.uid, c.mode)
		}
	}
}
