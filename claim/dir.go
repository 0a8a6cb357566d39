// Package claim hands MIG devices to jobs on nodes whose scheduler knows
// only whole GPUs, so that concurrent jobs never get the same device.
//
// A claim is a file in a claims directory that its claimant created and
// holds an flock(2) on. The lock is the claim: the kernel drops it when
// the last process holding the file open ends, however it ends (SIGKILL
// included), so there is no lease and nothing to clean up for a claim to
// end. What the file says (uid, job, time) is only informational; a
// stale or corrupt file, whose lock nobody holds, never counts.
//
// One file per claim, named <device>.<random>, rather than one file per
// device: in a directory all users write (mode 1777) only a file's owner
// may remove it, so a shared per-device file could be removed by the user
// who created it, while another user holds its lock, and then re-created
// and locked again: two jobs on one device. A claimant here only ever
// locks a file it has just created itself, which nobody else can remove.
//
// Choosing idle devices and creating the new claim files happens under an
// flock on the directory itself, held for well under a millisecond, so
// that two claimants never choose the same device. Holding a claim needs
// no directory lock.
package claim

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultDir is where claims live unless --claims says otherwise: under
// /run, so that a reboot forgets them.
const DefaultDir = "/run/slurm-mig/claims"

// maxEntries bounds a scan of the claims directory: a node has a few dozen
// MIG devices, and stale files are removed as they are found.
const maxEntries = 1 << 16

// Dir is an open claims directory.
type Dir struct {
	path string
	f    *os.File // the directory, also the lock that serialises choosing
	uid  int
}

// OpenDir opens (and if missing, creates) the claims directory at path.
// A directory that another user controls, or that anyone may write but is
// not sticky, is refused: its files could be removed or replaced by
// others. So is a path to it through such a directory, or through a
// symlink that another user owns: that user could put a directory of
// their own in its place, or, while it is being made, a symlink to
// somewhere else, whose mode would then be changed. Everything is done on
// descriptors: the directory is made, checked and given its mode through
// the one descriptor the claims are then made in.
func OpenDir(path string) (*Dir, error) {
	uid := os.Geteuid()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("claims directory %s: %w", path, err)
	}
	if abs == "/" {
		return nil, fmt.Errorf("claims directory %s: not a directory of its own; refusing it", path)
	}
	parent, err := walk(filepath.Dir(abs), uid, uid == 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("claims directory %s does not exist and cannot be created (%v): create it as root, mode 1777 (scripts/tmpfiles.d/slurm-mig.conf does that at boot)", path, unix.ENOENT)
	}
	if err != nil {
		return nil, fmt.Errorf("claims directory %s: %w", path, err)
	}
	fd, err := openClaimsDir(parent, filepath.Base(abs), uid)
	unix.Close(parent)
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("claims directory %s: not a directory (a symlink?); refusing it", path)
	case errors.Is(err, errCannotCreate):
		return nil, fmt.Errorf("claims directory %s does not exist and cannot be created (%v): create it as root, mode 1777 (scripts/tmpfiles.d/slurm-mig.conf does that at boot)", path, errors.Unwrap(err))
	case err != nil:
		return nil, fmt.Errorf("claims directory %s: %w", path, err)
	}
	d := &Dir{path: path, f: os.NewFile(uintptr(fd), path), uid: uid}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		d.Close()
		return nil, fmt.Errorf("claims directory %s: %w", path, err)
	}
	mode := st.Mode & 0o7777
	switch {
	case st.Uid != 0 && int(st.Uid) != d.uid:
		d.Close()
		return nil, fmt.Errorf("claims directory %s belongs to uid %d, not root: that user could remove every claim in it; make it root's, mode 1777", path, st.Uid)
	case mode&0o022 != 0 && mode&unix.S_ISVTX == 0:
		d.Close()
		return nil, fmt.Errorf("claims directory %s is writable by others but not sticky (mode %04o): anyone could remove others' claims; chmod 1777 it", path, mode)
	}
	return d, nil
}

// errCannotCreate wraps why a missing claims directory could not be made.
var errCannotCreate = errors.New("cannot create")

// openClaimsDir opens the claims directory name in parent, making it
// where it is missing: mode 0700 at first, then 1777 (whatever the umask)
// by its descriptor, once it is known to be the directory just made and
// not a symlink put in its place.
func openClaimsDir(parent int, name string, uid int) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, 0)
	if !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	made := unix.Mkdirat(parent, name, 0o700)
	if made != nil && !errors.Is(made, unix.EEXIST) { // EEXIST: made by another claimant just now
		return -1, fmt.Errorf("%w: %w", errCannotCreate, made)
	}
	if fd, err = unix.Openat(parent, name, flags, 0); err != nil || made != nil {
		return fd, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	// Only root and this user may change the parent (walk made sure), so
	// the directory of this user here is the one just made.
	if int(st.Uid) == uid {
		if err := unix.Fchmod(fd, 0o777|unix.S_ISVTX); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// maxLinks bounds the symlinks walk follows, as the kernel's 40 does.
const maxLinks = 40

// walk opens the directory dir (absolute) one name at a time from /, with
// O_NOFOLLOW, and returns its descriptor (O_PATH, or O_RDONLY where walk
// made it). Every directory on the way must be trusted (see trusted); a
// symlink is followed only where root or uid owns it, as the kernel's
// protected_symlinks does in sticky directories, here wherever it is.
// With mkdir (for root), missing directories are made, mode 0755.
func walk(dir string, uid int, mkdir bool) (int, error) {
	fd, at := -1, ""
	names := []string{dir}
	for links := 0; len(names) > 0; {
		name := names[0]
		names = names[1:]
		if strings.HasPrefix(name, "/") { // the start, or an absolute symlink: from / again
			if fd >= 0 {
				unix.Close(fd)
			}
			var err error
			if fd, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
				return -1, fmt.Errorf("/: %w", err)
			}
			at = "/"
			if err := trusted(fd, at, uid); err != nil {
				unix.Close(fd)
				return -1, err
			}
			names = append(strings.Split(name, "/"), names...)
			continue
		}
		if name == "" || name == "." {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && mkdir {
			next, err = mkdirAt(fd, name)
		}
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			target, err := link(fd, name, filepath.Join(at, name), uid)
			if err == nil && links == maxLinks {
				err = fmt.Errorf("%s: %w", filepath.Join(at, name), unix.ELOOP)
			}
			if err != nil {
				unix.Close(fd)
				return -1, err
			}
			links++
			if strings.HasPrefix(target, "/") {
				names = append([]string{target}, names...)
			} else {
				names = append(strings.Split(target, "/"), names...)
			}
			continue
		}
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", filepath.Join(at, name), err)
		}
		fd, at = next, filepath.Join(at, name)
		if err := trusted(fd, at, uid); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// trusted checks the directory fd, at path at: only root or uid may
// change what is in it. It belongs to one of them, and is sticky if
// others may write it (then they may change only their own entries).
func trusted(fd int, at string, uid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	mode := st.Mode & 0o7777
	switch {
	case st.Uid != 0 && int(st.Uid) != uid:
		return fmt.Errorf("%s belongs to uid %d, not root: that user could put a claims directory of their own in its place; refusing it", at, st.Uid)
	case mode&0o022 != 0 && mode&unix.S_ISVTX == 0:
		return fmt.Errorf("%s is writable by others but not sticky (mode %04o): anyone could put a claims directory of their own in its place; refusing it", at, mode)
	}
	return nil
}

// link reads the symlink name in dir (at path at), if root or uid owns
// it; else, or if it is not a symlink, it says why walk cannot go on.
func link(dir int, name, at string, uid int) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFLNK:
		return "", fmt.Errorf("%s: %w", at, unix.ENOTDIR)
	case st.Uid != 0 && int(st.Uid) != uid:
		return "", fmt.Errorf("%s is a symlink of uid %d: refusing to follow it", at, st.Uid)
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	return string(buf[:n]), nil
}

// mkdirAt makes the directory name in dir, mode 0755 whatever the umask,
// and opens it (O_RDONLY: fchmod needs more than O_PATH).
func mkdirAt(dir int, name string) (int, error) {
	made := unix.Mkdirat(dir, name, 0o700)
	if made != nil && !errors.Is(made, unix.EEXIST) {
		return -1, made
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil || made != nil {
		return fd, err
	}
	if err := unix.Fchmod(fd, 0o755); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// Close closes the directory (and drops its lock, if held).
func (d *Dir) Close() error { return d.f.Close() }

// lock takes the directory's lock, giving up after timeout: claimants
// hold it for well under a millisecond, so waiting longer means a process
// is stuck (or stopped) holding it.
func (d *Dir) lock(timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- retryEINTR(func() error { return unix.Flock(int(d.f.Fd()), unix.LOCK_EX) }) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("claims directory %s: locking it: %w", d.path, err)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("claims directory %s: another process has held its lock for %s (a stopped slurm-mig?); try again", d.path, timeout)
	}
}

func (d *Dir) unlock() { retryEINTR(func() error { return unix.Flock(int(d.f.Fd()), unix.LOCK_UN) }) }

// fileKey is the part of a claim file's name that names the device: the
// UUID, with anything but letters, digits and '-' (the '/' of old-style
// MIG-GPU-<uuid>/<gi>/<ci> UUIDs) made '_'.
func fileKey(uuid string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
			return r
		}
		return '_'
	}, uuid)
}

// entries lists the directory's claim files by device key.
func (d *Dir) entries() (map[string][]string, error) {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("claims directory %s: %w", d.path, err)
	}
	names, err := d.f.Readdirnames(maxEntries + 1)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("claims directory %s: %w", d.path, err)
	}
	if len(names) > maxEntries {
		return nil, fmt.Errorf("claims directory %s has more than %d entries; remove what is not a claim", d.path, maxEntries)
	}
	byKey := map[string][]string{}
	for _, name := range names {
		if key, _, ok := strings.Cut(name, "."); ok {
			byKey[key] = append(byKey[key], name)
		}
	}
	return byKey, nil
}

// Holder is what is known about a live claim: its file's owner (the
// kernel's word) and what the claimant wrote in it (its word).
type Holder struct {
	UID          int
	JobPID       int    // 0 when the file does not say
	SchedulerJob string // the scheduler's job id, when the claimant had one
	jobStart     uint64
}

// jobGone reports whether the claim's job has ended, so that its holder
// is about to let go (it notices within a moment).
func (h *Holder) jobGone() bool {
	if h.JobPID <= 0 || h.jobStart == 0 {
		return false
	}
	start, err := startTime(h.JobPID)
	return err != nil || start != h.jobStart
}

// probe tests the claim file name: whether its lock is held. Under the
// directory's lock (locked), a file whose lock nobody holds is stale and
// removed when it is ours (or we are root); without it (a claimant may be
// between creating its file and locking it), probe removes nothing, and
// reads whom a held file is. Anything that is not a regular file we can
// open is not a claim.
func (d *Dir) probe(name string, locked bool) (held bool, h Holder) {
	fd, err := unix.Openat(int(d.f.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return false, h // a symlink, a file we may not read, gone: not a claim
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, h
	}
	switch err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err {
	case nil:
		unix.Flock(fd, unix.LOCK_UN)
		if locked && (d.uid == 0 || int(st.Uid) == d.uid) {
			unix.Unlinkat(int(d.f.Fd()), name, 0) // stale; only claimants lock, and they hold the directory's lock
		}
		return false, h
	case unix.EWOULDBLOCK:
		h.UID = int(st.Uid)
		if !locked {
			h.readInfo(fd)
		}
		return true, h
	default:
		return false, h
	}
}

// readInfo reads what the claimant wrote; anything odd is ignored.
func (h *Holder) readInfo(fd int) {
	buf := make([]byte, 1024)
	n, _ := unix.Pread(fd, buf, 0)
	for _, line := range strings.Split(string(buf[:max(n, 0)]), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "job_pid":
			h.JobPID, _ = strconv.Atoi(v)
		case "job_start":
			h.jobStart, _ = strconv.ParseUint(v, 10, 64)
		case "scheduler_job":
			if len(v) <= 64 {
				h.SchedulerJob = v
			}
		}
	}
}

// create makes and locks a new claim file for the device key, named
// with a random suffix: the name of an earlier file (left by anyone)
// is never reused.
func (d *Dir) create(key string, info []byte) (*os.File, error) {
	for tries := 0; ; tries++ {
		var suffix [8]byte
		if _, err := rand.Read(suffix[:]); err != nil {
			return nil, err
		}
		name := key + "." + hex.EncodeToString(suffix[:])
		fd, err := unix.Openat(int(d.f.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if errors.Is(err, unix.EEXIST) && tries < 3 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("claims directory %s: creating a claim: %w", d.path, err)
		}
		f := os.NewFile(uintptr(fd), filepath.Join(d.path, name))
		// 0644 whatever the umask: others open it read-only to test its lock.
		err = unix.Fchmod(fd, 0o644)
		if err == nil {
			err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		}
		if err == nil {
			_, err = f.Write(info)
		}
		if err != nil {
			unix.Unlinkat(int(d.f.Fd()), name, 0)
			f.Close()
			return nil, fmt.Errorf("claims directory %s: creating a claim: %w", d.path, err)
		}
		return f, nil
	}
}
