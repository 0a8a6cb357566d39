package claim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// HolderArg is the hidden first argument that makes slurm-mig a claim
// holder (see Handoff). It is not a command of the CLI.
const HolderArg = "__claim-holder"

// Descriptors of the holder as Handoff starts it: the job's pidfd (closed
// where the kernel has none), the listening socket (closed for a holder
// of one claim alone), the connection to the caller that started it, then
// that caller's claim files.
const (
	holderPidfd     = 3
	holderListener  = 4
	holderStarter   = 5
	holderFirstLock = 6
)

// pollInterval is how often a holder on a kernel without pidfd (before
// 5.3) looks whether its job still runs.
const pollInterval = time.Second

// ackTimeout bounds the wait for a job's holder to take a claim: it
// answers within milliseconds, once it has started; one that does not
// (stopped, or its machine overloaded) is passed by, for a new holder.
const ackTimeout = 5 * time.Second

// The holder's protocol, one connection per claim: the caller sends a
// request naming the job with the claim files' descriptors (SCM_RIGHTS);
// the holder answers ack once it has them; the caller says commit once
// it has printed the devices. A caller that ends without commit (its
// output failed, it was killed) has handed nothing out: the holder lets
// those files go. What follows the request, commit or the end, decides;
// the ack is only for the caller, which may be gone by then: the call
// that started the holder does not wait for it (see Link.Handoff).
const (
	ackByte    = 'k'
	commitByte = 'c'
)

func holderRequest(job Job) []byte { return fmt.Appendf(nil, "claim %d %d", job.PID, job.Start) }

// holderAddr is the abstract unix socket name of the holder of a job's
// claims made by this user: a job's calls of free share one holder, so
// that only a job's first call starts a process. The pid namespace is
// part of the name, as a pid is only unique within one. Anyone may bind
// any abstract name, and anyone can read a job's pid and start time in
// /proc, so both ends check the other's uid (SO_PEERCRED): a name that
// another user took first makes a call start a holder of its own at once
// (connectTo never waits to connect), nothing worse; a holder refuses
// other users' connections, at a bounded rate (holder.refuse).
func holderAddr(job Job) string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return fmt.Sprintf("@slurm-mig/claim-holder/%d/%s/%d/%d", os.Geteuid(), ns, job.PID, job.Start)
}

// Handover is a claim the job's holder has: it keeps it once Commit says
// the devices were handed out, and until the job ends.
type Handover struct{ conn int }

// Commit tells the holder to keep the claim: this process may end.
func (h *Handover) Commit() error {
	defer unix.Close(h.conn)
	if _, err := unix.Write(h.conn, []byte{commitByte}); err != nil {
		return fmt.Errorf("the claim's holder has ended: %w", err)
	}
	return nil
}

// Abort gives the claim back: nobody learnt its devices. (Ending
// without Commit does the same.)
func (h *Handover) Abort() { unix.Close(h.conn) }

// errNoHolder: no holder listens at the job's address, or the one that
// did has ended before it took the claim (it ended idle just as this call
// came: see holder.run).
var errNoHolder = errors.New("no holder")

// Link is a call's way to its job's holder, made as the call begins,
// before it chooses devices: the job's first call starts the holder
// there, so that the holder comes up while every call of a burst does
// its own work, rather than after it, with the others waiting in its
// backlog.
type Link struct {
	job     Job
	argv0   string
	addr    string
	timeout time.Duration // for the holder's acknowledgement
	conn    int           // to the holder; -1: none, Handoff finds one
	started bool          // conn is to the holder this call started
	warn    func(string)  // told when another user keeps the call from the address
}

// Dial reaches the job's holder, or starts it (without a claim) where
// there is none. It cannot fail: what goes wrong here, Handoff tries
// again, as it must anyway should the holder end meanwhile. warn is told,
// in one line, when another user has taken the job's holder address or
// floods it.
func Dial(job Job, argv0 string, warn func(string)) *Link {
	l := dial(job, argv0, holderAddr(job), ackTimeout)
	l.warn = warn
	return l
}

func dial(job Job, argv0, addr string, timeout time.Duration) *Link {
	l := &Link{job: job, argv0: argv0, addr: addr, timeout: timeout, conn: -1}
	for try := 0; try < 3; try++ {
		conn, started, err := l.reach(nil)
		if err == nil {
			l.conn, l.started = conn, started
			break
		}
		if !errors.Is(err, unix.EADDRINUSE) {
			break
		}
		time.Sleep(time.Millisecond) // another call is starting the holder: it listens in a moment
	}
	return l
}

// Close lets the link go unused: the holder drops the connection.
func (l *Link) Close() {
	if l.conn >= 0 {
		unix.Close(l.conn)
		l.conn = -1
	}
}

// Handoff gives the claim to the job's holder, so that it outlives
// slurm-mig and ends with the job: the holder the link reached, or, if
// that one has ended, the one the job has now, or else a new one. The
// caller keeps its own descriptors of the claim until the holder has
// acknowledged its copies, so a claim never lapses on the way. Should
// the job's holder refuse, not answer, or be another user's, the claim
// gets a holder of its own.
//
// Which call starts the job's holder is settled by the address itself:
// the one whose bind(2) succeeds; the others connect, and wait in its
// backlog until the holder, once started, accepts them.
//
// The call that started the holder does not wait for its ack: its
// connection is the holder's from the start (the holder cannot end idle
// with it open), and the descriptors it sends are the holder's from
// sendmsg(2) on, kept open in flight until the holder reads them, as
// those of a holder started with a claim are from fork(2) on. Only the
// holder's death would drop them, which ends its claims in any case.
func (l *Link) Handoff(c *Claim) (*Handover, error) {
	conn := l.conn
	l.conn = -1
	if conn >= 0 && l.started {
		if err := sendClaim(conn, c, l.job); err == nil {
			return &Handover{conn: conn}, nil
		}
		unix.Close(conn) // the holder has ended: try again as any call would
		conn = -1
	}
	for try := 0; try < 3; try++ {
		if conn < 0 {
			var started bool
			var err error
			conn, started, err = l.reach(c.Files)
			switch {
			case started && err != nil:
				return nil, err
			case started:
				return &Handover{conn: conn}, nil // the new holder has the files
			case errors.Is(err, unix.EADDRINUSE):
				time.Sleep(time.Millisecond)
				continue
			case err != nil:
				l.warnForeign(err)
				return l.ownHolder(c) // the address is not ours, or its backlog is full
			}
		}
		h, err := offer(conn, c, l.job)
		conn = -1
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, errNoHolder) {
			break // refused, or not answering
		}
	}
	return l.ownHolder(c)
}

// HandOut gives the claim to the job's holder (Handoff) and tells its
// devices through tell: the holder keeps the claim only once tell has
// succeeded; else the devices go back, as nobody learnt them.
func (l *Link) HandOut(c *Claim, tell func(uuids []string) error) error {
	h, err := l.Handoff(c)
	if err != nil {
		return fmt.Errorf("handing the claim to its holder: %w", err)
	}
	if err := tell(c.UUIDs); err != nil {
		h.Abort()
		return err
	}
	return h.Commit()
}

// warnForeign says so when err is another user's process at the job's
// holder address, which has read the job's pid in /proc and bound the
// address first, or a full backlog there, which the job's calls never
// fill: an admin may want to know.
func (l *Link) warnForeign(err error) {
	var foreign *foreignError
	switch {
	case l.warn == nil:
	case errors.As(err, &foreign):
		l.warn(fmt.Sprintf("%s (uid %d) has taken this job's claim holder address; this claim gets a holder of its own", userName(foreign.uid), foreign.uid))
	case errors.Is(err, errBacklogFull):
		l.warn("the job's claim holder address has a full backlog (another user flooding it, or listening there?); this claim gets a holder of its own")
	}
}

// ownHolder starts a holder of this claim alone.
func (l *Link) ownHolder(c *Claim) (*Handover, error) {
	conn, err := startHolder(c.Files, l.job, l.argv0, -1, l.timeout, false)
	if err != nil {
		return nil, err
	}
	return &Handover{conn: conn}, nil
}

// reach connects to the holder at the link's address; where none
// listens, it binds the address and starts the holder there with files
// (a claim, or none yet), and says so. EADDRINUSE: another call has
// bound it and is starting the holder.
func (l *Link) reach(files []*os.File) (conn int, started bool, err error) {
	conn, err = connectTo(l.addr, l.timeout)
	if !errors.Is(err, errNoHolder) {
		return conn, false, err
	}
	listener, err := listenAt(l.addr)
	if err != nil {
		return -1, false, err
	}
	conn, err = startHolder(files, l.job, l.argv0, listener, l.timeout, false)
	return conn, true, err
}

// errBacklogFull: the listener at the job's holder address has as many
// connections waiting as it allows (holderBacklog, for a holder).
var errBacklogFull = errors.New("the job's claim holder address has a full backlog")

// foreignError: another user's process listens at the job's holder
// address. Nothing is sent to it.
type foreignError struct{ uid int }

func (e *foreignError) Error() string {
	return fmt.Sprintf("the job's claim holder address is uid %d's", e.uid)
}

// connectTo connects to the holder listening at addr, if it is this
// user's. timeout bounds each later wait on the connection.
//
// The connect(2) itself does not wait: on a unix socket it completes at
// once, or, where the listener's backlog is full, fails with EAGAIN
// rather than wait (up to the send timeout) for room. A job's calls never
// fill a holder's backlog; another user's flood, or a squatter at the
// address, does, and the call then starts a holder of its own at once.
func connectTo(addr string, timeout time.Duration) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	err = retryEINTR(func() error { return unix.Connect(fd, &unix.SockaddrUnix{Name: addr}) })
	if err != nil {
		unix.Close(fd)
		switch {
		case errors.Is(err, unix.ECONNREFUSED):
			return -1, errNoHolder
		case errors.Is(err, unix.EAGAIN):
			return -1, errBacklogFull
		}
		return -1, err
	}
	// The peer's credentials are those of whoever called listen(2), known
	// before it accepts.
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	if int(cred.Uid) != os.Geteuid() {
		unix.Close(fd)
		return -1, &foreignError{uid: int(cred.Uid)}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return -1, err
	}
	setTimeouts(fd, timeout)
	return fd, nil
}

func setTimeouts(fd int, timeout time.Duration) {
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
}

// offer passes the claim's descriptors to the holder on conn, and waits
// for its acknowledgement; it closes conn unless the holder took the
// claim. errNoHolder: the holder ended (or dropped the connection)
// without taking it.
func offer(conn int, c *Claim, job Job) (*Handover, error) {
	err := sendClaim(conn, c, job)
	var ack [1]byte
	n := 0
	if err == nil {
		err = retryEINTR(func() (err error) { n, err = unix.Read(conn, ack[:]); return err })
	}
	if err == nil && n == 1 && ack[0] == ackByte {
		return &Handover{conn: conn}, nil
	}
	unix.Close(conn)
	if (err == nil && n == 0) || errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
		return nil, errNoHolder
	}
	return nil, fmt.Errorf("the job's claim holder did not take the claim (%v)", err)
}

// sendClaim sends the request with the claim's descriptors.
func sendClaim(conn int, c *Claim, job Job) error {
	fds := make([]int, len(c.Files))
	for i, f := range c.Files {
		fds[i] = int(f.Fd())
	}
	return retryEINTR(func() error {
		return unix.Sendmsg(conn, holderRequest(job), unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
	})
}

// listenAt binds and listens at addr; EADDRINUSE means another process
// did first.
func listenAt(addr string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: addr}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, holderBacklog); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// startHolder starts a holder for the job with files (a claim's, or
// none: the caller offers its claim later on the connection), serving
// listener (or, if it is -1, only this caller): a re-exec of this
// program (see spawn), holding the claim files and a pidfd of the job.
// The kernel tells the holder when the job ends, however it ends; the
// holder then exits and the kernel drops the locks. Killing the holder
// ends the claims it holds too.
//
// It returns the connection to the holder, on which the holder waits for
// the commit (or, without files, for the claim). The holder has the files
// once it returns: exec succeeded, and descriptors pass across fork and
// exec. timeout bounds each later wait on the connection.
//
// apart starts the holder through a relay process that ends at once, so
// that the holder is not a child of this process: exec's caller becomes
// CMD, and a CMD that waits for all its children (until wait(2) finds
// none) would wait for the holder, which waits for CMD's end. The
// orphaned holder is reaped by whoever adopts it (init, or a subreaper),
// as free's are once free has ended, which it does at once.
func startHolder(files []*os.File, job Job, argv0 string, listener int, timeout time.Duration, apart bool) (int, error) {
	var l *os.File
	if listener >= 0 {
		l = os.NewFile(uintptr(listener), "holder-listener")
		defer l.Close()
	}
	pidfd, err := job.openPidfd()
	if err != nil {
		return -1, err
	}
	if pidfd != nil {
		defer pidfd.Close()
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socketpair: %w", err)
	}
	theirs := os.NewFile(uintptr(pair[1]), "holder-starter")
	defer theirs.Close()
	serves := "0"
	if l != nil {
		serves = "1"
	}
	args := []string{HolderArg, strconv.Itoa(job.PID), strconv.FormatUint(job.Start, 10), strconv.Itoa(len(files)), serves}
	if apart {
		args = append(args, holderApart)
	}
	cmd, err := spawn(argv0, args, append([]*os.File{pidfd, l, theirs}, files...))
	switch {
	case err != nil:
	case !apart:
		cmd.Process.Release()
	default:
		if err = cmd.Wait(); err != nil {
			err = fmt.Errorf("starting the claim's holder: %w", err)
		}
	}
	if err != nil {
		unix.Close(pair[0])
		return -1, err
	}
	setTimeouts(pair[0], timeout)
	return pair[0], nil
}

// spawn starts this program, named argv0 (in ps), with args and the
// descriptors extra (numbered from 3 on), in a session of its own, in /,
// with no environment and no standard streams (a `$(slurm-mig free)`
// waits for every writer of its pipe to close it).
func spawn(argv0 string, args []string, extra []*os.File) (*exec.Cmd, error) {
	// The program's path names the holder in ps and top (a re-exec of
	// /proc/self/exe would be "exe" there); /proc/self/exe still serves
	// when the binary was replaced (an upgrade) since it started.
	self, err := os.Executable()
	if err != nil || strings.HasSuffix(self, " (deleted)") {
		self = "/proc/self/exe"
	}
	cmd := &exec.Cmd{
		Path:        self,
		Args:        append([]string{argv0}, args...),
		Env:         []string{},
		Dir:         "/",
		ExtraFiles:  extra,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	return cmd, cmd.Start()
}

// holderApart, as HolderArg's last argument, makes the process a relay
// that starts the holder with the other arguments and its descriptors,
// and ends (see startHolder).
const holderApart = "apart"

// Hold is the holder's whole life: args are HolderArg's arguments (job
// pid, job start time, number of the starter's claim files (0: it offers
// them on its connection, as other callers do), 1 if it listens for
// more, and holderApart for a relay). It holds claims until the job ends,
// and returns the exit code.
func Hold(args []string) int {
	apart := len(args) == 5 && args[4] == holderApart
	if apart {
		args = args[:4]
	}
	if len(args) != 4 {
		return 2
	}
	pid, err1 := strconv.Atoi(args[0])
	start, err2 := strconv.ParseUint(args[1], 10, 64)
	n, err3 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || n > maxMigDevices || (args[3] != "0" && args[3] != "1") {
		return 2
	}
	var files []int // nil: the starter's claim is still to come
	for i := range n {
		files = append(files, holderFirstLock+i)
		if !isRegular(files[i]) {
			return 2 // not started by Handoff
		}
	}
	if !isSocket(holderStarter) {
		return 2
	}
	listener := -1
	if args[3] == "1" {
		if !isSocket(holderListener) {
			return 2
		}
		listener = holderListener
	}
	pidfd := -1
	if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(holderPidfd)); err == nil && target == "anon_inode:[pidfd]" {
		pidfd = holderPidfd
	}
	if apart {
		return relay(args, append([]int{pidfd, listener, holderStarter}, files...))
	}
	closeStrays(holderFirstLock + n - 1)
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	h := &holder{job: Job{PID: pid, Start: start}, uid: os.Geteuid(), conns: map[int]*holderConn{}}
	h.add(holderStarter, files)
	return h.run(pidfd, listener)
}

// relay starts the holder with args and the descriptors fds (-1: none)
// in the places they have here, and returns at once: the holder's parent
// is then whoever adopts orphans, which reaps it.
func relay(args []string, fds []int) int {
	extra := make([]*os.File, len(fds))
	for i, fd := range fds {
		if fd >= 0 {
			extra[i] = os.NewFile(uintptr(fd), "holder-"+strconv.Itoa(fd))
		}
	}
	if _, err := spawn(os.Args[0], append([]string{HolderArg}, args...), extra); err != nil {
		return 2
	}
	return 0
}

// holder is the state of a holder process: the connections of claims
// not yet committed. Committed claims' descriptors are simply kept open.
type holder struct {
	job   Job
	uid   int
	conns map[int]*holderConn
	kept  int // claims committed

	// Other users' connections, refused (see refuse): the time by which
	// those so far are paid for at refusedCost each, and until when the
	// holder does not listen, having refused too many.
	refusedPaid time.Time
	deafUntil   time.Time
}

type holderConn struct {
	files []int // nil until the caller's request came
}

// maxPending bounds the connections a holder serves at once.
const maxPending = 1024

// holderBacklog bounds the connections waiting for a holder to accept
// them. A job's burst of calls fits in it many times over; a call that
// finds it full starts a holder of its own (connectTo).
const holderBacklog = 256

// Anyone may connect to a holder's address; a holder closes other users'
// connections unheard, but each still costs it an accept(2). It refuses
// refusedBurst of them at once, and refusedCost is the time it allows each
// in the long run: beyond that it stops listening for a while, so that a
// flood costs it about 1000 accept(2)s a second (some 0.5% of a CPU). The
// job's calls meanwhile wait in the backlog, behind at most holderBacklog
// refusals, which take three pauses of 128 ms (far less than ackTimeout),
// or, finding it full, start holders of their own.
const (
	refusedCost  = time.Millisecond
	refusedBurst = holderBacklog
)

// holderIdle is how long a job's holder that holds no claim and has no
// caller waits for one before it ends: its starter was refused or gave
// its claim back. A job's calls come within milliseconds in a burst, and
// a holder that keeps a claim stays anyway.
const holderIdle = 2 * time.Second

// idle: the holder holds nothing and serves no caller.
func (h *holder) idle() bool { return h.kept == 0 && len(h.conns) == 0 }

// refuse counts another user's connection, closed at now: once the
// refusals are more than refusedBurst ahead of what refusedCost each
// allows, the holder is deaf until half of that burst is paid for.
func (h *holder) refuse(now time.Time) {
	if h.refusedPaid.Before(now) {
		h.refusedPaid = now
	}
	h.refusedPaid = h.refusedPaid.Add(refusedCost)
	if h.refusedPaid.Sub(now) > refusedBurst*refusedCost {
		h.deafUntil = h.refusedPaid.Add(-refusedBurst / 2 * refusedCost)
	}
}

func (h *holder) add(conn int, files []int) {
	unix.SetNonblock(conn, true)
	h.conns[conn] = &holderConn{files: files}
}

// run serves the connections until the job ends, or until it has been
// idle for holderIdle: one thread, one poll.
//
// An idle holder ends by exiting, which closes its listener: the address
// is free again at once, and the kernel resets any connection still in
// the backlog, which its caller sees as errNoHolder, while it still has
// its claim. So a call that comes just as the holder ends loses nothing:
// it starts the job's next holder.
func (h *holder) run(pidfd, listener int) int {
	if listener >= 0 {
		unix.SetNonblock(listener, true)
	}
	var fds []unix.PollFd
	var idleSince time.Time // zero while not idle
	for {
		timeout := -1
		if pidfd < 0 {
			timeout = int(pollInterval / time.Millisecond)
		}
		switch {
		case !h.idle():
			idleSince = time.Time{}
		case listener < 0:
			return 0 // a holder of one claim whose caller gave it back
		case idleSince.IsZero():
			idleSince = time.Now()
			fallthrough
		default:
			left := holderIdle - time.Since(idleSince)
			if left <= 0 {
				h.accept(listener) // the last callers, come meanwhile
				if h.idle() {
					return 0
				}
				idleSince = time.Time{}
				continue
			}
			timeout = shorter(timeout, left)
		}
		deaf := time.Until(h.deafUntil)
		if listener >= 0 && deaf > 0 {
			timeout = shorter(timeout, deaf)
		}
		fds = fds[:0]
		if pidfd >= 0 {
			fds = append(fds, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN})
		}
		if listener >= 0 && len(h.conns) < maxPending && deaf <= 0 {
			fds = append(fds, unix.PollFd{Fd: int32(listener), Events: unix.POLLIN})
		}
		for conn := range h.conns {
			fds = append(fds, unix.PollFd{Fd: int32(conn), Events: unix.POLLIN})
		}
		_, err := unix.Poll(fds, timeout)
		if err != nil && err != unix.EINTR {
			pidfd = -1 // never expected; watch the job the slow way instead
			time.Sleep(pollInterval / 10)
		}
		if pidfd < 0 && !h.job.Alive() {
			return 0
		}
		for _, p := range fds {
			switch {
			case p.Revents == 0:
			case int(p.Fd) == pidfd:
				return 0 // the job has ended
			case int(p.Fd) == listener:
				h.accept(listener)
			default:
				h.serve(int(p.Fd))
			}
		}
	}
}

// shorter is a poll(2) timeout in milliseconds (-1: none) shortened to d
// at most, rounded up.
func shorter(timeout int, d time.Duration) int {
	if ms := int(d/time.Millisecond) + 1; timeout < 0 || ms < timeout {
		return ms
	}
	return timeout
}

// accept takes the waiting connections of this user's processes; others'
// are closed unheard, as many as refuse allows.
func (h *holder) accept(listener int) {
	for len(h.conns) < maxPending && !time.Now().Before(h.deafUntil) {
		conn, _, err := unix.Accept4(listener, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			if err != unix.EAGAIN && err != unix.EINTR && err != unix.ECONNABORTED {
				time.Sleep(10 * time.Millisecond) // out of descriptors: do not spin
			}
			return
		}
		if cred, err := unix.GetsockoptUcred(conn, unix.SOL_SOCKET, unix.SO_PEERCRED); err != nil || int(cred.Uid) != h.uid {
			unix.Close(conn)
			h.refuse(time.Now())
			continue
		}
		h.add(conn, nil)
	}
}

// serve reads what a connection has to say: a request with the claim's
// descriptors (answered by ack), then the commit. Anything else, or its
// end before the commit, drops the connection and its claim.
func (h *holder) serve(conn int) {
	c := h.conns[conn]
	if c.files == nil {
		files, err := h.receive(conn)
		if err == unix.EAGAIN || err == unix.EINTR {
			return
		}
		if err != nil {
			h.drop(conn)
			return
		}
		c.files = files
		// A caller that has gone may have committed first: the next read
		// tells (the commit stays readable after its end).
		unix.Write(conn, []byte{ackByte})
		return
	}
	var b [1]byte
	n, err := unix.Read(conn, b[:])
	if err == unix.EAGAIN || err == unix.EINTR {
		return
	}
	if n == 1 && b[0] == commitByte {
		delete(h.conns, conn) // the claim's files stay open until the job ends
		unix.Close(conn)
		h.kept++
		return
	}
	h.drop(conn)
}

// drop closes a connection and any claim files that came with it.
func (h *holder) drop(conn int) {
	closeAll(h.conns[conn].files)
	delete(h.conns, conn)
	unix.Close(conn)
}

// receive reads a caller's request: this holder's job, and descriptors
// of regular files only.
func (h *holder) receive(conn int) ([]int, error) {
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*maxMigDevices))
	n, oobn, flags, _, err := unix.Recvmsg(conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	var files []int
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err == nil {
			files = append(files, fds...)
		}
	}
	ok := err == nil && flags&unix.MSG_CTRUNC == 0 && string(buf[:n]) == string(holderRequest(h.job)) && len(files) > 0
	for _, fd := range files {
		ok = ok && isRegular(fd)
	}
	if !ok {
		closeAll(files)
		return nil, errors.New("not a claim of this holder's job")
	}
	return files, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func isRegular(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

func isSocket(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK
}

// retryEINTR repeats a system call that a signal interrupted.
func retryEINTR(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}

// closeStrays closes every descriptor above last (the holder's own) that
// the holder inherited from the process that started it, and so from the
// job script: NVML's device files, which would keep a GPU open, and
// whatever the script opened, such as a command substitution's pipe it
// duplicated (`x=$( exec 9>&1; slurm-mig free )`), which the shell reads
// until every process that has it closes it: until the job's end, which
// is the shell's own.
//
// What the holder inherited is exactly what lacks close-on-exec: Go opens
// every descriptor with it, and the runtime keeps some of its own open for
// good (its cgroup's CPU limit, read again now and then), which must stay.
// The holder starts nothing, so close-on-exec itself closes nothing here.
func closeStrays(last int) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return // no /proc: FindJob and Self need it, so no holder gets here
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= last {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
}
