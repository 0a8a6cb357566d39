// Package atomicfile replaces config files so that a reader, or a crash,
// never sees anything but the old or the new content: write a temporary
// file in the same directory, fsync it, rename it over the target, fsync
// the directory. Writers of one file serialize on a lock file beside it,
// which exists only while a writer holds it.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Options tune Write.
type Options struct {
	// Backup keeps the replaced content as <target>.bak.
	Backup bool
	// LockTimeout bounds the wait for another writer; 0 means 60 s.
	LockTimeout time.Duration
}

// Result says what Write did.
type Result struct {
	Path    string // the file written: the target with symlinks resolved
	Changed bool   // false when the file already held the content
	Backup  string // the backup written, if any
}

// newFileMode is the mode of a file that did not exist before.
const newFileMode = 0o644

// Write makes path hold data. A file that already holds data is not
// touched (its mtime stays). Otherwise the new content replaces it
// atomically, keeping its mode and owner; a symlink is followed and its
// target replaced. On any error the old file is left as it was.
func Write(path string, data []byte, opts Options) (Result, error) {
	target, err := resolve(path)
	if err != nil {
		return Result{}, err
	}
	res := Result{Path: target}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}

	unlock, err := lock(filepath.Join(dir, "."+base+".lock"), opts.LockTimeout)
	if err != nil {
		return res, fmt.Errorf("cannot write %s: %w", target, err)
	}
	defer unlock()
	removeStaleTemps(dir, base) // only a killed writer leaves these, and we hold the lock

	old, info, err := readExisting(target)
	if err != nil {
		return res, err
	}
	if info != nil && bytes.Equal(old, data) {
		return res, nil
	}
	if opts.Backup && info != nil {
		res.Backup = target + ".bak"
		if err := replace(res.Backup, old, info); err != nil {
			return Result{Path: target}, fmt.Errorf("keeping a backup of %s: %w", target, err)
		}
	}
	if err := replace(target, data, info); err != nil {
		return Result{Path: target}, err
	}
	res.Changed = true
	return res, nil
}

// resolve follows symlinks to the file to write. A target that does not
// exist yet is written where named; a dangling symlink is refused.
func resolve(path string) (string, error) {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return path, nil
	case err != nil:
		return "", err
	case info.Mode()&fs.ModeSymlink != 0:
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", fmt.Errorf("%s is a symlink that cannot be followed: %w", path, err)
		}
		return resolve(real)
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	return path, nil
}

func readExisting(path string) ([]byte, os.FileInfo, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, info, nil
}

const tempInfix = ".tmp-"

// replace writes data to a temporary file beside path and renames it over
// path. like, when not nil, gives the mode and owner to keep.
func replace(path string, data []byte, like os.FileInfo) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+tempInfix+"*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	mode := os.FileMode(newFileMode)
	if like != nil {
		mode = like.Mode().Perm()
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if like != nil {
		if st, ok := like.Sys().(*syscall.Stat_t); ok {
			if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
				return fmt.Errorf("cannot keep the owner of %s (uid %d, gid %d): %w", path, st.Uid, st.Gid, err)
			}
		}
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot replace %s: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// lock takes an exclusive flock on the lock file path, waiting up to
// timeout, and returns what releases it.
//
// The holder removes the lock file before it lets go, so that no
// .FILE.lock stays beside the config (in /etc/slurm, config management
// would see it as drift, and a backup would carry it). Removing a lock
// file is safe only because a lock counts while the path still names the
// file locked: a writer that opened the file before the holder removed it
// gets its flock on a file that is gone, sees that, and starts again with
// a new one. So at any time at most one writer holds a flock on the file
// the path names. A writer killed while holding it leaves the file, which
// the next writer locks, uses and removes.
//
// The lock is a file of its own, not the config itself (rename replaces
// the config's inode under a waiting writer) nor its directory (flock on
// a directory fails on NFS, where /etc/slurm sometimes lives).
func lock(path string, timeout time.Duration) (func(), error) {
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		// O_NOFOLLOW: a symlink planted as the lock file must not make us
		// create or open a file elsewhere.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
				return nil, fmt.Errorf("%s is not writable: %w", filepath.Dir(path), unwrapPath(err))
			}
			return nil, fmt.Errorf("taking the lock %s: %w", path, unwrapPath(err))
		}
		if err := flockBy(f, deadline); err != nil {
			f.Close()
			if errors.Is(err, errLockTimeout) {
				return nil, fmt.Errorf("another writer has held %s for %s; giving up", path, timeout)
			}
			return nil, fmt.Errorf("taking the lock %s: %w", path, err)
		}
		if stillNamed(f, path) {
			return func() {
				os.Remove(path) // while holding it: see above
				f.Close()       // closing drops the flock
			}, nil
		}
		f.Close() // the holder removed it meanwhile: take the new one
	}
}

var errLockTimeout = errors.New("lock wait timed out")

// flockBy takes an exclusive flock on f, polling until deadline.
func flockBy(f *os.File, deadline time.Time) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return errLockTimeout
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stillNamed reports whether path names the open file f.
func stillNamed(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Lstat(path)
	return err == nil && os.SameFile(held, named)
}

// removeStaleTemps deletes temporary files a killed writer left behind.
func removeStaleTemps(dir, base string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := "." + base + tempInfix
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// unwrapPath drops the *PathError wrapper whose path the caller names anyway.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
