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
	"syscall"
)

// ReadFile reads the whole file at path, refusing one larger than limit
// bytes: what reads a snapshot or a state must not be made to take all
// memory by a wrong path (a disk image, /dev/zero). what names what the
// file should be, for the refusal ("a snapshot": "larger than 64 MiB;
// not a snapshot"). The error of a file that cannot be opened is the
// *fs.PathError, so that callers can tell a missing file apart; any other
// error names the file.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	return ReadFileInto(nil, path, limit, what)
}

// ReadFileInto is ReadFile into buf's memory where it is large enough, for
// a caller that reads many files in turn and is done with each before the
// next (plan reads 10,000 snapshots of 50 kB): the bytes returned are
// buf's, or a new buffer's that the caller passes on next time.
func ReadFileInto(buf []byte, path string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A buffer of the file's size takes it in one read, where io.ReadAll
	// would grow its buffer from 512 bytes a copy at a time. The size
	// only sizes the buffer; what is read, up to the limit, is what the
	// file holds.
	b := bytes.NewBuffer(buf[:0])
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
		b.Grow(int(min(info.Size(), limit)) + bytes.MinRead)
	}
	_, err = b.ReadFrom(io.LimitReader(f, limit+1))
	data := b.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d MiB; not %s", path, limit>>20, what)
	}
	return data, nil
}

// RetryEINTR repeats call for as long as a signal interrupts it (EINTR).
// Go's runtime sends signals of its own (preemption), so a raw system
// call that blocks (flock, poll, read of a FIFO, connect) can return
// EINTR at any time and must simply be made again.
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
