package atomicfile

import (
	"os"
	"time"
)

// Lock takes the exclusive lock named name in dir, as Write takes the
// lock of the one file it writes, waiting up to timeout (0: 60 s), and
// returns what releases it. It is for a writer whose one change spans
// several files of a directory (jobmap's per-device files): every writer
// of them takes the same name, and then writes each file with ReplaceAt.
// The lock file exists only while it is held.
func Lock(dir *os.File, name string, timeout time.Duration) (unlock func(), err error) {
	return lock(dir, name, timeout)
}

// ReplaceAt makes name in dir, a directory open for reading, hold data:
// written to a temporary file beside it, synced, renamed over it, and the
// directory synced, so that a reader sees the old content or the new,
// never a part. like, when not nil, is the replaced file's stat, whose
// mode and group the new file keeps (never write for group and others,
// where root writes); the owner is the writer; a new file is mode 0644. A symlink
// at name is replaced, never followed. The caller holds the lock of the
// files' writers (Lock), and resolved dir itself.
func ReplaceAt(dir *os.File, name string, data []byte, like os.FileInfo) error {
	removeStaleTemps(dir, name) // only a killed writer leaves these, and the caller holds the lock
	return replace(dir, name, data, like)
}
