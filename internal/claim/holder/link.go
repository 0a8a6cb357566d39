package holder

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/fileio"
)

// ackTimeout bounds the wait for a job's holder to take a claim; one that
// does not answer in time (stopped, overloaded) is passed by for a new one.
const ackTimeout = 5 * time.Second

// Link is a call's way to its job's holder, made before the call chooses
// devices, so that the job's first call starts the holder while every call
// of a burst does its own work.
type Link struct {
	job      Job
	argv0    string
	addr     string
	timeout  time.Duration        // for the holder's acknowledgement
	conn     int                  // to the holder; -1: none, Handoff finds one
	started  bool                 // conn is to the holder this call started
	warn     func(string)         // told when another user keeps the call from the address
	userName func(uid int) string // names that user in warn's line
}

// Dial reaches the job's holder, or starts it (without a claim) where there
// is none. It cannot fail: Handoff tries again. warn is told, in one line
// naming the user by userName, when another user holds or floods the address.
func Dial(job Job, argv0 string, warn func(string), userName func(uid int) string) *Link {
	l := dial(job, argv0, address(job), ackTimeout)
	l.warn, l.userName = warn, userName
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

// Handoff gives files (a claim's) to the job's holder, or, where it refuses,
// is silent or is another user's, to a holder of this claim alone. The
// caller keeps its descriptors until Handoff returns: the claim never lapses.
func (l *Link) Handoff(files []*os.File) (*Handover, error) {
	conn := l.conn
	l.conn = -1
	if conn >= 0 && l.started {
		// The holder this call started owns the connection from the start
		// (it cannot end idle with it open), and the files from sendmsg on.
		if err := send(conn, files, l.job); err == nil {
			return &Handover{conn: conn}, nil
		}
		unix.Close(conn) // the holder has ended: try again as any call would
		conn = -1
	}
	for try := 0; try < 3; try++ {
		if conn < 0 {
			var started bool
			var err error
			conn, started, err = l.reach(files)
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
				return l.ownHolder(files) // the address is not ours, or its backlog is full
			}
		}
		h, err := offer(conn, files, l.job)
		conn = -1
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, errNoHolder) {
			break // refused, or not answering
		}
	}
	return l.ownHolder(files)
}

// HandOut gives files to the job's holder (Handoff), then calls tell, which
// hands the devices out: the holder keeps the files only once tell succeeds.
func (l *Link) HandOut(files []*os.File, tell func() error) error {
	h, err := l.Handoff(files)
	if err != nil {
		return fmt.Errorf("handing the claim to its holder: %w", err)
	}
	if err := tell(); err != nil {
		h.Abort()
		return err
	}
	return h.Commit()
}

// warnForeign tells warn when err is another user's process at the job's
// holder address, or a full backlog there: an admin may want to know.
func (l *Link) warnForeign(err error) {
	var foreign *foreignError
	switch {
	case l.warn == nil:
	case errors.As(err, &foreign):
		l.warn(fmt.Sprintf("%s (uid %d) has taken this job's claim holder address; this claim gets a holder of its own", l.userName(foreign.uid), foreign.uid))
	case errors.Is(err, errBacklogFull):
		l.warn("the job's claim holder address has a full backlog (another user flooding it, or listening there?); this claim gets a holder of its own")
	}
}

// ownHolder starts a holder of this claim alone.
func (l *Link) ownHolder(files []*os.File) (*Handover, error) {
	conn, err := start(files, l.job, l.argv0, -1, l.timeout, false)
	if err != nil {
		return nil, err
	}
	return &Handover{conn: conn}, nil
}

// reach connects to the holder at the link's address; where none listens,
// it binds the address and starts the holder there with files (a claim, or
// none yet), and says so. EADDRINUSE: another call is starting the holder.
func (l *Link) reach(files []*os.File) (conn int, started bool, err error) {
	conn, err = connectTo(l.addr, l.timeout)
	if !errors.Is(err, errNoHolder) {
		return conn, false, err
	}
	listener, err := listenAt(l.addr)
	if err != nil {
		return -1, false, err
	}
	conn, err = start(files, l.job, l.argv0, listener, l.timeout, false)
	return conn, true, err
}

// connectTo connects to the holder at addr if it is this user's; timeout
// bounds each later wait on the connection. It never waits to connect: a
// full backlog is errBacklogFull at once.
func connectTo(addr string, timeout time.Duration) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	err = fileio.RetryEINTR(func() error { return unix.Connect(fd, &unix.SockaddrUnix{Name: addr}) })
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

// offer sends files to the holder on conn and waits for its ack; it closes
// conn unless the holder took them. errNoHolder: the holder ended without.
func offer(conn int, files []*os.File, job Job) (*Handover, error) {
	err := send(conn, files, job)
	var ack [1]byte
	n := 0
	if err == nil {
		err = fileio.RetryEINTR(func() (err error) { n, err = unix.Read(conn, ack[:]); return err })
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

// send sends the request with the files' descriptors.
func send(conn int, files []*os.File, job Job) error {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	return fileio.RetryEINTR(func() error {
		return unix.Sendmsg(conn, request(job), unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
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
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
