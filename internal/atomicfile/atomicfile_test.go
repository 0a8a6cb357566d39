package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, data string, opts Options) Result {
	t.Helper()
	res, err := Write(path, []byte(data), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestWriteNewChangedUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gres.conf")
	if res := write(t, path, "one\n", Options{}); !res.Changed || res.Path != path {
		t.Errorf("new file: %+v", res)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", info.Mode().Perm())
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if res := write(t, path, "one\n", Options{}); res.Changed {
		t.Errorf("same content reported changed")
	}
	if info, _ := os.Stat(path); !info.ModTime().Equal(old) {
		t.Errorf("unchanged write moved mtime from %v to %v", old, info.ModTime())
	}
	if res := write(t, path, "two\n", Options{}); !res.Changed || read(t, path) != "two\n" {
		t.Errorf("changed write: %+v, content %q", res, read(t, path))
	}
}

// TestWriteKeepsModeAndOwner: a file's mode and group stay; its owner
// stays where the writer is a user (who can own only their own files),
// and becomes root where root writes (see TestAttackPlantedTarget).
func TestWriteKeepsModeAndOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gres.conf")
	if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(path, 123, 456); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.Stat(path)
	write(t, path, "new\n", Options{})
	after, _ := os.Stat(path)
	if after.Mode() != before.Mode() {
		t.Errorf("mode %v, want %v", after.Mode(), before.Mode())
	}
	b, a := before.Sys().(*syscall.Stat_t), after.Sys().(*syscall.Stat_t)
	wantUID := b.Uid
	if os.Geteuid() == 0 {
		wantUID = 0
	}
	if a.Uid != wantUID || a.Gid != b.Gid {
		t.Errorf("owner %d:%d, want %d:%d", a.Uid, a.Gid, wantUID, b.Gid)
	}
}

func TestWriteFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "shared", "gres.conf")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "gres.conf")
	if err := os.Symlink("shared/gres.conf", link); err != nil {
		t.Fatal(err)
	}
	res := write(t, link, "new\n", Options{})
	if res.Path != real {
		t.Errorf("wrote %s, want the link's target %s", res.Path, real)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi, err)
	}
	if read(t, link) != "new\n" {
		t.Errorf("content through the link: %q", read(t, link))
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(filepath.Join(dir, "dangling"), []byte("x"), Options{}); err == nil {
		t.Error("a dangling symlink was written through")
	}
}

func TestBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gres.conf")
	write(t, path, "old\n", Options{})
	res := write(t, path, "new\n", Options{Backup: true})
	if res.Backup != path+".bak" || read(t, path+".bak") != "old\n" || read(t, path) != "new\n" {
		t.Errorf("backup %+v: bak %q, file %q", res, read(t, path+".bak"), read(t, path))
	}
}

func TestReadOnlyDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gres.conf")
	write(t, path, "old\n", Options{})
	var err error
	inReadOnly(t, dir, func() { _, err = Write(path, []byte("new\n"), Options{}) })
	want := "cannot write " + path + ": " + dir + " is not writable: permission denied"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if read(t, path) != "old\n" {
		t.Error("old file changed")
	}
}

// A file that already holds the content needs nothing of its directory:
// in a read-only one (a read-only NFS /etc/slurm) Write reports it
// unchanged, and creates nothing, not even its lock file.
func TestUnchangedInReadOnlyDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gres.conf")
	write(t, path, "same\n", Options{})
	var res Result
	var err error
	inReadOnly(t, dir, func() { res, err = Write(path, []byte("same\n"), Options{Backup: true}) })
	if err != nil || res.Changed || res.Backup != "" || res.Path != path {
		t.Errorf("same content in a read-only directory: %+v, %v; want unchanged, no error", res, err)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "gres.conf" {
		t.Errorf("the directory holds %q, want just gres.conf", names)
	}
}

// inReadOnly runs fn with dir read-only to it: mode 0555 and, as root,
// file access as uid 65534 on this thread only (root ignores directory
// modes; setfsuid also drops CAP_DAC_OVERRIDE).
func inReadOnly(t *testing.T, dir string, fn func()) {
	t.Helper()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if os.Geteuid() == 0 {
		if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		syscall.Setfsuid(65534)
		defer syscall.Setfsuid(0)
	}
	fn()
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// When -o cannot write, the error names the file asked for, not the lock
// file beside it, which the admin never named and which exists only while
// a writer holds it.
func TestErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "gres.conf")
	_, err := Write(missing, []byte("x\n"), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "cannot write "+missing+": ") || strings.Contains(err.Error(), ".lock") {
		t.Errorf("directory missing: err = %v, want one naming %s and no lock file", err, missing)
	}

	path := filepath.Join(dir, "gres.conf")
	held, err := os.OpenFile(filepath.Join(dir, ".gres.conf.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, err = Write(path, []byte("x\n"), Options{LockTimeout: 100 * time.Millisecond})
	if err == nil || !strings.HasPrefix(err.Error(), "cannot write "+path+": ") || strings.Contains(err.Error(), ".lock") {
		t.Errorf("lock held: err = %v, want one naming %s and no lock file", err, path)
	}
}

// A file whose directory cannot take a temporary file keeps its content
// and the error names the file. A regular file as the "directory" makes
// this happen for root too.
func TestUnwritableDirectory(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Write(filepath.Join(notDir, "gres.conf"), []byte("new\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), notDir) {
		t.Errorf("err = %v, want one naming %s", err, notDir)
	}
}

func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gres.conf")
	contents := []string{strings.Repeat("a", 1<<20), strings.Repeat("b", 1<<20)}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(data string) {
			defer wg.Done()
			_, err := Write(path, []byte(data), Options{Backup: true})
			errs <- err
		}(contents[i%2])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := read(t, path)
	if got != contents[0] && got != contents[1] {
		t.Errorf("content is a mix of writers (%d bytes)", len(got))
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.Contains(e.Name(), tempInfix) {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestKilledWriter kills writer processes at random moments: the target
// must always hold the old or the new content, whole.
func TestKilledWriter(t *testing.T) {
	if os.Getenv("ATOMICFILE_WRITER") != "" {
		return // we are the child; see TestMain
	}
	path := filepath.Join(t.TempDir(), "gres.conf")
	old := bytes.Repeat([]byte("old line\n"), 1<<20/9)
	if _, err := Write(path, old, Options{}); err != nil {
		t.Fatal(err)
	}
	newSize := 16 << 20
	kills := 0
	for i := 0; i < 20; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "ATOMICFILE_WRITER="+path, fmt.Sprintf("ATOMICFILE_SIZE=%d", newSize))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i) * 2 * time.Millisecond)
		if cmd.Process.Kill() == nil {
			kills++
		}
		cmd.Wait()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, old) && len(got) != newSize {
			t.Fatalf("after kill %d the file has %d bytes: neither the old (%d) nor the new (%d)", i, len(got), len(old), newSize)
		}
		if len(got) == newSize {
			// The writer finished before the kill; start from old again.
			if _, err := Write(path, old, Options{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if kills == 0 {
		t.Error("no writer was killed mid-run; the test proved nothing")
	}
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("ATOMICFILE_RACER"); dir != "" {
		race(dir, os.Getenv("ATOMICFILE_SECRET"))
		os.Exit(0)
	}
	if path := os.Getenv("ATOMICFILE_WRITER"); path != "" {
		var size int
		fmt.Sscan(os.Getenv("ATOMICFILE_SIZE"), &size)
		if _, err := Write(path, bytes.Repeat([]byte{'n'}, size), Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A symlink planted where the lock file goes must not make Write create or
// open a file elsewhere.
func TestLockFileSymlinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.Symlink(victim, filepath.Join(dir, ".gres.conf.lock")); err != nil {
		t.Fatal(err)
	}
	_, err := Write(filepath.Join(dir, "gres.conf"), []byte("new\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), ".gres.conf.lock") {
		t.Errorf("err = %v, want a refusal naming the lock file", err)
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Error("the lock's symlink target was created")
	}
	if _, err := os.Stat(filepath.Join(dir, "gres.conf")); err == nil {
		t.Error("gres.conf was written without the lock")
	}
}

// Nothing but the config stays in its directory: no lock file, no
// temporary file, whether the content changed or not, and a lock file a
// killed writer left is taken over and removed.
func TestWriteLeavesNothingBeside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gres.conf")
	if err := os.WriteFile(filepath.Join(dir, ".gres.conf.lock"), nil, 0o600); err != nil {
		t.Fatal(err) // as a writer killed while holding the lock leaves it
	}
	for _, data := range []string{"a\n", "a\n", "b\n"} {
		if _, err := Write(path, []byte(data), Options{}); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "gres.conf" {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("after writing %q the directory holds %q, want just gres.conf", data, names)
		}
	}
}

// The lock excludes while its holders remove the file on release: at no
// time do two holders overlap, however their opens, flocks and removals
// interleave.
func TestLockExcludesAcrossRemovals(t *testing.T) {
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	path := filepath.Join(dir.Name(), ".x.lock")
	var holders, overlaps atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				unlock, err := lock(dir, ".x.lock", 30*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if holders.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(50 * time.Microsecond)
				holders.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d times two writers held the lock at once", n)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file left behind (%v)", err)
	}
}
