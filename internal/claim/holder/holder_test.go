package holder

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
	"golang.org/x/sys/unix"
)

// TestMain makes the test binary serve as what tests start: a claim holder
// (as slurm-mig re-executed), or, as another user, a process that took a
// job's holder address first or one that tries to reach a holder.
func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == Arg:
		os.Exit(Hold(os.Args[2:], newTestJob))
	case os.Getenv("HOLDER_TEST_SQUAT") != "":
		os.Exit(squat(os.Getenv("HOLDER_TEST_SQUAT"), os.Getenv("HOLDER_TEST_REPORT")))
	case os.Getenv("HOLDER_TEST_INTRUDE") != "":
		os.Exit(intrude(os.Getenv("HOLDER_TEST_INTRUDE"), os.Getenv("HOLDER_TEST_JOB")))
	}
	os.Exit(m.Run())
}

// testJob is a process as a holder's job, named by its pid and start time.
type testJob struct {
	pid   int
	start uint64
}

func newTestJob(pid int, start uint64) Job { return testJob{pid: pid, start: start} }

func (j testJob) ID() (int, uint64) { return j.pid, j.start }

func (j testJob) Alive() bool {
	start, err := startTime(j.pid)
	return err == nil && start == j.start
}

func (j testJob) Pidfd() (*os.File, error) {
	fd, err := unix.PidfdOpen(j.pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd of %d: %w", j.pid, err)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	if !j.Alive() {
		f.Close()
		return nil, fmt.Errorf("process %d has ended", j.pid)
	}
	return f, nil
}

func procPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// procStat is the fields of /proc/PID/stat after the command name:
// [0] the state, [1] the parent, [19] the start time.
func procStat(pid int) ([]string, error) {
	data, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if i < 0 || len(f) < 20 {
		return nil, errors.New(procPath(pid, "stat") + ": malformed")
	}
	return f, nil
}

func startTime(pid int) (uint64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d has exited", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func parentOf(pid int) (int, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(f[1])
}

// userName names uid as warnings do.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}

// lock makes the file name in dir and takes its whole OFD write lock, as a
// claim's file is locked: the lock lasts while any process has it open.
func lock(t *testing.T, dir, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		f.Close()
		t.Fatalf("locking %s: %v", f.Name(), err)
	}
	return f
}

// released reports whether every file of names is free of its lock within
// a second: the kernel drops a dead holder's locks a moment after its end.
func released(t *testing.T, dir string, names ...string) bool {
	t.Helper()
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		free := true
		for _, name := range names {
			free = free && !held(t, dir, name)
		}
		if free || time.Now().After(deadline) {
			return free
		}
	}
}

// held reports whether a process has the file name in dir open with its
// lock.
func held(t *testing.T, dir, name string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		t.Fatal(err)
	}
	return lk.Type != unix.F_UNLCK
}

// squat listens at addr as a holder would, and acknowledges whatever
// comes, reporting each connection's descriptors in report.
func squat(addr, report string) int {
	l, err := listenAt(addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	os.WriteFile(report, []byte("listening\n"), 0o644)
	for {
		conn, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
		if err != nil {
			return 2
		}
		oob := make([]byte, unix.CmsgSpace(4*8))
		_, oobn, _, _, _ := unix.Recvmsg(conn, make([]byte, 64), oob, 0)
		n := 0
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			fds, _ := unix.ParseUnixRights(&m)
			n += len(fds)
		}
		unix.Write(conn, []byte{ackByte})
		f, _ := os.OpenFile(report, os.O_APPEND|os.O_WRONLY, 0)
		fmt.Fprintf(f, "connection with %d descriptors\n", n)
		f.Close()
	}
}

// intrude offers the holder at addr a file of its own as a claim of job
// ("pid start"), as a caller would, and prints whether it was taken.
func intrude(addr, job string) int {
	var j testJob
	fmt.Sscan(job, &j.pid, &j.start)
	f, err := os.CreateTemp("", "intruder")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.Remove(f.Name())
	fd, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: addr}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tv := unix.Timeval{Sec: 2}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	var ack [1]byte
	n := 0
	if err := unix.Sendmsg(fd, request(j), unix.UnixRights(int(f.Fd())), nil, unix.MSG_NOSIGNAL); err == nil {
		n, _ = unix.Read(fd, ack[:])
	}
	fmt.Println("taken:", n == 1 && ack[0] == ackByte)
	return 0
}

// testHolder is a job (a sleep) and a directory of claim files.
type testHolder struct {
	t    *testing.T
	job  testJob
	proc *os.Process
	dir  string
	addr string
}

func newTestHolder(t *testing.T, dir string) *testHolder {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	start, err := startTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	job := testJob{pid: cmd.Process.Pid, start: start}
	// An address of this test's own, so that tests never meet holders of
	// another test run.
	addr := fmt.Sprintf("@slurm-mig-test/%d/%d/%d", os.Getpid(), job.pid, job.start)
	return &testHolder{t: t, job: job, proc: cmd.Process, dir: dir, addr: addr}
}

// claim locks the file uuid and hands it to the job's holder, as free does.
func (th *testHolder) claim(uuid string, commit bool) {
	th.t.Helper()
	f := lock(th.t, th.dir, uuid)
	defer f.Close()
	h, err := dial(th.job, "slurm-mig", th.addr, ackTimeout).Handoff([]*os.File{f})
	if err != nil {
		th.t.Fatalf("handing %s over: %v", uuid, err)
	}
	if commit {
		if err := h.Commit(); err != nil {
			th.t.Fatal(err)
		}
	} else {
		h.Abort()
	}
}

// endJob kills the job and waits for its holders to let go.
func (th *testHolder) endJob() {
	th.proc.Kill()
	th.proc.Wait()
	waitUntil(th.t, func() bool { return len(holdersOf(th.job)) == 0 }, "the job's holders to end")
}

// holdersOf lists the pids of the job's holder processes. A holder just
// started may not show its arguments yet: exec(2) closes the descriptor
// that tells its starter it has run before the kernel sets the new
// program's arguments, so /proc/PID/cmdline of a child of this process can
// read empty for a moment (1 run in 300 counted one holder too few). The
// list is taken again until no live child of this process reads so, for
// at most a second.
func holdersOf(job testJob) []int {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		pids, starting := scanHolders(job)
		if !starting || time.Now().After(deadline) {
			return pids
		}
	}
}

// scanHolders is one look at /proc for holdersOf; starting says a live
// child of this process had no arguments to read.
func scanHolders(job testJob) (pids []int, starting bool) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(procPath(pid, "cmdline"))
		if len(cmdline) == 0 {
			state, err := procStat(pid)
			starting = starting || err == nil && state[0] != "Z" && state[1] == strconv.Itoa(os.Getpid())
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 3 && args[1] == Arg && args[2] == strconv.Itoa(job.pid) && args[3] == strconv.FormatUint(job.start, 10) {
			// A zombie's other threads may still hold its descriptors.
			tasks, _ := os.ReadDir(procPath(pid, "task"))
			if state, err := procStat(pid); err == nil && (state[0] != "Z" || len(tasks) > 1) {
				pids = append(pids, pid)
			}
		}
	}
	return pids, starting
}

func waitUntil(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestHolderPerJob: a job's calls share one holder, which keeps every
// claim handed to it until the job ends; another job gets a holder of
// its own, and its claims outlive the first job.
func TestHolderPerJob(t *testing.T) {
	d := t.TempDir()
	a, b := newTestHolder(t, d), newTestHolder(t, d)
	a.claim("MIG-a1", true)
	a.claim("MIG-a2", true)
	a.claim("MIG-a3", true)
	b.claim("MIG-b1", true)
	if ha, hb := holdersOf(a.job), holdersOf(b.job); len(ha) != 1 || len(hb) != 1 || ha[0] == hb[0] {
		t.Fatalf("holders of job a %v, of job b %v; want one each", ha, hb)
	}
	for _, uuid := range []string{"MIG-a1", "MIG-a2", "MIG-a3", "MIG-b1"} {
		if !held(t, d, uuid) {
			t.Errorf("%s is not held", uuid)
		}
	}
	a.endJob()
	for _, uuid := range []string{"MIG-a1", "MIG-a2", "MIG-a3"} {
		if !released(t, d, uuid) {
			t.Errorf("%s is still held after its job ended", uuid)
		}
	}
	if !held(t, d, "MIG-b1") {
		t.Error("the other job's claim ended with the first job")
	}
	b.endJob()
	if !released(t, d, "MIG-b1") {
		t.Error("MIG-b1 is still held after its job ended")
	}
}

// TestHolderAbort: a claim handed over but not committed (free could not
// print it) ends, whether the holder is the job's or the claim's alone.
func TestHolderAbort(t *testing.T) {
	d := t.TempDir()
	th := newTestHolder(t, d)
	th.claim("MIG-a", false) // from the call that started the holder
	th.claim("MIG-b", true)
	th.claim("MIG-c", false) // from a later call
	waitUntil(t, func() bool { return !held(t, d, "MIG-a") && !held(t, d, "MIG-c") }, "aborted claims to end")
	if !held(t, d, "MIG-b") {
		t.Error("the committed claim ended with the aborted ones")
	}
	// A holder of one claim only ends with it.
	f := lock(t, d, "MIG-d")
	h, err := (&Link{job: th.job, argv0: "slurm-mig", timeout: ackTimeout}).ownHolder([]*os.File{f})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(holdersOf(th.job)); n != 2 {
		t.Fatalf("%d holders, want the job's and the claim's own", n)
	}
	h.Abort()
	waitUntil(t, func() bool { return len(holdersOf(th.job)) == 1 }, "the claim's own holder to end")
	if !released(t, d, "MIG-d") || !held(t, d, "MIG-b") {
		t.Error("the wrong claims ended")
	}
}

// TestHolderEarly: a job's first call starts the holder before it has a
// claim, so that calls made meanwhile reach a holder that is already up;
// a holder that ends holding nothing ends once idle, one that keeps a
// claim stays.
func TestHolderEarly(t *testing.T) {
	d := t.TempDir()
	th := newTestHolder(t, d)
	first := dial(th.job, "slurm-mig", th.addr, ackTimeout)
	if n := len(holdersOf(th.job)); n != 1 {
		t.Fatalf("after the first call's Dial: %d holders, want 1", n)
	}
	// Calls of a burst: each reaches the holder, with the first call's
	// claim still to come.
	var links []*Link
	for range 4 {
		links = append(links, dial(th.job, "slurm-mig", th.addr, ackTimeout))
	}
	for i, l := range append(links, first) {
		uuid := fmt.Sprintf("MIG-%d", i)
		f := lock(t, d, uuid)
		h, err := l.Handoff([]*os.File{f})
		f.Close()
		if err != nil {
			t.Fatalf("handing %s over: %v", uuid, err)
		}
		if i == 1 {
			h.Abort()
		} else if err := h.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if pids := holdersOf(th.job); len(pids) != 1 {
		t.Fatalf("holders %v, want the job's one", pids)
	}
	waitUntil(t, func() bool { return !held(t, d, "MIG-1") }, "the claim given back to end")
	for _, uuid := range []string{"MIG-0", "MIG-2", "MIG-3", "MIG-4"} {
		if !held(t, d, uuid) {
			t.Errorf("%s is not held", uuid)
		}
	}

	// Meanwhile a job whose first call claims nothing (refused) leaves no
	// holder behind for long; nor does one whose claim was given back.
	refused, aborted := newTestHolder(t, d), newTestHolder(t, d)
	l := dial(refused.job, "slurm-mig", refused.addr, ackTimeout)
	if n := len(holdersOf(refused.job)); n != 1 {
		t.Fatalf("after Dial: %d holders, want 1", n)
	}
	l.Close()
	t0 := time.Now()
	aborted.claim("MIG-x", false)
	waitUntil(t, func() bool { return len(holdersOf(refused.job))+len(holdersOf(aborted.job)) == 0 }, "idle holders to end")
	if waited := time.Since(t0); waited < idleFor/2 {
		t.Errorf("idle holders ended after %s, before idleFor (%s)", waited, idleFor)
	}
	if !released(t, d, "MIG-x") {
		t.Error("MIG-x is held after its holder ended")
	}
	if n := len(holdersOf(th.job)); n != 1 || !held(t, d, "MIG-0") {
		t.Fatalf("a holder of claims, after %s: %d holders, MIG-0 held %v", time.Since(t0), n, held(t, d, "MIG-0"))
	}
	th.endJob()
}

// TestHolderUnacked: the call that started the holder commits without
// reading the ack, and may have ended before the holder reads its
// request or before it reads the commit; the holder keeps the claim all
// the same, and drops one that ended without commit.
func TestHolderUnacked(t *testing.T) {
	d := t.TempDir()
	start, err := startTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	job := testJob{pid: os.Getpid(), start: start}
	for _, tc := range []struct {
		name          string
		ackFirst      bool // the holder acks before the caller ends
		commit, keeps bool
	}{
		{"commit, then the holder reads", false, true, true},
		{"ack unread, then commit", true, true, true},
		{"no commit", false, false, false},
		{"ack unread, no commit", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uuid := "MIG-" + strings.ReplaceAll(tc.name, " ", "-")
			f := lock(t, d, uuid)
			pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			h := &holder{job: job, uid: os.Geteuid(), conns: map[int]*holderConn{}}
			h.add(pair[1], nil)
			defer func() {
				for conn := range h.conns {
					h.drop(conn)
				}
			}()
			if err := send(pair[0], []*os.File{f}, job); err != nil {
				t.Fatal(err)
			}
			f.Close() // the holder's copies in flight are all that is left
			if tc.ackFirst {
				h.serve(pair[1])
			}
			ho := &Handover{conn: pair[0]}
			if tc.commit {
				if err := ho.Commit(); err != nil {
					t.Fatal(err)
				}
			} else {
				ho.Abort()
			}
			for i := 0; i < 2 && len(h.conns) > 0; i++ {
				h.serve(pair[1])
			}
			if len(h.conns) != 0 || h.kept != map[bool]int{true: 1, false: 0}[tc.keeps] {
				t.Errorf("holder: %d connections left, %d claims kept", len(h.conns), h.kept)
			}
			if got := held(t, d, uuid); got != tc.keeps {
				t.Errorf("%s held: %v, want %v", uuid, got, tc.keeps)
			}
		})
	}
}

// TestHolderGoneMeanwhile: a call whose holder ended between its Dial and
// its Handoff (killed, or ended idle with the call still in its backlog)
// hands its claim to the job's next holder, which it or another call
// starts.
func TestHolderGoneMeanwhile(t *testing.T) {
	d := t.TempDir()
	th := newTestHolder(t, d)
	handoff := func(l *Link, uuid string) {
		t.Helper()
		f := lock(t, d, uuid)
		defer f.Close()
		h, err := l.Handoff([]*os.File{f})
		if err != nil {
			t.Fatalf("handing %s over: %v", uuid, err)
		}
		if err := h.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// The holder killed while two calls are on their way: the one that
	// started it, and one it accepted.
	starter := dial(th.job, "slurm-mig", th.addr, ackTimeout)
	other := dial(th.job, "slurm-mig", th.addr, ackTimeout)
	first := holdersOf(th.job)
	if len(first) != 1 {
		t.Fatalf("holders %v, want one", first)
	}
	syscall.Kill(first[0], syscall.SIGKILL)
	waitUntil(t, func() bool { return len(holdersOf(th.job)) == 0 }, "the killed holder to end")
	handoff(other, "MIG-a")
	handoff(starter, "MIG-b")
	if pids := holdersOf(th.job); len(pids) != 1 || pids[0] == first[0] || !held(t, d, "MIG-a") || !held(t, d, "MIG-b") {
		t.Fatalf("after the holder's death: holders %v, MIG-a held %v, MIG-b held %v; want one new holder with both", pids, held(t, d, "MIG-a"), held(t, d, "MIG-b"))
	}
	th.endJob()

	// A listener that closes with a call in its backlog, never accepted,
	// as a holder ending idle does.
	th = newTestHolder(t, d)
	listener, err := listenAt(th.addr)
	if err != nil {
		t.Fatal(err)
	}
	l := dial(th.job, "slurm-mig", th.addr, ackTimeout)
	if l.conn < 0 {
		t.Fatal("Dial did not connect to the listener")
	}
	unix.Close(listener)
	handoff(l, "MIG-c")
	if n := len(holdersOf(th.job)); n != 1 || !held(t, d, "MIG-c") {
		t.Errorf("past a holder that ended idle: %d holders, want 1; MIG-c held %v", n, held(t, d, "MIG-c"))
	}
	if conn, err := connectTo(th.addr, time.Second); err != nil {
		t.Errorf("the claim's holder is not the job's (none listens at its address): %v", err)
	} else {
		unix.Close(conn)
	}
	th.endJob()
	if !released(t, d, "MIG-a", "MIG-b", "MIG-c") {
		t.Error("claims outlived their job")
	}
}

// TestHolderDeath: a holder killed takes its claims with it, and the
// job's next call starts a new one; one that does not answer (stopped)
// is passed by for a holder of the claim's own.
func TestHolderDeath(t *testing.T) {
	d := t.TempDir()
	th := newTestHolder(t, d)
	th.claim("MIG-a", true)
	first := holdersOf(th.job)
	if len(first) != 1 {
		t.Fatalf("holders %v, want one", first)
	}
	syscall.Kill(first[0], syscall.SIGKILL)
	waitUntil(t, func() bool { return len(holdersOf(th.job)) == 0 }, "the killed holder to end")
	// The kernel drops a dead process's locks a moment after it is a zombie.
	waitUntil(t, func() bool { return !held(t, d, "MIG-a") }, "MIG-a to come back after its holder was killed")
	th.claim("MIG-b", true)
	second := holdersOf(th.job)
	if len(second) != 1 || second[0] == first[0] || !held(t, d, "MIG-b") {
		t.Fatalf("after the holder's death: holders %v (first %d), MIG-b held %v", second, first[0], held(t, d, "MIG-b"))
	}

	syscall.Kill(second[0], syscall.SIGSTOP)
	defer syscall.Kill(second[0], syscall.SIGCONT)
	f := lock(t, d, "MIG-c")
	t0 := time.Now()
	h, err := dial(th.job, "slurm-mig", th.addr, 100*time.Millisecond).Handoff([]*os.File{f})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	h.Commit()
	if n := len(holdersOf(th.job)); n != 2 || !held(t, d, "MIG-c") {
		t.Errorf("past a stopped holder (after %s): %d holders, want 2; MIG-c held %v", time.Since(t0), n, held(t, d, "MIG-c"))
	}
	syscall.Kill(second[0], syscall.SIGCONT)
	th.endJob()
	if !released(t, d, "MIG-b", "MIG-c") {
		t.Error("claims outlived their job")
	}
}

// TestHolderOtherUser: a holder's address is no way into another user's
// claims: a process of another user that took the address first gets no
// claim (the call starts a holder of its own), and one that offers a
// holder files is refused.
func TestHolderOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user; CI runs as root")
	}
	// The test binary, where uid 65534 may run it.
	bin, err := os.MkdirTemp("", "holder-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(bin)
	os.Chmod(bin, 0o755)
	self, _ := os.Executable()
	testtools.CopyExecutable(t, self, filepath.Join(bin, "holder.test"))
	asNobody := func(env ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, "holder.test"))
		cmd.Env = append([]string{"TMPDIR=" + bin}, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		return cmd
	}
	os.Chmod(bin, 0o1777)

	d := t.TempDir()
	th := newTestHolder(t, d)
	report := filepath.Join(bin, "report")
	squatter := asNobody("HOLDER_TEST_SQUAT="+th.addr, "HOLDER_TEST_REPORT="+report)
	var stderr bytes.Buffer
	squatter.Stderr = &stderr
	if err := squatter.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { squatter.Process.Kill(); squatter.Wait() }()
	waitUntil(t, func() bool { _, err := os.Stat(report); return err == nil }, "the squatter to listen: "+stderr.String())

	th.claim("MIG-a", true)
	if !held(t, d, "MIG-a") || len(holdersOf(th.job)) != 1 {
		t.Errorf("with another user at the holder's address: MIG-a held %v, holders %v", held(t, d, "MIG-a"), holdersOf(th.job))
	}
	if got, _ := os.ReadFile(report); strings.Contains(string(got), "descriptors") && !strings.Contains(string(got), "with 0 descriptors") {
		t.Errorf("the other user's process got the claim:\n%s", got)
	}
	squatter.Process.Kill()
	squatter.Wait()

	// The job's holder, now at its address, hears no other user.
	th.claim("MIG-b", true)
	intruder := asNobody("HOLDER_TEST_INTRUDE="+th.addr, fmt.Sprintf("HOLDER_TEST_JOB=%d %d", th.job.pid, th.job.start))
	out, err := intruder.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "taken: false" {
		t.Errorf("another user offering the job's holder a file: %v: %s", err, out)
	}
	// Same user, same request: taken (the refusal above was the uid's).
	f, _ := os.CreateTemp(t.TempDir(), "mine")
	conn, err := connectTo(th.addr, time.Second)
	if err == nil {
		var h *Handover
		if h, err = offer(conn, []*os.File{f}, th.job); err == nil {
			h.Abort()
		}
	}
	if err != nil {
		t.Errorf("the job's holder refused its own user: %v", err)
	}
}
