// Package jobmap keeps the GPU-to-job map that an exporter reads
// (dcgm-exporter's --hpc-job-mapping-dir, Princeton jobstats' /run/gpustat):
// a directory with a file per device and a line per job that has it.
// Slurm's Prolog adds a job's line to its devices' files; its Epilog takes
// it out. The devices are found exactly as the TaskProlog (jobenv) finds
// them, not as shell Prologs do: they read CUDA_VISIBLE_DEVICES or
// SLURM_JOB_GPUS as device numbers, which name no device on a MIG node.
package jobmap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/atomicfile"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/safepath"
)

// Options say what Run does and where it reads from.
type Options struct {
	Dir    string         // the job map directory
	Format Format         // which exporter reads it
	Remove bool           // the Epilog: take the job's lines out
	Map    jobenv.Options // where the index map and the device state are read, as env reads them
	// LockTimeout bounds the wait for other Prologs and Epilogs of the
	// node; 0 is atomicfile's 60 s.
	LockTimeout time.Duration
	// JobGPUs asks the controller for the job's GPU indices on a node
	// (slurmhost.JobGPUs); nil never asks. It is asked only by the
	// Prolog of a node with GPUs of several types (see moreGPUs).
	JobGPUs func(id, node string) ([]int, error)
}

// lockName is the lock every jobmap of a directory holds while it reads and
// rewrites its files, so that Prologs of jobs sharing a device lose none of
// each other's lines. Readers skip it: it starts with a dot, as no UUID does.
const lockName = ".slurm-mig-jobmap.lock"

// Run adds the job's line to its devices' files (Prolog) or takes it out
// (opts.Remove, Epilog). All is checked before any write, so a refusal
// changes nothing; warnings are trouble short of one (a silent controller).
func Run(opts Options, getenv func(string) (string, bool)) (warnings []error, err error) {
	job, err := ReadJob(getenv)
	if err != nil || job.Indices == nil {
		return nil, err
	}
	n, err := jobenv.Load(opts.Map, job.Node, getenv)
	if err != nil {
		return warnings, err
	}
	devs, err := n.Pick(jobGPUs, job.Indices)
	if err != nil {
		return warnings, err
	}
	more, warnings, err := opts.moreGPUs(job, n)
	if err != nil {
		return warnings, err
	}
	devs = append(devs, more...)
	names, err := opts.Format.fileNames(n.State, devs)
	if err != nil {
		return warnings, err
	}
	if opts.Remove {
		// An Epilog has nothing to take out of a directory that is not
		// there, and makes none.
		p, err := safepath.Walk(opts.Dir, safepath.Options{UID: -1, TrustDirs: true})
		if errors.Is(err, unix.ENOENT) {
			return warnings, nil
		}
		if err == nil {
			missing := p.Stat == nil
			p.Close()
			if missing {
				return warnings, nil
			}
		}
	}
	dir, err := openDir(opts.Dir)
	if err != nil {
		return warnings, err
	}
	defer dir.Close()
	// Files to refuse (a symlink, a FIFO, the other format's) are refused
	// before the lock is taken, as its file changes the directory's mtime;
	// under the lock every file is read and checked again.
	if err := checkNames(dir, opts.Format); err != nil {
		return warnings, err
	}
	for _, name := range names {
		data, _, err := readEntry(dir, name)
		if err != nil {
			return warnings, err
		}
		if err := opts.Format.checkFile(filepath.Join(opts.Dir, name), data); err != nil {
			return warnings, err
		}
	}
	unlock, err := atomicfile.Lock(dir, lockName, opts.LockTimeout)
	if err != nil {
		return warnings, fmt.Errorf("cannot update %s: %w", opts.Dir, err)
	}
	defer unlock()
	if err := checkNames(dir, opts.Format); err != nil {
		return warnings, err
	}
	if opts.Remove && n.Types > 1 {
		// The Epilog of a job of two types has one type's indices, as the
		// Prolog had; the files that hold the job's line are the rest.
		if names, err = withJobFiles(dir, opts.Format, names, job.ID); err != nil {
			return warnings, err
		}
	}
	return warnings, update(dir, names, job, opts.Format, opts.Remove)
}

// moreGPUs are the job's devices SLURM_JOB_GPUS leaves out: Slurm gives a
// Prolog one GPU type's indices only, so on a node of several types it asks
// the controller, whose silence is a warning, not an error.
func (o Options) moreGPUs(job Job, n *jobenv.Node) (more []*jobenv.StateDevice, warnings []error, err error) {
	if o.Remove || n.Types < 2 || o.JobGPUs == nil {
		return nil, nil, nil
	}
	all, err := o.JobGPUs(job.ID, job.Node)
	if err != nil {
		return nil, []error{fmt.Errorf("job %s: %v; mapping the %s=%s it has alone (a job of several GPU types may have more)", job.ID, err, jobGPUs, joinInts(job.Indices))}, nil
	}
	var extra []int
	for _, i := range all {
		if !slices.Contains(job.Indices, i) {
			extra = append(extra, i)
		}
	}
	for _, i := range job.Indices {
		if !slices.Contains(all, i) {
			warnings = append(warnings, fmt.Errorf("job %s: %s=%s, but the controller gives it GPU indices %s on %s; mapping both", job.ID, jobGPUs, joinInts(job.Indices), joinInts(all), job.Node))
			break
		}
	}
	more, err = n.Pick("scontrol show job -d "+job.ID+" (IDX:)", extra)
	return more, warnings, err
}

// withJobFiles adds to names the files of the format in dir that hold a
// line of the job.
func withJobFiles(dir *os.File, f Format, names []string, id string) ([]string, error) {
	if _, err := dir.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("job map directory %s: %w", dir.Name(), err)
	}
	all, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("job map directory %s: %w", dir.Name(), err)
	}
	sort.Strings(all)
	for _, name := range all {
		if !f.ownName(name) || slices.Contains(names, name) {
			continue
		}
		data, _, err := readEntry(dir, name)
		if err != nil {
			return nil, err
		}
		if _, own := split(data, id); len(own) > 0 {
			names = append(names, name)
		}
	}
	return names, nil
}

// checkNames refuses a directory that holds a file of the other format.
func checkNames(dir *os.File, f Format) error {
	if _, err := dir.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("job map directory %s: %w", dir.Name(), err)
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("job map directory %s: %w", dir.Name(), err)
	}
	for _, name := range names {
		if why := f.foreignName(name); why != "" {
			return advice.Hinted(fmt.Errorf("job map directory %s holds %s (%s); this job map is of the %s format: not mixing the two", dir.Name(), name, why, f),
				" (give each exporter its own directory, and empty this one to switch it)")
		}
	}
	return nil
}

// change is one file's new content; nil data removes the file.
type change struct {
	name string
	data []byte
	like os.FileInfo // the file replaced, whose mode and owner stay
}

// update reads the files of the job's devices under the directory's
// lock, works out every change, and only then writes them.
func update(dir *os.File, names []string, job Job, f Format, remove bool) error {
	var changes []change
	for _, name := range names {
		old, info, err := readEntry(dir, name)
		if err != nil {
			return err
		}
		if err := f.checkFile(filepath.Join(dir.Name(), name), old); err != nil {
			return err
		}
		var data []byte
		var changed bool
		if remove {
			data, changed = withoutJob(old, job.ID)
		} else {
			data, changed = withJob(old, job.ID, f.line(job))
		}
		if changed {
			changes = append(changes, change{name: name, data: data, like: info})
		}
	}
	for _, c := range changes {
		path := filepath.Join(dir.Name(), c.name)
		if c.data == nil {
			if err := unix.Unlinkat(int(dir.Fd()), c.name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("cannot remove %s: %w", path, err)
			}
			continue
		}
		if err := atomicfile.ReplaceAt(dir, c.name, c.data, c.like); err != nil {
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
	}
	if len(changes) > 0 {
		if err := dir.Sync(); err != nil { // makes the removals durable too
			return fmt.Errorf("syncing %s: %w", dir.Name(), err)
		}
	}
	return nil
}

// openDir opens the job map directory for reading and syncing, making it
// and its parents (mode 0755) where missing. It must be root's or this
// user's and writable by nobody else, since exporters trust what it holds.
func openDir(path string) (*os.File, error) {
	if path == "" {
		return nil, errors.New("no job map directory given")
	}
	dir, err := safepath.Dir(path, safepath.Options{UID: -1, TrustDirs: true, Mkdir: true, Private: true})
	var open *safepath.OpenToOthersError
	if errors.As(err, &open) {
		err = advice.Hinted(err, "; chmod 0755 it")
	}
	if err != nil {
		return nil, fmt.Errorf("job map directory %s: %w", path, err)
	}
	return dir, nil
}

// removeIt is the hint of a map file that is not one: nothing else is opened.
const removeIt = " (remove it)"

// maxMapBytes bounds a map file: a line per job of the device, a few
// dozen bytes each.
const maxMapBytes = 1 << 20

// readEntry reads the map file name in dir: content and stat, nil if none.
// It opens only a regular file, and refuses a symlink wherever it leads:
// following it would have root read or write a file outside the directory.
func readEntry(dir *os.File, name string) ([]byte, os.FileInfo, error) {
	path := filepath.Join(dir.Name(), name)
	var st unix.Stat_t
	err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return nil, nil, advice.Hinted(fmt.Errorf("%s is a symlink; not following it out of the job map directory", path), removeIt)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, nil, advice.Hinted(fmt.Errorf("%s is not a regular file", path), removeIt)
	}
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() { // replaced since the look above
		return nil, nil, advice.Hinted(fmt.Errorf("%s is not a regular file", path), removeIt)
	}
	data, err := fileio.ReadOpen(f, maxMapBytes, "a job map file")
	if err != nil {
		return nil, nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, info, nil
}

// withJob returns old less the job's lines, its one line appended, and
// whether that changed it (nil old: no file); other lines keep their order.
// Where that line is the job's only one already, old stays: no second line.
func withJob(old []byte, id, line string) ([]byte, bool) {
	lines, own := split(old, id)
	if len(own) == 1 && own[0] == line {
		return old, false
	}
	out := make([]byte, 0, len(old)+len(line)+1)
	for _, l := range lines {
		out = append(out, l...)
		out = append(out, '\n')
	}
	out = append(out, line...)
	return append(out, '\n'), true
}

// withoutJob returns the file's content without the job's lines, and
// whether that differs from old. nil content, with true, removes the
// file: no job is left on the device.
func withoutJob(old []byte, id string) ([]byte, bool) {
	lines, own := split(old, id)
	if len(own) == 0 {
		return old, false
	}
	var out []byte
	jobs := false
	for _, l := range lines {
		out = append(out, l...)
		out = append(out, '\n')
		jobs = jobs || strings.TrimSpace(l) != ""
	}
	if !jobs {
		return nil, true
	}
	return out, true
}

// split cuts a map file into the job's own lines and all others. A line
// is the job's when its first field is the job id ("JOBID" or "JOBID UID",
// as the readers take them).
func split(data []byte, id string) (others, own []string) {
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" && len(data) <= 1 {
		return nil, nil
	}
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == id {
			own = append(own, l)
		} else {
			others = append(others, l)
		}
	}
	return others, own
}

// jobGPUs is the variable the Prolog and Epilog have the job's GPU
// indices in: global GRES indices, as SLURM_STEP_GPUS has a step's.
const jobGPUs = "SLURM_JOB_GPUS"

// Job is what the Prolog and Epilog know of the job: its id and user, and
// its GPUs' indices on this node (nil: none).
type Job struct {
	ID, UID string
	Node    string // SLURMD_NODENAME
	Indices []int
}

// ReadJob reads the job from the environment slurmd gives the Prolog and
// Epilog. A job without GPUs on this node has SLURM_JOB_GPUS unset or empty
// (nil Indices); anything else unreadable is an error.
func ReadJob(lookup func(string) (string, bool)) (Job, error) {
	getenv := func(k string) string { v, _ := lookup(k); return v }
	list := getenv(jobGPUs)
	indices, err := jobenv.ParseIndices(list)
	if err != nil {
		return Job{}, fmt.Errorf("%s=%s: %v", jobGPUs, list, err)
	}
	if len(indices) == 0 {
		return Job{}, nil
	}
	job := Job{ID: getenv("SLURM_JOB_ID"), UID: getenv("SLURM_JOB_UID"), Node: getenv("SLURMD_NODENAME"), Indices: indices}
	for _, v := range []struct{ name, value string }{{"SLURM_JOB_ID", job.ID}, {"SLURM_JOB_UID", job.UID}} {
		if v.value == "" {
			return Job{}, fmt.Errorf("%s is set but %s is not: not a Slurm Prolog or Epilog?", jobGPUs, v.name)
		}
		if !isNumber(v.value) {
			return Job{}, fmt.Errorf("%s=%s is not a number", v.name, v.value)
		}
	}
	if job.Node == "" {
		return Job{}, fmt.Errorf("%s is set but SLURMD_NODENAME is not: not a Slurm Prolog or Epilog?", jobGPUs)
	}
	return job, nil
}

// isNumber reports whether s is a decimal number as Slurm prints job ids
// and uids: digits only, no sign, no leading zero, at most 20 of them.
func isNumber(s string) bool {
	n, err := strconv.ParseUint(s, 10, 64)
	return err == nil && strconv.FormatUint(n, 10) == s
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
