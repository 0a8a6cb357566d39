package claim

import (
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

// Descriptors of the holder: the job's pidfd (closed where the kernel has
// none), then the claim files.
const (
	holderPidfd     = 3
	holderFirstLock = 4
)

// pollInterval is how often a holder on a kernel without pidfd (before
// 5.3) looks whether its job still runs.
const pollInterval = time.Second

// Handoff gives the claim to a holder process, so that it outlives
// slurm-mig and ends with the job: a re-exec of this program (argv0 keeps
// its name in ps) in a session of its own, with no standard streams (a
// `$(slurm-mig free)` waits for every writer of its pipe to close it), in
// /, holding the claim files and a pidfd of the job. The kernel tells the
// holder when the job ends, however it ends; the holder then exits and the
// kernel drops the locks. Killing the holder ends the claim too.
//
// Once Handoff returns the holder has the files: exec succeeded, and
// descriptors pass across fork and exec.
func Handoff(c *Claim, job Job, argv0 string) (*os.Process, error) {
	pidfd, err := job.openPidfd()
	if err != nil {
		return nil, err
	}
	files := append([]*os.File{pidfd}, c.Files...)
	// The program's path names the holder in ps and top (a re-exec of
	// /proc/self/exe would be "exe" there); /proc/self/exe still serves
	// when the binary was replaced (an upgrade) since it started.
	self, err := os.Executable()
	if err != nil || strings.HasSuffix(self, " (deleted)") {
		self = "/proc/self/exe"
	}
	cmd := &exec.Cmd{
		Path:        self,
		Args:        []string{argv0, HolderArg, strconv.Itoa(job.PID), strconv.FormatUint(job.Start, 10), strconv.Itoa(len(c.Files))},
		Env:         []string{},
		Dir:         "/",
		ExtraFiles:  files,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	if pidfd != nil {
		pidfd.Close()
	}
	if err != nil {
		return nil, err
	}
	return cmd.Process, nil
}

// Hold is the holder's whole life: args are HolderArg's arguments (job
// pid, job start time, number of claim files). It waits for the job to
// end and returns the exit code.
func Hold(args []string) int {
	if len(args) != 3 {
		return 2
	}
	pid, err1 := strconv.Atoi(args[0])
	start, err2 := strconv.ParseUint(args[1], 10, 64)
	n, err3 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || err3 != nil || n < 1 {
		return 2
	}
	for fd := holderFirstLock; fd < holderFirstLock+n; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return 2 // not started by Handoff
		}
	}
	closeStrays(holderFirstLock + n - 1)
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	job := Job{PID: pid, Start: start}
	if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(holderPidfd)); err == nil && target == "anon_inode:[pidfd]" {
		fds := []unix.PollFd{{Fd: holderPidfd, Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if err == nil && n > 0 {
				return 0 // the job has ended
			}
			if err != unix.EINTR {
				break // never expected; watch the job the slow way instead
			}
		}
	}
	for job.Alive() {
		time.Sleep(pollInterval)
	}
	return 0
}

// unixClearCloexec lets f survive exec(2).
func unixClearCloexec(f *os.File) (int, error) { return unix.FcntlInt(f.Fd(), unix.F_SETFD, 0) }

// closeStrays closes what the holder inherited beyond its own descriptors
// from libraries of the process that started it (NVML's device files,
// opened without close-on-exec), so that it holds no GPU open.
func closeStrays(last int) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= last {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "/dev/nvidia") {
			unix.Close(fd)
		}
	}
}
