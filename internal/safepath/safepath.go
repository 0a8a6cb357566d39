// Package safepath walks a path where other users may have a hand in it
// (gen -o's directories, the claims and job map directories), so that
// root's writes go nowhere another user chose. It walks one name at a time
// from open directories and follows a symlink only when root or the caller
// owns it, wherever it is. With TrustDirs every directory on the way must
// also be root's or the caller's, and sticky where others may write it, so
// that a directory made on the way is the one then opened. Unlike os.Root,
// the owner of a link, not where it leads, decides whether it is followed.
package safepath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinks bounds the symlinks one walk follows, as the kernel's
// MAXSYMLINKS does, so that a loop of links ends in an error.
const maxLinks = 40

// DirMode is the mode of a directory Mkdir makes on the way, set by its
// descriptor whatever the umask.
const DirMode = 0o755

// Options say what a walk trusts and does.
type Options struct {
	// UID is the caller, whose links and directories are trusted as
	// root's are; -1 means the effective uid.
	UID int
	// TrustDirs requires every directory on the way (the one opened
	// included, for Dir) to be root's or the caller's, and sticky where
	// others may write it.
	TrustDirs bool
	// Mkdir makes directories that are missing on the way, mode DirMode.
	// It needs TrustDirs: only in a directory nobody else may change is
	// the directory opened after mkdir the one made.
	Mkdir bool
	// Private refuses a directory Dir opens that group or others may
	// write, sticky or not (*OpenToOthersError): they could plant in it.
	Private bool
}

// OpenToOthersError is a Private directory that others than its owner may
// write; the caller adds the mode it wants (advice.Hinted).
type OpenToOthersError struct {
	Path string
	Mode uint32
}

func (e *OpenToOthersError) Error() string {
	return fmt.Sprintf("%s is writable by others than its owner (mode %04o): they could plant files or links in it", e.Path, e.Mode)
}

// private applies Options.Private to the directory f that Dir opened.
func (o Options) private(f *os.File, err error) (*os.File, error) {
	if err != nil || !o.Private {
		return f, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if mode := st.Mode & 0o7777; mode&0o022 != 0 {
		f.Close()
		return nil, &OpenToOthersError{Path: f.Name(), Mode: mode}
	}
	return f, nil
}

func (o Options) uid() int {
	if o.UID < 0 {
		return os.Geteuid()
	}
	return o.UID
}

// Place is where a walk ended: the last name's directory, open O_PATH, and
// the name, with its stat (nil if nothing has it yet). A trusted symlink
// there has been followed (Linked); anything else is the caller's to judge.
type Place struct {
	Dir    *os.File
	Name   string
	Linked bool
	Stat   *unix.Stat_t
}

// Path is the place's path, as walked.
func (p *Place) Path() string { return filepath.Join(p.Dir.Name(), p.Name) }

// Close closes the directory.
func (p *Place) Close() error { return p.Dir.Close() }

// Walk resolves path to the directory of its last name, and that name.
// A path that ends in "/" or names "/" has no last name: it is an error.
func Walk(path string, o Options) (*Place, error) {
	if strings.HasSuffix(path, "/") || len(components(path)) == 0 {
		return nil, fmt.Errorf("%s names a directory", path)
	}
	uid := o.uid()
	if o.Mkdir && !o.TrustDirs {
		return nil, errors.New("safepath: Mkdir without TrustDirs")
	}
	start := "."
	if filepath.IsAbs(path) {
		start = "/"
	}
	dir, err := openStart(start, o, uid)
	if err != nil {
		return nil, err
	}
	todo := components(path)
	linked, links := false, 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		last := len(todo) == 0
		at := filepath.Join(dir.Name(), name)
		var st unix.Stat_t
		err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT) && last && linked:
			dir.Close()
			return nil, fmt.Errorf("%s is a dangling symlink (%s does not exist)", path, at)
		case errors.Is(err, unix.ENOENT) && last:
			return &Place{Dir: dir, Name: name}, nil
		case errors.Is(err, unix.ENOENT) && o.Mkdir:
			next, err := mkdirAt(dir, name, at)
			dir.Close()
			if err != nil {
				return nil, err
			}
			dir = next
			continue
		case err != nil:
			dir.Close()
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := readLink(dir, name, at, &st, uid)
			if err == nil && links == maxLinks {
				err = fmt.Errorf("%s: more than %d symlinks", path, maxLinks)
			}
			if err == nil && filepath.IsAbs(target) {
				dir.Close()
				dir, err = openStart("/", o, uid)
			}
			if err != nil {
				dir.Close()
				return nil, err
			}
			links++
			linked = linked || last
			todo = append(components(target), todo...)
			continue
		}
		if last {
			return &Place{Dir: dir, Name: name, Linked: linked, Stat: &st}, nil
		}
		next, err := openDirAt(dir, name, at, o, uid)
		dir.Close()
		if err != nil {
			return nil, err
		}
		dir = next
	}
	// The last name was a symlink to a directory ("/", "."): nothing is
	// left to name.
	dir.Close()
	return nil, fmt.Errorf("%s names a directory", path)
}

// Dir opens the directory path by the walk, O_RDONLY for reading and
// syncing, making it if missing and Mkdir says so. With TrustDirs it must be
// root's or the caller's, sticky if others may write; callers judge the rest.
func Dir(path string, o Options) (*os.File, error) {
	uid := o.uid()
	if clean := filepath.Clean(path); clean == "/" || clean == "." {
		f, err := openStart(clean, o, uid)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return o.private(reopen(f, clean))
	}
	p, err := Walk(strings.TrimRight(path, "/"), o)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	at := p.Path()
	if p.Stat == nil {
		if !o.Mkdir {
			return nil, fmt.Errorf("%s: %w", at, unix.ENOENT)
		}
		d, err := mkdirAt(p.Dir, p.Name, at)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return o.private(reopen(d, at))
	}
	d, err := openDirAt(p.Dir, p.Name, at, o, uid)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return o.private(reopen(d, at))
}

// reopen opens the directory d (O_PATH) again for reading, named shown.
func reopen(d *os.File, shown string) (*os.File, error) {
	fd, err := unix.Openat(int(d.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	return os.NewFile(uintptr(fd), shown), nil
}

// openStart opens "/" or "." to walk from.
func openStart(start string, o Options, uid int) (*os.File, error) {
	fd, err := unix.Open(start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", start, err)
	}
	f := os.NewFile(uintptr(fd), start)
	if o.TrustDirs {
		if err := trusted(f, uid); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// openDirAt opens the directory name in dir (O_PATH, O_NOFOLLOW) and,
// with TrustDirs, checks it.
func openDirAt(dir *os.File, name, at string, o Options, uid int) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is not a directory", at)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	f := os.NewFile(uintptr(fd), at)
	if o.TrustDirs {
		if err := trusted(f, uid); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// mkdirAt makes and opens the directory name in dir, which only root and
// the caller may change (TrustDirs), so the one opened is theirs. It gives
// one it made DirMode by its descriptor: mkdir's mode went through the umask.
func mkdirAt(dir *os.File, name, at string) (*os.File, error) {
	made := unix.Mkdirat(int(dir.Fd()), name, 0o700)
	if made != nil && !errors.Is(made, unix.EEXIST) {
		return nil, fmt.Errorf("cannot make %s: %w", at, made)
	}
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	f := os.NewFile(uintptr(fd), at)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if made == nil && int(st.Uid) == os.Geteuid() {
		if err := unix.Fchmod(fd, DirMode); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", at, err)
		}
	}
	if err := trusted(f, os.Geteuid()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// trusted checks the directory f: only root or uid may change what is in
// it. It belongs to one of them, and is sticky if others may write it
// (then they may change only their own entries).
func trusted(f *os.File, uid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	mode := st.Mode & 0o7777
	switch {
	case st.Uid != 0 && int(st.Uid) != uid:
		return fmt.Errorf("%s belongs to uid %d, neither root nor this user: that user could put a file or directory of their own in its place; refusing it", f.Name(), st.Uid)
	case mode&0o022 != 0 && mode&unix.S_ISVTX == 0:
		return fmt.Errorf("%s is writable by others but not sticky (mode %04o): anyone could put a file or directory of their own in its place; refusing it", f.Name(), mode)
	}
	return nil
}

// Trusted reports, as an error, whether the open directory f may be
// changed by others than root and uid (see Options.TrustDirs).
func Trusted(f *os.File, uid int) error { return trusted(f, uid) }

// readLink returns where the symlink name in dir points, if root or uid
// owns it (st is its lstat). Its owner is checked again on an O_PATH
// descriptor, so that a link swapped meanwhile is not read in its place.
func readLink(dir *os.File, name, at string, st *unix.Stat_t, uid int) (string, error) {
	if st.Uid != 0 && int(st.Uid) != uid {
		return "", fmt.Errorf("%s is a symlink of uid %d, neither root's nor this user's; not following it", at, st.Uid)
	}
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	if now.Mode&unix.S_IFMT != unix.S_IFLNK || now.Uid != 0 && int(now.Uid) != uid {
		return "", fmt.Errorf("%s was replaced while it was read; not following it", at)
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", fmt.Errorf("reading the symlink %s: %w", at, err)
	}
	return string(buf[:n]), nil
}

// components splits a path into the names to walk, dropping empty ones
// and ".".
func components(path string) []string {
	var names []string
	for _, name := range strings.Split(path, "/") {
		if name != "" && name != "." {
			names = append(names, name)
		}
	}
	return names
}
