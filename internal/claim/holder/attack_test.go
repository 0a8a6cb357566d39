package holder

import (
	"bytes"
	"fmt"
	"io"
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

// Attacks on holders by a process of another user (uid 65534), which the
// test binary becomes when one of these variables is set (init runs before
// TestMain).
func init() {
	switch {
	case os.Getenv("HOLDER_TEST_FLOOD") != "":
		os.Exit(flood(os.Getenv("HOLDER_TEST_FLOOD")))
	case os.Getenv("HOLDER_TEST_SQUAT_QUIET") != "":
		os.Exit(squatQuiet(os.Getenv("HOLDER_TEST_SQUAT_QUIET"), os.Getenv("HOLDER_TEST_REPORT"), os.Getenv("HOLDER_TEST_FILL") != ""))
	}
}

// flood connects to addr and closes the connection again, as fast as it
// can, from two threads, until it is killed.
func flood(addr string) int {
	for range 2 {
		go func() {
			for {
				fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					continue
				}
				unix.Connect(fd, &unix.SockaddrUnix{Name: addr})
				unix.Close(fd)
			}
		}()
	}
	select {}
}

// squatQuiet takes addr first, as another user who read the job's pid and
// start time from /proc would, and listens there but never accepts nor
// answers. With fill, it listens with no room in its backlog and fills
// it itself: whoever connects next waits for room, unless it does not
// block.
func squatQuiet(addr, report string, fill bool) int {
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		err = unix.Bind(l, &unix.SockaddrUnix{Name: addr})
	}
	if err == nil && fill {
		err = unix.Listen(l, 0)
		var c int
		if err == nil {
			c, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		}
		if err == nil {
			err = unix.Connect(c, &unix.SockaddrUnix{Name: addr})
		}
	} else if err == nil {
		err = unix.Listen(l, 16)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	os.WriteFile(report, []byte("listening\n"), 0o644)
	select {}
}

// asNobody returns a way to run the test binary as uid 65534, from a copy
// that user may run, and a directory that user may write.
func asNobody(t *testing.T) (func(env ...string) *exec.Cmd, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user; CI runs as root")
	}
	bin, err := os.MkdirTemp("", "holder-attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testtools.CopyExecutable(t, self, filepath.Join(bin, "holder.test"))
	os.Chmod(bin, 0o1777)
	return func(env ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, "holder.test"))
		cmd.Env = append([]string{"TMPDIR=" + bin}, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		return cmd
	}, bin
}

// startAttacker starts cmd and stops it when the test ends.
func startAttacker(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if stderr.Len() > 0 {
			t.Logf("attacker: %s", stderr.String())
		}
	})
}

// cpuTicks is the CPU time a process has used, user and system, in clock
// ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	f, err := procStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	utime, err1 := strconv.Atoi(f[11])
	stime, err2 := strconv.Atoi(f[12])
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	return utime + stime
}

// clockTicks is USER_HZ, which is 100 on every Linux architecture Go
// supports.
const clockTicks = 100

// TestHolderFloodedByOtherUser: another user connects to a job's holder
// and closes again, as fast as two threads can. The holder must not spend
// its CPU refusing them, and the job's next call must still hand its claim
// over at once, not after ackTimeout.
func TestHolderFloodedByOtherUser(t *testing.T) {
	nobody, _ := asNobody(t)
	d := t.TempDir()
	th := newTestHolder(t, d)
	th.claim("MIG-a", true)
	pids := holdersOf(th.job)
	if len(pids) != 1 {
		t.Fatalf("holders %v, want one", pids)
	}
	holder := pids[0]

	startAttacker(t, nobody("HOLDER_TEST_FLOOD="+th.addr))
	time.Sleep(200 * time.Millisecond) // the flood under way
	before, t0 := cpuTicks(t, holder), time.Now()
	time.Sleep(2 * time.Second)
	used := float64(cpuTicks(t, holder)-before) / clockTicks
	share := used / time.Since(t0).Seconds()
	t.Logf("the holder used %.2fs of CPU in %s of flood (%.0f%%)", used, time.Since(t0).Round(time.Millisecond), 100*share)
	if share > 0.10 {
		t.Errorf("the holder used %.0f%% of a CPU refusing another user's connections; want at most 10%%", 100*share)
	}

	t1 := time.Now()
	th.claim("MIG-b", true)
	took := time.Since(t1)
	t.Logf("a claim handed over during the flood in %s", took)
	if took > time.Second {
		t.Errorf("handing a claim over during the flood took %s; want well under ackTimeout (%s)", took, ackTimeout)
	}
	if !held(t, d, "MIG-a") || !held(t, d, "MIG-b") {
		t.Errorf("during the flood: MIG-a held %v, MIG-b held %v", held(t, d, "MIG-a"), held(t, d, "MIG-b"))
	}
	th.endJob()
	if !released(t, d, "MIG-a", "MIG-b") {
		t.Error("claims outlived their job")
	}
}

// TestHolderAddressSquatted: another user, who read a job's pid and start
// time from /proc, takes the job's holder address first, and listens there
// without ever answering; or also fills the backlog of its socket, so that
// a connect(2) waits for room. A call must see at once that the address
// is not its user's, or cannot be reached, start a holder of its own, say
// so in one line, and give the squatter nothing.
func TestHolderAddressSquatted(t *testing.T) {
	nobody, shared := asNobody(t)
	d := t.TempDir()
	for _, tc := range []struct {
		name, fill, warning string
	}{
		{"listening", "", "nobody (uid 65534) has taken this job's claim holder address; this claim gets a holder of its own"},
		{"backlog full", "1", "the job's claim holder address has a full backlog (another user flooding it, or listening there?); this claim gets a holder of its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newTestHolder(t, d)
			report := filepath.Join(shared, "report-"+strings.ReplaceAll(tc.name, " ", "-"))
			startAttacker(t, nobody("HOLDER_TEST_SQUAT_QUIET="+th.addr, "HOLDER_TEST_FILL="+tc.fill, "HOLDER_TEST_REPORT="+report))
			waitUntil(t, func() bool { _, err := os.Stat(report); return err == nil }, "the squatter to listen")

			var warnings []string
			uuids := []string{"MIG-a-" + tc.fill, "MIG-b-" + tc.fill}
			for _, uuid := range uuids {
				f := lock(t, d, uuid)
				t0 := time.Now()
				l := dial(th.job, "slurm-mig", th.addr, ackTimeout)
				l.warn = func(msg string) { warnings = append(warnings, msg) }
				l.userName = userName
				h, err := l.Handoff([]*os.File{f})
				f.Close()
				if err != nil {
					t.Fatalf("handing %s over: %v", uuid, err)
				}
				if err := h.Commit(); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(t0); took > time.Second {
					t.Errorf("with the address squatted, handing %s over took %s; want it at once", uuid, took)
				}
			}
			if n := len(holdersOf(th.job)); n != 2 || !held(t, d, uuids[0]) || !held(t, d, uuids[1]) {
				t.Errorf("with the address squatted: %d holders (want one per claim), %s held %v, %s held %v", n, uuids[0], held(t, d, uuids[0]), uuids[1], held(t, d, uuids[1]))
			}
			if len(warnings) != 2 || warnings[0] != tc.warning || warnings[1] != tc.warning {
				t.Errorf("warnings %q, want one per call: %q", warnings, tc.warning)
			}
			th.endJob()
			if !released(t, d, uuids...) {
				t.Error("claims outlived their job")
			}
		})
	}
}

// TestHolderClosesInherited: a holder keeps none of the descriptors that
// the call which started it inherited, such as the write end of a command
// substitution's pipe that the job script duplicated
// (`x=$( exec 9>&1; slurm-mig free; echo after )`): the shell reads that
// pipe until every writer has closed it, and would wait for the job's end,
// which is its own.
func TestHolderClosesInherited(t *testing.T) {
	d := t.TempDir()
	th := newTestHolder(t, d)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// As a shell leaves it: inherited across exec(2).
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	th.claim("MIG-a", true)
	w.Close()
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("reading the pipe after the call closed its end: %d bytes, %v; want EOF (the holder keeps the inherited end: %v)", n, err, holderFds(holdersOf(th.job)))
	}
	if !held(t, d, "MIG-a") {
		t.Error("MIG-a is not held")
	}
	th.endJob()
}

// holderFds lists what the holders have open, for failure messages.
func holderFds(pids []int) []string {
	var open []string
	for _, pid := range pids {
		entries, _ := os.ReadDir(procPath(pid, "fd"))
		for _, e := range entries {
			target, _ := os.Readlink(procPath(pid, "fd/"+e.Name()))
			open = append(open, fmt.Sprintf("%d:%s=%s", pid, e.Name(), target))
		}
	}
	return open
}

// TestHolderApart: the holder exec starts for its claim is nobody's child
// but that of whoever adopts orphans (CMD, which exec becomes, might wait
// for all its children, and a parent that reaps only its own would keep
// it a zombie); it keeps the claim until the job ends.
func TestHolderApart(t *testing.T) {
	d := t.TempDir()
	th := newTestHolder(t, d)
	f := lock(t, d, "MIG-a")
	h, err := StartApart([]*os.File{f}, th.job, "slurm-mig")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Commit(); err != nil {
		t.Fatal(err)
	}
	pids := holdersOf(th.job)
	if len(pids) != 1 {
		t.Fatalf("holders %v, want one", pids)
	}
	if parent, err := parentOf(pids[0]); err != nil || parent == os.Getpid() {
		t.Errorf("the holder's parent is %d (%v), this process", parent, err)
	}
	if !held(t, d, "MIG-a") {
		t.Error("MIG-a is not held")
	}
	th.endJob()
	if !released(t, d, "MIG-a") {
		t.Error("MIG-a outlived its job")
	}
}
