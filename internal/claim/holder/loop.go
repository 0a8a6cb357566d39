package holder

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// pollInterval is how often a holder without a pidfd (kernels before 5.3)
// asks whether its job still runs.
const pollInterval = time.Second

// maxPending bounds the connections a holder serves at once.
const maxPending = 1024

// backlog bounds the connections waiting for a holder to accept them; a
// call that finds it full starts a holder of its own (connectTo).
const backlog = 256

// A holder closes other users' connections unheard: refusedBurst at once,
// then one per refusedCost in the long run; beyond that it stops listening
// for a while, so that a flood costs it little and the job's calls still get through.
const (
	refusedCost  = time.Millisecond
	refusedBurst = backlog
)

// idleFor is how long a holder that holds no claim and has no caller waits
// for one before it ends.
const idleFor = 2 * time.Second

// holder is the state of a holder process: the connections of claims not
// yet committed. Committed claims' descriptors are simply kept open.
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

// run serves the connections until the job ends, or until it has been idle
// for idleFor: one thread, one poll. Its exit frees the address, and resets
// calls still in the backlog, which then start the job's next holder.
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
			left := idleFor - time.Since(idleSince)
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
	oob := make([]byte, unix.CmsgSpace(4*MaxFiles))
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
	ok := err == nil && flags&unix.MSG_CTRUNC == 0 && string(buf[:n]) == string(request(h.job)) && len(files) > 0
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
