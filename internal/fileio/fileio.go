// Package fileio holds the few rules that every reader and writer of
// files in slurm-mig shares, so that each exists once: reading a whole
// file within a bound, repeating a system call that a signal interrupted,
// taking the path off an error whose message names the file already, and
// reading many files several at a time (Each).
package fileio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReadFile reads the file at path whole, refusing one over limit bytes in
// words naming what ("a snapshot"). An open error is its *fs.PathError, other
// errors name the file, and a FIFO is read by the pipe rule (see ReadOpen).
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	return ReadFileInto(nil, path, limit, what)
}

// ReadFileInto is ReadFile into buf's memory where it is large enough, for
// a caller done with each file before it reads the next: the bytes returned
// are buf's, or a new buffer's that the caller passes on next time.
func ReadFileInto(buf []byte, path string, limit int64, what string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(buf, f, limit, what, nil)
}

// ReadTrusted is ReadFile of a file that decides what is done for other
// users (the device state of env and jobmap): it must be root's or uid's
// and writable by nobody else (Trusted), as judged on the descriptor read.
func ReadTrusted(path string, limit int64, what string, uid int) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(nil, f, limit, what, func(info fs.FileInfo) error { return Trusted(path, info, uid) })
}

// Trusted says, as an error naming path, whether the file info describes
// may be changed by others than root and uid: it belongs to another user,
// or its group or others may write it.
func Trusted(path string, info fs.FileInfo, uid int) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	switch {
	case st.Uid != 0 && int(st.Uid) != uid:
		return &untrusted{fmt.Sprintf("%s belongs to uid %d, neither root nor this user: not trusting it", path, st.Uid), " (make it root's, mode 0644)"}
	case info.Mode().Perm()&0o022 != 0:
		return &untrusted{fmt.Sprintf("%s is writable by others than its owner (mode %04o): not trusting it", path, info.Mode().Perm()), " (chmod 0644 it)"}
	}
	return nil
}

// untrusted is Trusted's refusal with what would make the file trusted: an
// advice.Hinter, which fileio does not import so as to stay the lowest layer.
type untrusted struct{ msg, hint string }

func (e *untrusted) Error() string { return e.msg }
func (e *untrusted) Hint() string  { return e.hint }

// Open opens path for reading without waiting: a FIFO with no writer
// opens at once (O_NONBLOCK), and ReadOpen waits for it by the pipe rule.
func Open(path string) (*os.File, error) {
	var fd int
	err := RetryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ReadOpen reads the open file f whole within limit bytes, as ReadFile does.
// A pipe or FIFO is read by the pipe rule (PipeIdle, PipeTotal), so that one
// nobody writes cannot hold a reader for ever; a device or socket is refused.
func ReadOpen(f *os.File, limit int64, what string) ([]byte, error) {
	return readOpen(nil, f, limit, what, nil)
}

// ReadStream reads r, named name in errors, to its end with no time limit
// (it is the caller's own standard input), refusing more than limit bytes
// as ReadFile refuses a larger file: never a part taken for the whole.
func ReadStream(r io.Reader, name string, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, UnwrapPath(err))
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(name, limit, what)
	}
	return data, nil
}

// ReadStdin reads standard input, named name in errors, within limit bytes
// as ReadRaw reads a path: tooLarge(size) makes the refusal (-1: a stream
// past limit). stream says it was not a regular file (a pipe, a terminal).
func ReadStdin(name string, limit int64, tooLarge func(size int64) error) (data []byte, stream bool, err error) {
	info, err := os.Stdin.Stat()
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", name, err)
	}
	stream = !info.Mode().IsRegular()
	if !stream && info.Size() > limit {
		return nil, false, tooLarge(info.Size())
	}
	data, err = ReadStream(os.Stdin, name, limit, "")
	if errors.As(err, new(*TooLargeError)) {
		return nil, stream, tooLarge(-1)
	}
	return data, stream, err
}

// SameFile says whether paths a and b name one file, through any link;
// false when either cannot be read.
func SameFile(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

// PipeIdle and PipeTotal are the pipe rule's bounds (see ReadOpen).
const (
	PipeIdle  = 10 * time.Second
	PipeTotal = 60 * time.Second
)

func readOpen(buf []byte, f *os.File, limit int64, what string, check func(fs.FileInfo) error) ([]byte, error) {
	path := f.Name()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, UnwrapPath(err))
	}
	if check != nil {
		if err := check(info); err != nil {
			return nil, err
		}
	}
	switch {
	case info.Mode().IsRegular():
		if info.Size() > limit {
			return nil, tooLarge(path, limit, what)
		}
	case info.Mode()&fs.ModeNamedPipe != 0:
		return readPipe(buf, f, limit, what)
	case info.IsDir():
		return nil, fmt.Errorf("%s: is a directory; not %s", path, what)
	default:
		return nil, fmt.Errorf("%s: not a regular file or a pipe; not %s", path, what)
	}
	if err := clearNonblock(f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// A buffer of the file's size takes it in one read, where io.ReadAll
	// grows from 512 bytes. The size only sizes the buffer: what is read,
	// up to the limit, is what the file holds.
	b := bytes.NewBuffer(buf[:0])
	b.Grow(int(min(info.Size(), limit)) + bytes.MinRead)
	_, err = b.ReadFrom(io.LimitReader(f, limit+1))
	data := b.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, UnwrapPath(err))
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit, what)
	}
	return data, nil
}

func tooLarge(path string, limit int64, what string) error {
	return &TooLargeError{Path: path, Limit: limit, What: what}
}

// TooLargeError is a file refused for its size: larger than Limit bytes,
// so not What (the kind of file the caller reads), which is never that
// large. Callers that know what to do about it attach their hint.
type TooLargeError struct {
	Path  string
	Limit int64
	What  string
}

func (e *TooLargeError) Error() string {
	if e.Limit >= 1<<20 {
		return fmt.Sprintf("%s: larger than %d MiB; not %s", e.Path, e.Limit>>20, e.What)
	}
	return fmt.Sprintf("%s: larger than %d bytes; not %s", e.Path, e.Limit, e.What)
}

// clearNonblock makes reads of f, opened O_NONBLOCK, wait as a regular
// file's do.
func clearNonblock(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

// readPipe reads the FIFO or pipe f, open O_NONBLOCK, by the pipe rule.
func readPipe(buf []byte, f *os.File, limit int64, what string) ([]byte, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(PipeTotal)
	data := buf[:0]
	var rerr error
	err = raw.Control(func(fd uintptr) {
		for {
			if rerr = WaitReadable(int(fd), deadline); rerr != nil {
				return
			}
			if len(data) == cap(data) {
				data = append(data, 0)[:len(data)]
			}
			var n int
			rerr = RetryEINTR(func() (err error) { n, err = syscall.Read(int(fd), data[len(data):cap(data)]); return err })
			if rerr == syscall.EAGAIN {
				rerr = nil
				continue // another reader took what poll saw
			}
			if rerr != nil || n == 0 {
				return
			}
			if data = data[:len(data)+n]; int64(len(data)) > limit {
				rerr = tooLarge(f.Name(), limit, what)
				return
			}
		}
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), UnwrapPath(err))
	}
	return data, nil
}

// ErrPipeTimeout is why a pipe read by the pipe rule was given up.
var ErrPipeTimeout = errors.New("a pipe with no data: nothing was written to it in time (a FIFO nobody writes?)")

// WaitReadable waits until the O_NONBLOCK FIFO or pipe fd has data or its
// writers have gone, for PipeIdle at most and never past deadline. A FIFO no
// writer has opened reads as ended, yet poll waits until one came and went.
func WaitReadable(fd int, deadline time.Time) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		wait := min(time.Until(deadline), PipeIdle)
		if wait <= 0 {
			return ErrPipeTimeout
		}
		n, err := unix.Poll(fds, int(wait.Milliseconds())+1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		return ErrPipeTimeout
	}
}

// RetryEINTR repeats call for as long as a signal interrupts it (EINTR):
// Go's runtime preempts with signals, so a blocking raw system call (flock,
// poll, read of a FIFO, connect) can return EINTR at any time.
func RetryEINTR(call func() error) error {
	for {
		if err := call(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// UnwrapPath is err without the *fs.PathError around it, for a message
// that names the file itself and would otherwise name it twice.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ReadRaw reads path, a regular file or a FIFO (by the pipe rule), within
// limit bytes into *buf, kept for the next call; tooLarge(size) makes the
// refusal (-1: a pipe past limit). It avoids os.Open's per-file poller cost.
func ReadRaw(path string, buf *[]byte, limit int64, tooLarge func(size int64) error) (data []byte, fifo bool, err error) {
	var fd int
	err = RetryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := RetryEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	size := -1 // unknown: read to EOF
	deadline := time.Now().Add(PipeTotal)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		if st.Size > limit {
			return nil, false, tooLarge(st.Size)
		}
		size = int(st.Size)
	case syscall.S_IFIFO:
		fifo = true
	default:
		return nil, false, fmt.Errorf("%s: not a regular file or a pipe", path)
	}
	if want := max(size, 4096); cap(*buf) < want {
		*buf = make([]byte, want)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	// A file is read up to the size fstat gave, without the read that
	// would see EOF: what is appended after fstat is as if appended after
	// the read. A file cut short meanwhile is read to its new end.
	for n < size || size < 0 {
		end := len(b)
		if size >= 0 {
			end = size
		}
		if fifo {
			if err := WaitReadable(fd, deadline); err != nil {
				return nil, false, fmt.Errorf("reading %s: %w", path, err)
			}
		}
		var m int
		err := RetryEINTR(func() (err error) { m, err = syscall.Read(fd, b[n:end]); return err })
		if err == syscall.EAGAIN && fifo {
			continue // another reader of the FIFO took what poll saw
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading %s: %w", path, err)
		}
		if m == 0 {
			break
		}
		if n += m; int64(n) > limit {
			return nil, false, tooLarge(-1)
		}
		if n == len(b) { // a pipe
			b = append(b, 0)
			b = b[:cap(b)]
			*buf = b
		}
	}
	return b[:n], fifo, nil
}

// Expand lists the files that FILE and DIR arguments name: a file as given,
// a directory as its non-dot entries with the suffix, in name order. A
// directory with none is an error naming it and kind ("*.json snapshots").
func Expand(args []string, suffix, kind string) ([]string, error) {
	var files []string
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, arg)
			continue
		}
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, err
		}
		n := len(files)
		for _, e := range entries {
			if name := e.Name(); strings.HasSuffix(name, suffix) && !strings.HasPrefix(name, ".") {
				files = append(files, filepath.Join(arg, name))
			}
		}
		if len(files) == n {
			return nil, fmt.Errorf("%s: no %s in this directory", arg, kind)
		}
	}
	return files, nil
}
