package holder

import (
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

// A holder's descriptors as start gives them: the job's pidfd (closed
// where the kernel has none), the listener (closed for a holder of one
// claim), the connection to its starter, then the starter's claim files.
const (
	fdPidfd     = 3
	fdListener  = 4
	fdStarter   = 5
	fdFirstFile = 6
)

// apartArg, as the last of Arg's arguments, makes the process a relay that
// starts the holder with the other arguments and its descriptors, and ends.
const apartArg = "apart"

// StartApart starts a holder of files alone for job, through a relay so
// that it is no child of this process (exec's CMD may wait for all its
// children). The holder has the files once it returns.
func StartApart(files []*os.File, job Job, argv0 string) (*Handover, error) {
	conn, err := start(files, job, argv0, -1, ackTimeout, true)
	if err != nil {
		return nil, err
	}
	return &Handover{conn: conn}, nil
}

// start starts a holder for job with files (or none, offered later on the
// connection it returns), serving listener, or this caller alone where it is
// -1; the holder has the files once it returns. apart: see StartApart.
func start(files []*os.File, job Job, argv0 string, listener int, timeout time.Duration, apart bool) (int, error) {
	var l *os.File
	if listener >= 0 {
		l = os.NewFile(uintptr(listener), "holder-listener")
		defer l.Close()
	}
	pidfd, err := job.Pidfd()
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
	pid, jobStart := job.ID()
	args := []string{Arg, strconv.Itoa(pid), strconv.FormatUint(jobStart, 10), strconv.Itoa(len(files)), serves}
	if apart {
		args = append(args, apartArg)
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

// spawn starts this program as argv0 with args and the descriptors extra
// (from 3 on), in a session of its own, in /, with no environment and no
// standard streams, which a `$(slurm-mig free)` would wait for.
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

// Hold is a holder's whole life, from Arg's arguments (job pid, job start,
// number of the starter's files, 1 if it listens, and apartArg for a
// relay); newJob makes the job from its pid and start. It returns the exit code.
func Hold(args []string, newJob func(pid int, start uint64) Job) int {
	apart := len(args) == 5 && args[4] == apartArg
	if apart {
		args = args[:4]
	}
	if len(args) != 4 {
		return 2
	}
	pid, err1 := strconv.Atoi(args[0])
	jobStart, err2 := strconv.ParseUint(args[1], 10, 64)
	n, err3 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || n > MaxFiles || (args[3] != "0" && args[3] != "1") {
		return 2
	}
	var files []int // nil: the starter's claim is still to come
	for i := range n {
		files = append(files, fdFirstFile+i)
		if !isRegular(files[i]) {
			return 2 // not started by start
		}
	}
	if !isSocket(fdStarter) {
		return 2
	}
	listener := -1
	if args[3] == "1" {
		if !isSocket(fdListener) {
			return 2
		}
		listener = fdListener
	}
	pidfd := -1
	if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fdPidfd)); err == nil && target == "anon_inode:[pidfd]" {
		pidfd = fdPidfd
	}
	if apart {
		return relay(args, append([]int{pidfd, listener, fdStarter}, files...))
	}
	closeStrays(fdFirstFile + n - 1)
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	h := &holder{job: newJob(pid, jobStart), uid: os.Geteuid(), conns: map[int]*holderConn{}}
	h.add(fdStarter, files)
	return h.run(pidfd, listener)
}

// relay starts the holder with args and the descriptors fds (-1: none) in
// the places they have here, and returns at once: the holder's parent is
// then whoever adopts orphans, which reaps it.
func relay(args []string, fds []int) int {
	extra := make([]*os.File, len(fds))
	for i, fd := range fds {
		if fd >= 0 {
			extra[i] = os.NewFile(uintptr(fd), "holder-"+strconv.Itoa(fd))
		}
	}
	if _, err := spawn(os.Args[0], append([]string{Arg}, args...), extra); err != nil {
		return 2
	}
	return 0
}

// closeStrays closes the descriptors above last that the holder inherited
// (those without close-on-exec), such as NVML's device files or a `$(...)`
// pipe the job script duplicated; the Go runtime's own stay.
func closeStrays(last int) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return // no /proc: the caller's job lookup needs it, so no holder gets here
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

func isRegular(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

func isSocket(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK
}
