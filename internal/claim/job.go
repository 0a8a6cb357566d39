package claim

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
)

// Job is the process whose end ends a claim, named by its pid and its
// start time (in clock ticks after boot), which together never name
// another process.
type Job struct {
	PID   int
	Start uint64
}

// maxHops bounds the walk up from slurm-mig's parent past transient
// subshells; shells nest them one or two deep.
const maxHops = 8

// FindJob names the job of `free`: pid when given (the caller's own unless
// root), else slurm-mig's parent or, past forked subshells that may end with
// slurm-mig, the shell that runs until the job script ends.
func FindJob(pid int) (Job, error) {
	if pid != 0 {
		return ownJob(pid)
	}
	p := os.Getppid()
	if p <= 1 {
		return Job{}, advice.Wrap(errors.New("slurm-mig's parent process has ended, so nothing would end the claim"), advice.ParentEnded)
	}
	for hops := 0; hops < maxHops; hops++ {
		parent, ok := forkedSubshellOf(p)
		if !ok {
			break
		}
		p = parent
	}
	start, err := startTime(p)
	if err != nil {
		return Job{}, fmt.Errorf("reading the job's process %d: %w", p, err)
	}
	return Job{PID: p, Start: start}, nil
}

// ownJob checks the process given as the job's: the caller's (any, for
// root), so that a user cannot tie a claim to one that lives for ever.
func ownJob(pid int) (Job, error) {
	if pid <= 1 {
		return Job{}, advice.Wrap(errors.New("not a job's process"), advice.JobProcess, pid)
	}
	start, err := startTime(pid)
	if err != nil {
		return Job{}, advice.Wrap(errors.New("no such process"), advice.JobProcess, pid)
	}
	if uid := os.Getuid(); uid != 0 {
		owner, err := processUID(pid)
		if err != nil {
			return Job{}, advice.Wrap(err, advice.JobProcess, pid)
		}
		if owner != uid {
			return Job{}, advice.Wrap(fmt.Errorf("belongs to uid %d: a claim can follow only your own processes", owner), advice.JobProcessOwner, pid)
		}
	}
	return Job{PID: pid, Start: start}, nil
}

// forkedSubshellOf reports whether process p is a forked copy of its
// parent (a subshell), and the parent if so. Anything unreadable means no.
func forkedSubshellOf(p int) (int, bool) {
	parent, err := parentOf(p)
	if err != nil || parent <= 1 {
		return 0, false
	}
	exe, err1 := os.Readlink(procPath(p, "exe"))
	pexe, err2 := os.Readlink(procPath(parent, "exe"))
	if err1 != nil || err2 != nil || exe != pexe {
		return 0, false
	}
	cmd, err1 := hostfs.ReadFileNoStat(procPath(p, "cmdline"))
	pcmd, err2 := hostfs.ReadFileNoStat(procPath(parent, "cmdline"))
	if err1 != nil || err2 != nil || !bytes.Equal(cmd, pcmd) {
		return 0, false
	}
	return parent, true
}

func procPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// statFields are the fields of /proc/PID/stat after the command name,
// which may itself hold spaces and parentheses: fields[0] is the state.
func statFields(pid int) ([]string, error) {
	data, err := hostfs.ReadFileNoStat(procPath(pid, "stat"))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, fmt.Errorf("%s: malformed", procPath(pid, "stat"))
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("%s: malformed", procPath(pid, "stat"))
	}
	return f, nil
}

func parentOf(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(f[1])
}

// errExited: the process is a zombie, ended but not yet reaped.
var errExited = errors.New("has exited")

// startTime is field 22 of /proc/PID/stat. A zombie (exited, not yet
// reaped) counts as ended.
func startTime(pid int) (uint64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d %w", pid, errExited)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// processUID is the real uid of a process.
func processUID(pid int) (int, error) {
	data, err := hostfs.ReadFileNoStat(procPath(pid, "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, errors.New("no Uid in " + procPath(pid, "status"))
}

// Alive reports whether the job may still be running. One /proc cannot tell
// about (no descriptor left, say) counts as running, so that a polling holder
// keeps its claims rather than give away devices the job may still use.
func (j Job) Alive() bool {
	alive, err := j.alive()
	return alive || err != nil
}

// alive is Alive where a guess will not do: an error where /proc cannot
// tell. Where /proc hides others' processes (hidepid), any process with
// the job's pid counts as the job, since its start cannot be read.
func (j Job) alive() (bool, error) {
	start, err := startTime(j.PID)
	switch {
	case err == nil:
		return start == j.Start, nil
	case errors.Is(err, errExited):
		return false, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, unix.ESRCH):
		switch err := unix.Kill(j.PID, 0); err {
		case nil, unix.EPERM:
			return true, nil
		case unix.ESRCH:
			return false, nil
		default:
			return false, fmt.Errorf("whether process %d still runs: %w", j.PID, err)
		}
	}
	return false, fmt.Errorf("whether process %d still runs: %w", j.PID, err)
}

// ID is the job's pid and start time, which name it to its holder.
func (j Job) ID() (pid int, start uint64) { return j.PID, j.Start }

// Pidfd returns a pidfd for the job, checked to name it and not a reuse of
// its pid; or nil where kernels before 5.3 (ENOSYS) or seccomp (EPERM) give
// none, and the holder polls instead.
func (j Job) Pidfd() (*os.File, error) {
	fd, err := unix.PidfdOpen(j.PID, 0)
	switch {
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
		return nil, nil
	case errors.Is(err, unix.ESRCH):
		return nil, fmt.Errorf("the job's process %d has ended", j.PID)
	case err != nil:
		return nil, fmt.Errorf("watching the job's process %d: %w", j.PID, err)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	switch alive, err := j.alive(); {
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("watching the job's process %d: %w", j.PID, err)
	case !alive:
		f.Close()
		return nil, fmt.Errorf("the job's process %d has ended", j.PID)
	}
	return f, nil
}

// Self is this process as a job: exec's claim lasts as long as the
// command it becomes.
func Self() (Job, error) {
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return Job{}, fmt.Errorf("reading this process's start time: %w", err)
	}
	return Job{PID: pid, Start: start}, nil
}
