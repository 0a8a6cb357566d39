package claim

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
	"golang.org/x/sys/unix"
)

// The attack tests (attack_*_test.go) attack the claims directory as a
// hostile local user would (issue 29): they run the test binary as
// another uid, with CLAIM_TEST_ATTACK naming what it is to do, against
// claims made by this process (root). They need root to switch users; CI
// runs as root.

// nobody is the attacker's uid (and gid).
const nobody = 65534

// The test binary as an attacker: init runs before TestMain, so the
// attack starts before any test machinery.
func init() {
	if mode := os.Getenv("CLAIM_TEST_ATTACK"); mode != "" {
		os.Exit(attack(mode, os.Args[1:]))
	}
}

// attack runs one attack; the last argument of those that wait is a
// file it creates once it is under way.
func attack(mode string, args []string) int {
	ready := func() { os.WriteFile(args[len(args)-1], []byte("ready\n"), 0o644) }
	switch mode {
	case "race-symlink": // path target ready: swap a fresh directory at path for a symlink to target
		path, target := args[0], args[1]
		ready()
		for {
			if unix.Rmdir(path) == nil {
				os.Symlink(target, path)
				time.Sleep(200 * time.Microsecond)
				os.Remove(path)
			}
		}
	case "lock-claims": // dir ready: lock every file in dir every way a reader can, and keep the locks
		dir := args[0]
		fds := map[string]int{}
		got := map[string]int{} // the ways each file is locked, by bit
		for pass := 0; ; pass++ {
			names, _ := readNames(dir)
			for _, name := range names {
				fd, ok := fds[name]
				if !ok {
					var err error
					fd, err = unix.Open(filepath.Join(dir, name), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
					if err != nil {
						continue
					}
					fds[name] = fd
				}
				for bit, lock := range []func() error{
					func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) },
					func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_RDLCK}) },
					func() error { return unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &unix.Flock_t{Type: unix.F_RDLCK}) },
				} {
					if got[name]&(1<<bit) == 0 && lock() == nil {
						got[name] |= 1 << bit
					}
				}
			}
			if pass == 0 {
				ready()
			}
		}
	case "lock-dir": // dir ready: hold an exclusive flock on the directory itself
		f, err := os.Open(args[0])
		if err != nil || unix.Flock(int(f.Fd()), unix.LOCK_EX) != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		ready()
		select {}
	case "flood": // dir key n: n empty files of other names, n/32 named as claims of key, of both forms
		n, _ := strconv.Atoi(args[2])
		for i := range n {
			name := fmt.Sprintf("junk-%08d", i)
			if i%32 == 0 {
				name = fmt.Sprintf("%s.%016x", args[1], i)
				if i%64 == 0 {
					name = fmt.Sprintf("%s.%032x", args[1], i)
				}
			}
			fd, err := unix.Open(filepath.Join(args[0], name), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			unix.Close(fd)
		}
		return 0
	case "floodclaims": // dir key n: n empty files named as claims of key
		n, _ := strconv.Atoi(args[2])
		for i := range n {
			fd, err := unix.Open(filepath.Join(args[0], fmt.Sprintf("%s.%032x", args[1], i)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			unix.Close(fd)
		}
		return 0
	case "choose": // dir uuid ready: hold a claim file of uuid as a claimant that never finishes choosing
		d, err := OpenDir(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		job, _ := Self()
		if _, err := d.create(args[1], Info{Job: job, SchedulerJob: "stuck", Command: "attack"}.bytes(args[1])); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		ready()
		select {}
	case "unreadable": // dir uuid1 uuid2 victim ready: a file named as a claim of uuid1 that victim may not read, one of uuid2 under a lease
		acl := filepath.Join(args[0], fileKey(args[1])+"."+strings.Repeat("a", suffixLen))
		lease := filepath.Join(args[0], fileKey(args[2])+"."+strings.Repeat("b", suffixLen))
		victim, _ := strconv.Atoi(args[3])
		if err := os.WriteFile(acl, []byte("device "+args[1]+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := denyACL(acl, victim); err != nil {
			fmt.Fprintln(os.Stderr, "no ACLs:", err)
			return 3
		}
		if err := os.WriteFile(lease, []byte("device "+args[2]+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		f, err := os.OpenFile(lease, os.O_RDWR, 0)
		if err == nil {
			_, err = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lease:", err)
			return 2
		}
		ready()
		select {}
	case "claim": // dir uuid schedulerjob ready: claim uuid and hold it
		d, err := OpenDir(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		job, _ := Self()
		c, _, err := d.Take([]string{args[1]}, 1, Info{Job: job, SchedulerJob: args[2], Command: "attack"}, time.Second)
		if err != nil || c == nil {
			fmt.Fprintln(os.Stderr, "no claim:", err)
			return 2
		}
		ready()
		select {}
	case "take": // dir uuid: claim uuid once, say how it went
		fmt.Println(tryTake(args[0], args[1]))
		return 0
	case "alive-emfile": // whether this process, as a job, is alive with no descriptor to spare
		job, err := Self()
		if err != nil {
			fmt.Println("error:", err)
			return 0
		}
		lim := unix.Rlimit{Cur: 256, Max: 256}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Println("setrlimit:", err)
			return 0
		}
		for { // every descriptor taken
			if _, err := unix.Open("/dev/null", unix.O_RDONLY, 0); err != nil {
				break
			}
		}
		if job.Alive() {
			fmt.Println("alive")
		} else {
			fmt.Println("ended")
		}
		return 0
	case "take-emfile": // dir uuid: the same with no descriptor to spare
		d, err := OpenDir(args[0])
		if err != nil {
			fmt.Println("error:", err)
			return 0
		}
		job, _ := Self()
		lim := unix.Rlimit{Cur: 256, Max: 256}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Println("setrlimit:", err)
			return 0
		}
		for { // every descriptor taken
			if _, err := unix.Open("/dev/null", unix.O_RDONLY, 0); err != nil {
				break
			}
		}
		c, _, err := d.Take([]string{args[1]}, 1, Info{Job: job, Command: "attack"}, time.Second)
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case c != nil:
			fmt.Println("claimed")
		default:
			fmt.Println("refused")
		}
		return 0
	case "stress": // dir usage n until: claim one of n devices, again and again; report any device found in use
		return stress(args[0], args[1], args[2], args[3])
	}
	fmt.Fprintln(os.Stderr, "unknown attack", mode)
	return 2
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// tryTake claims uuid in dir as a job of its own would, and says how it
// went: claimed, refused, or the error.
func tryTake(dir, uuid string) string {
	d, err := OpenDir(dir)
	if err != nil {
		return "error: " + err.Error()
	}
	defer d.Close()
	job, _ := Self()
	c, h, err := d.Take([]string{uuid}, 1, Info{Job: job, Command: "attack"}, time.Second)
	switch {
	case err != nil:
		return "error: " + err.Error()
	case c != nil:
		c.Close()
		return "claimed"
	}
	return fmt.Sprintf("refused: held by uid %d", h[uuid].UID)
}

// attackers is the test binary where other users may run it, and a
// directory of the test's own that they may reach.
type attackers struct {
	bin  string
	base string // root's, mode 0755
}

func newAttackers(t *testing.T) *attackers {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as another user; CI runs as root")
	}
	base, err := os.MkdirTemp("", "claim-attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "claim.test")
	testtools.CopyExecutable(t, self, bin)
	a := &attackers{bin: bin, base: base}
	a.dir(t, "ready", 0o1777, 0) // where attacks say they are under way
	return a
}

func (a *attackers) command(uid int, mode string, args ...string) *exec.Cmd {
	cmd := exec.Command(a.bin, args...)
	cmd.Env = []string{"CLAIM_TEST_ATTACK=" + mode, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	return cmd
}

// start starts an attack that runs until the test ends, and waits until
// it is under way.
func (a *attackers) start(t *testing.T, uid int, mode string, args ...string) {
	t.Helper()
	ready := filepath.Join(a.base, "ready", fmt.Sprintf("%s-%d", mode, time.Now().UnixNano()))
	cmd := a.command(uid, mode, append(args, ready)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	exited := make(chan struct{})
	go func() { cmd.Process.Wait(); close(exited) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("attack %s ended before it was under way: %s", mode, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("attack %s: not under way after 30 s", mode)
		}
	}
}

// run runs an attack to its end and returns its output.
func (a *attackers) run(t *testing.T, uid int, mode string, args ...string) string {
	t.Helper()
	out, err := a.command(uid, mode, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("attack %s: %v: %s", mode, err, out)
	}
	return strings.TrimSpace(string(out))
}

// dir makes a directory under base with mode (as chmod(2) takes it) and
// owner.
func (a *attackers) dir(t *testing.T, name string, mode uint32, uid int) string {
	t.Helper()
	path := filepath.Join(a.base, name)
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	return path
}

// precious is a directory outside any claims directory with a file in
// it: neither may change, whatever the attacks do.
type precious struct {
	dir, file string
}

func newPrecious(t *testing.T, a *attackers) precious {
	t.Helper()
	p := precious{dir: a.dir(t, "precious", 0o755, 0)}
	p.file = filepath.Join(p.dir, ".bash_profile")
	if err := os.WriteFile(p.file, []byte("echo hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p precious) check(t *testing.T) {
	t.Helper()
	st, err := os.Lstat(p.dir)
	if err != nil || st.Mode() != fs.ModeDir|0o755 {
		t.Fatalf("the attack changed %s: %v %v", p.dir, st.Mode(), err)
	}
	entries, _ := os.ReadDir(p.dir)
	data, _ := os.ReadFile(p.file)
	if st, err := os.Lstat(p.file); len(entries) != 1 || err != nil || st.Mode() != 0o644 || string(data) != "echo hello\n" {
		t.Fatalf("the attack changed what %s holds: %d entries, %s %v %q", p.dir, len(entries), st.Mode(), err, data)
	}
}

// stress is a claimant of TestClaimStress.
func stress(dir, usage, n, until string) int {
	devices, _ := strconv.Atoi(n)
	end, _ := strconv.ParseInt(until, 10, 64)
	inUse := make([]*os.File, devices) // opened first: lower descriptors than any claim's
	uuids := make([]string, devices)
	for i := range devices {
		f, err := os.Open(filepath.Join(usage, strconv.Itoa(i)))
		if err != nil {
			fmt.Println(err)
			return 2
		}
		inUse[i] = f
		uuids[i] = "MIG-" + strconv.Itoa(i)
	}
	d, err := OpenDir(dir)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	job, _ := Self()
	claims := 0
	for time.Now().UnixNano() < end {
		c, _, err := d.Take(uuids, 1, Info{Job: job, Command: "stress"}, time.Second)
		if err != nil {
			fmt.Println("take:", err)
			return 2
		}
		if c == nil {
			continue
		}
		claims++
		i, _ := strconv.Atoi(strings.TrimPrefix(c.UUIDs[0], "MIG-"))
		if err := unix.Flock(int(inUse[i].Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			fmt.Printf("%s claimed while in use by another claimant (%v)\n", c.UUIDs[0], err)
			return 1
		}
		time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		unix.Flock(int(inUse[i].Fd()), unix.LOCK_UN)
		if rand.IntN(2) == 0 {
			os.Remove(c.Files[0].Name())
		}
		c.Close()
	}
	fmt.Println("claims", claims)
	return 0
}

// held reports whether a live claim holds uuid.
func held(t *testing.T, d *Dir, uuid string) bool {
	t.Helper()
	c, h, err := d.Take([]string{uuid}, 1, Info{Command: "probe"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		os.Remove(c.Files[0].Name())
		c.Close()
	}
	return len(h) == 1
}
