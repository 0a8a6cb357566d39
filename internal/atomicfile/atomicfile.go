// Package atomicfile replaces config files so that a reader, or a crash,
// never sees anything but the old or the new content: a synced temporary
// file renamed over the target, under a lock file that exists only while
// a writer holds it. Root runs this on paths other users may share, so
// every step works on descriptors: a symlink is followed only when root or
// this user owns it, whatever protected_symlinks says, and content, mode
// and owner come from one descriptor, so that neither a planted link nor a
// swap between check and use can redirect or mix a write.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/safepath"
)

// Options tune Write.
type Options struct {
	// Backup keeps the replaced content as <target>.bak.
	Backup bool
	// LockTimeout bounds the wait for another writer; 0 means 60 s.
	LockTimeout time.Duration
}

// Result says what Write did. Every command that writes a file reports it,
// as text (Changes) or as JSON, so that all say the same of a write.
type Result struct {
	Path    string `json:"path"`             // the file written: the target, or where its symlink led
	Changed bool   `json:"changed"`          // false when the file already held the content
	Backup  string `json:"backup,omitempty"` // the backup written, if any
}

// Changes says, for people, whether the file changed.
func (r Result) Changes() string {
	if r.Changed {
		return "changed"
	}
	return "unchanged"
}

// newFileMode is the mode of a file that did not exist before.
const newFileMode = 0o644

// Write atomically makes path hold data, keeping its mode and owner; a file
// already holding data is left untouched, and a symlink followed only when
// root or this user owns it. An error names the file and leaves it as it was.
func Write(path string, data []byte, opts Options) (Result, error) {
	res := Result{Path: path}
	if err := update(&res, path, data, opts); err != nil {
		return Result{Path: res.Path}, fmt.Errorf("cannot write %s: %w", res.Path, err)
	}
	return res, nil
}

// update does Write's work, filling in res as it learns; Write names the
// file in its errors.
func update(res *Result, path string, data []byte, opts Options) error {
	// A file that another user owns or may change is never left as it
	// is, even with the content: root's write must end up root's.
	same := func(old *current) bool { return bytes.Equal(old.data, data) && ownedSafely(old.info) }
	p, err := locate(path)
	if err != nil {
		return err
	}
	defer p.dir.Close()
	if p.linked {
		res.Path = p.path()
	}
	// Compare before locking or creating anything: a file that already
	// holds the content needs nothing of its directory, which may be a
	// read-only NFS /etc/slurm.
	old, err := p.read()
	if err != nil || old != nil && same(old) {
		return err
	}
	dir, err := p.openDir()
	if err != nil {
		return err
	}
	defer dir.Close()
	unlock, err := lock(dir, "."+p.name+".lock", opts.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	removeStaleTemps(dir, p.name) // only a killed writer leaves these, and we hold the lock

	// Read again under the lock: another writer may have replaced the
	// file since, and the backup must hold what this write replaces.
	if old, err = p.read(); err != nil || old != nil && same(old) {
		return err
	}
	var like os.FileInfo
	if old != nil {
		like = old.info
		if opts.Backup {
			if err := replace(dir, p.name+".bak", old.data, old.info); err != nil {
				return fmt.Errorf("keeping a backup: %w", err)
			}
			res.Backup = res.Path + ".bak"
		}
	}
	if err := replace(dir, p.name, data, like); err != nil {
		return err
	}
	res.Changed = true
	return nil
}

// place is where the file to write lives: its directory, held open so
// that no later change to the path's components can move the write
// elsewhere, and its name there.
type place struct {
	dir    *os.File // O_PATH, named by its path for messages
	name   string
	linked bool // the path named a symlink, followed to here
}

func (p *place) path() string { return filepath.Join(p.dir.Name(), p.name) }

// locate resolves path by safepath's walk, following a symlink only when
// root or this user owns it: another user's link in a shared directory
// could point anywhere. The file may not exist yet; its directory must.
func locate(path string) (*place, error) {
	p, err := safepath.Walk(path, safepath.Options{UID: -1})
	if err != nil {
		return nil, err
	}
	if p.Stat != nil && p.Stat.Mode&unix.S_IFMT != unix.S_IFREG {
		p.Close()
		if p.Stat.Mode&unix.S_IFMT == unix.S_IFLNK {
			return nil, fmt.Errorf("%s is a symlink of uid %d, neither root's nor this user's; not following it", p.Path(), p.Stat.Uid)
		}
		return nil, fmt.Errorf("%s is not a regular file", p.Path())
	}
	return &place{dir: p.Dir, name: p.Name, linked: p.Linked}, nil
}

// openDir opens the file's directory for what writing needs and O_PATH
// does not give: listing it and fsyncing it.
func (p *place) openDir() (*os.File, error) {
	fd, err := unix.Openat(int(p.dir.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.dir.Name(), err)
	}
	return os.NewFile(uintptr(fd), p.dir.Name()), nil
}

// current is the file as one open descriptor showed it: its content, and
// its mode and owner (info), which are therefore that content's.
type current struct {
	data []byte
	info os.FileInfo
}

// read returns the file's content, mode and owner from one descriptor, or
// nil when there is none. It opens without following a symlink (locate has)
// or blocking on a FIFO put in the file's place.
func (p *place) read() (*current, error) {
	fd, err := unix.Openat(int(p.dir.Fd()), p.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("%s was replaced by a symlink; not following it", p.path())
	case err != nil:
		return nil, fmt.Errorf("reading it: %w", err)
	}
	f := os.NewFile(uintptr(fd), p.path())
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p.path())
	}
	data, err := fileio.ReadOpen(f, maxOldBytes, "a file slurm-mig writes")
	if big := (*fileio.TooLargeError)(nil); errors.As(err, &big) {
		return nil, advice.Hinted(err, "; move it away")
	}
	if err != nil {
		return nil, err
	}
	return &current{data: data, info: info}, nil
}

// maxOldBytes bounds the file replaced, read to compare and to back up:
// slurm-mig's files are a few MiB at most, and one planted in its place (a
// shared directory) must not make root read gigabytes.
const maxOldBytes = 256 << 20

// ownedSafely reports whether a file of this stat is one that only its
// writer (root, or the user running slurm-mig) may change: theirs, and
// writable by neither group nor others. Root writes only such files.
func ownedSafely(info os.FileInfo) bool {
	euid := os.Geteuid()
	if euid != 0 {
		return true // a user's own writes: their files, their modes
	}
	st := info.Sys().(*syscall.Stat_t)
	return st.Uid == 0 && info.Mode().Perm()&0o022 == 0
}

const tempInfix = ".tmp-"

// replace renames a synced temporary file of data over name in dir, with
// like's mode and group where given (0644 else). The writer owns it; as root
// it drops group and other write, so no user can change what root wrote.
func replace(dir *os.File, name string, data []byte, like os.FileInfo) (err error) {
	tmp, err := createTemp(dir, name)
	if err != nil {
		return err
	}
	tmpName := filepath.Base(tmp.Name())
	defer func() {
		if err != nil {
			tmp.Close()
			unix.Unlinkat(int(dir.Fd()), tmpName, 0)
		}
	}()
	mode := os.FileMode(newFileMode)
	if like != nil {
		mode = like.Mode().Perm()
	}
	root := os.Geteuid() == 0
	if root {
		mode &^= 0o022
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if like != nil {
		// The group is kept where the writer may give it (root may give
		// any); the owner is the writer.
		st := like.Sys().(*syscall.Stat_t)
		if err := tmp.Chown(-1, int(st.Gid)); err != nil && root {
			return fmt.Errorf("cannot keep its group (gid %d): %w", st.Gid, fileio.UnwrapPath(err))
		}
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), fileio.UnwrapPath(err))
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp.Name(), fileio.UnwrapPath(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp.Name(), fileio.UnwrapPath(err))
	}
	if err := unix.Renameat(int(dir.Fd()), tmpName, int(dir.Fd()), name); err != nil {
		return fmt.Errorf("renaming %s over %s: %w", tmp.Name(), name, err)
	}
	if err := dir.Sync(); err != nil { // makes the rename durable
		return fmt.Errorf("syncing directory %s: %w", dir.Name(), fileio.UnwrapPath(err))
	}
	return nil
}

// createTemp creates a new file, mode 0600, beside name in dir. O_EXCL
// and O_NOFOLLOW: nothing planted under the chosen name is opened.
func createTemp(dir *os.File, name string) (*os.File, error) {
	for try := 0; ; try++ {
		tmp := "." + name + tempInfix + strconv.FormatUint(rand.Uint64(), 36)
		fd, err := unix.Openat(int(dir.Fd()), tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) && try < 100 {
			continue
		}
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
			return nil, fmt.Errorf("%s is not writable: %w", dir.Name(), err)
		}
		if err != nil {
			return nil, fmt.Errorf("creating a temporary file in %s: %w", dir.Name(), err)
		}
		return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), tmp)), nil
	}
}

// lock flocks the lock file name in dir, waiting up to timeout (0: 60s),
// and returns its release, which removes the file while holding it. A
// writer that finds name no longer the file it locked starts again.
func lock(dir *os.File, name string, timeout time.Duration) (func(), error) {
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		// O_NOFOLLOW: a symlink planted as the lock file must not make us
		// create or open a file elsewhere.
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		switch {
		case errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS):
			return nil, fmt.Errorf("%s is not writable: %w", dir.Name(), err)
		case errors.Is(err, unix.ELOOP):
			return nil, fmt.Errorf("%s is a symlink; not following it", filepath.Join(dir.Name(), name))
		case err != nil:
			return nil, fmt.Errorf("cannot lock it against other writers: %w", err)
		}
		f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
		// Another user's lock file could be flocked and kept for ever, so
		// root removes it and makes its own; a user cannot, and refuses at
		// once rather than wait.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot lock it against other writers: %w", err)
		}
		if euid := os.Geteuid(); st.Uid != 0 && int(st.Uid) != euid {
			err := advice.Hinted(fmt.Errorf("its lock file %s belongs to uid %d, not to a writer", f.Name(), st.Uid), "; remove it")
			if euid == 0 && stillNamed(dir, f, name) && time.Now().Before(deadline) {
				err = unix.Unlinkat(int(dir.Fd()), name, 0)
			}
			f.Close()
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := flockBy(f, deadline); err != nil {
			f.Close()
			if errors.Is(err, errLockTimeout) {
				return nil, fmt.Errorf("another writer has been writing it for %s; giving up", timeout)
			}
			return nil, fmt.Errorf("cannot lock it against other writers: %w", err)
		}
		if stillNamed(dir, f, name) {
			return func() {
				unix.Unlinkat(int(dir.Fd()), name, 0) // while holding it: see above
				f.Close()                             // closing drops the flock
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

// stillNamed reports whether name in dir names the open file f.
func stillNamed(dir, f *os.File, name string) bool {
	var held, named unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil {
		return false
	}
	err := unix.Fstatat(int(dir.Fd()), name, &named, unix.AT_SYMLINK_NOFOLLOW)
	return err == nil && held.Dev == named.Dev && held.Ino == named.Ino
}

// removeStaleTemps deletes temporary files a killed writer left behind.
func removeStaleTemps(dir *os.File, base string) {
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return
	}
	prefix := "." + base + tempInfix
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			unix.Unlinkat(int(dir.Fd()), e.Name(), 0)
		}
	}
}
