package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// The attacks of issue 29: another user (uid 65534) plants symlinks where
// root writes with gen -o, in a sticky, world-writable directory as /tmp
// is, to make root overwrite or copy a root-only file.

const attacker = 65534

// stickyDir is a directory every user may create files in, as /tmp, and
// one that uid 65534 can reach (t.TempDir's parents are root's, 0700).
func stickyDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "atomicfile-sticky-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// secretFile is a root-only file in a root-only directory: what the
// attacker is after.
type secretFile struct {
	dir, path string
	data      string
}

func newSecret(t *testing.T) secretFile {
	t.Helper()
	s := secretFile{dir: t.TempDir(), data: "root's secret\n"}
	s.path = filepath.Join(s.dir, "secret")
	if err := os.WriteFile(s.path, []byte(s.data), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// intact fails the test unless the secret and its directory are as made:
// the same content, mode and owner, and nothing added beside it.
func (s secretFile) intact(t *testing.T, after string) {
	t.Helper()
	info, err := os.Lstat(s.path)
	if err != nil {
		t.Fatalf("after %s: %v", after, err)
	}
	st := info.Sys().(*syscall.Stat_t)
	if got := read(t, s.path); got != s.data || info.Mode() != 0o600 || st.Uid != 0 || st.Gid != 0 {
		t.Fatalf("after %s the root-only file is %v %d:%d holding %q", after, info.Mode(), st.Uid, st.Gid, got)
	}
	if names := dirNames(t, s.dir); !slices.Equal(names, []string{"secret"}) {
		t.Fatalf("after %s the root-only directory holds %q", after, names)
	}
}

func plantLink(t *testing.T, target, link string, uid int) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedSymlinkNotFollowed: a symlink another user planted, as the
// file, as a directory on the way to it, or at the end of a chain of
// root's links, does not lead root's write anywhere. Root's own links are
// still followed.
func TestPlantedSymlinkNotFollowed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to plant another user's symlinks; CI runs as root")
	}
	secret := newSecret(t)
	tmp := stickyDir(t)
	plantLink(t, secret.path, filepath.Join(tmp, "gres.conf"), attacker)
	plantLink(t, secret.dir, filepath.Join(tmp, "etc"), attacker)
	plantLink(t, "gres.conf", filepath.Join(tmp, "roots.conf"), 0) // root's link to the planted one
	for _, path := range []string{"gres.conf", "etc/secret", "etc/gres.conf", "roots.conf"} {
		path = filepath.Join(tmp, path)
		for _, backup := range []bool{false, true} {
			_, err := Write(path, []byte("root's gres.conf\n"), Options{Backup: backup})
			if want := fmt.Sprintf("a symlink of uid %d", attacker); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s (backup %v): err = %v, want a refusal naming %q", path, backup, err, want)
			}
			secret.intact(t, "writing "+path)
		}
	}
	if names := dirNames(t, tmp); !slices.Equal(names, []string{"etc", "gres.conf", "roots.conf"}) {
		t.Errorf("the sticky directory holds %q, want only what was planted", names)
	}

	// Root's own link, in the same directory, is followed.
	mine := filepath.Join(t.TempDir(), "gres.conf")
	write(t, mine, "old\n", Options{})
	plantLink(t, mine, filepath.Join(tmp, "mine.conf"), 0)
	if res := write(t, filepath.Join(tmp, "mine.conf"), "new\n", Options{}); res.Path != mine || read(t, mine) != "new\n" {
		t.Errorf("root's own symlink: %+v, %q", res, read(t, mine))
	}
}

// TestSymlinkSwapRace: another user's process swaps the target between a
// regular file of theirs and a symlink to a root-only file while root
// writes it with a backup, until 300 writes have met the attacker's file.
// Root never writes the root-only file, and no backup ever holds its
// content.
func TestSymlinkSwapRace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user; CI runs as root")
	}
	secret := newSecret(t)
	tmp := stickyDir(t)
	bin := filepath.Join(stickyDir(t), "atomicfile.test")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	racer := exec.Command(bin, "-test.run=^$")
	racer.Env = []string{"ATOMICFILE_RACER=" + tmp, "ATOMICFILE_SECRET=" + secret.path}
	racer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: attacker, Gid: attacker}}
	var stderr bytes.Buffer
	racer.Stderr = &stderr
	if err := racer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { racer.Process.Kill(); racer.Wait() }()

	target := filepath.Join(tmp, "gres.conf")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(target); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// 300 writes that met the attacker's file, each a chance to take the
	// backup's owner from it and its content through the link; those
	// refused at the link come on top. The time limit keeps a racer that
	// is starved of CPU from holding the test up.
	written, refused, backups := 0, 0, 0
	deadline = time.Now().Add(60 * time.Second)
	for i := 0; written < 300 && time.Now().Before(deadline); i++ {
		_, err := Write(target, []byte(fmt.Sprintf("root's gres.conf %d\n", i)), Options{Backup: true, LockTimeout: 5 * time.Second})
		if err != nil {
			refused++
		} else {
			written++
		}
		secret.intact(t, fmt.Sprintf("write %d (%v)", i, err))
		info, err := os.Lstat(target + ".bak")
		if err != nil {
			continue
		}
		backups++
		bak, err := os.ReadFile(target + ".bak")
		if err != nil {
			t.Fatal(err)
		}
		if string(bak) == secret.data {
			t.Fatalf("write %d: the backup, %v uid %d, holds the root-only file's content", i, info.Mode(), info.Sys().(*syscall.Stat_t).Uid)
		}
	}
	t.Logf("%d written, %d refused, %d with a backup", written, refused, backups)
	if written == 0 || refused == 0 {
		t.Errorf("the racer never raced (%d written, %d refused): the test proved nothing; racer: %s", written, refused, stderr.String())
	}
}

// race is the attacker's process: it swaps dir/gres.conf between a file
// of its own and a symlink to secret, by rename, as fast as it can, for
// at most two minutes.
func race(dir, secret string) {
	target := filepath.Join(dir, "gres.conf")
	file, link := filepath.Join(dir, ".race-file"), filepath.Join(dir, ".race-link")
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); {
		if err := os.WriteFile(file, []byte("the attacker's\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Rename(file, target)
		pause(time.Millisecond)
		os.Remove(link)
		os.Symlink(secret, link)
		os.Rename(link, target)
		pause(300 * time.Microsecond)
	}
}

// pause holds the racer's last swap for a random time up to most, so that
// root's writes meet the file and the link at every step. The file is
// held longer: a write that meets it takes longer (it fsyncs) than one
// refused at the link.
func pause(most time.Duration) {
	time.Sleep(rand.N(most))
}

// TestAttackPlantedTarget (issue 34): uid 65534 pre-creates the file root
// will write, mode 0666, in a shared directory, with other content and
// with the very content root writes. After root's Write the file is
// root's and writable by nobody else, whichever: she can no longer
// change it. Its group stays.
func TestAttackPlantedTarget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user; CI runs as root")
	}
	dir := stickyDir(t)
	for _, planted := range []string{"her gres.conf\n", "root's gres.conf\n"} {
		for _, backup := range []bool{false, true} {
			target := filepath.Join(dir, "gres.conf")
			os.Remove(target)
			os.Remove(target + ".bak")
			if err := os.WriteFile(target, []byte(planted), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(target, 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(target, attacker, 1234); err != nil {
				t.Fatal(err)
			}
			if _, err := Write(target, []byte("root's gres.conf\n"), Options{Backup: backup}); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{target, target + ".bak"} {
				info, err := os.Lstat(path)
				if os.IsNotExist(err) && path != target {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				st := info.Sys().(*syscall.Stat_t)
				if st.Uid != 0 || info.Mode().Perm()&0o022 != 0 || st.Gid != 1234 {
					t.Errorf("planted %q, backup %v: %s is %v %d:%d after root's write; want root's, writable by nobody else, group 1234", planted, backup, path, info.Mode(), st.Uid, st.Gid)
				}
			}
			if got := read(t, target); got != "root's gres.conf\n" {
				t.Errorf("planted %q: holds %q", planted, got)
			}
		}
	}
}

// TestAttackLockSquat (issue 34): uid 65534 makes the lock file of
// root's write in a shared directory and keeps an flock on it. Root's
// write does not wait for it: the lock file is none of a writer's.
func TestAttackLockSquat(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user; CI runs as root")
	}
	dir := stickyDir(t)
	lockPath := filepath.Join(dir, ".gres.conf.lock")
	squat, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	if err := squat.Chown(attacker, attacker); err != nil {
		t.Fatal(err)
	}
	// Her flock: an open file of its own, as her process's would be.
	if err := syscall.Flock(int(squat.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Write(filepath.Join(dir, "gres.conf"), []byte("root's\n"), Options{LockTimeout: 5 * time.Second}); err != nil {
		t.Fatalf("root's write waited for the squatted lock: %v", err)
	}
	t.Logf("written in %v past a squatted lock", time.Since(start))
}

// A lock file of another user that root cannot take in time is refused
// with the hint to remove it, apart from the message (advice.Hinter).
func TestLockOfAnotherUserHint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make another user's file; CI runs as root")
	}
	dir := stickyDir(t)
	lockPath := filepath.Join(dir, ".gres.conf.lock")
	if err := os.WriteFile(lockPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(lockPath, attacker, attacker); err != nil {
		t.Fatal(err)
	}
	// A timeout already past: root does not remove it, and refuses.
	_, err := Write(filepath.Join(dir, "gres.conf"), []byte("root's\n"), Options{LockTimeout: time.Nanosecond})
	var h advice.Hinter
	if !errors.As(err, &h) || h.Hint() != "; remove it" || !strings.HasSuffix(err.Error(), fmt.Sprintf("its lock file %s belongs to uid %d, not to a writer", lockPath, attacker)) {
		t.Errorf("err = %v; want the lock file's owner, with the hint to remove it", err)
	}
}

// TestAttackHugeTarget (issue 34): a file far larger than any config
// (sparse, so that it costs no disk), planted where root writes, is
// refused by its size in one line, not read whole.
func TestAttackHugeTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "devices.json")
	f, err := os.Create(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(300 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Write(target, []byte("{}\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), "larger than") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v; want one line refusing it by its size", err)
	}
	// What to do is a hint of the error's own, said after it.
	var h advice.Hinter
	if !errors.As(err, &h) || !strings.HasSuffix(err.Error(), "; not a file slurm-mig writes") || h.Hint() != "; move it away" {
		t.Errorf("err = %v (hint %v); want it to end \"; not a file slurm-mig writes\" with the hint \"; move it away\"", err, h)
	}
}
