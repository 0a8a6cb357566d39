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

// ReplaceAt atomically makes name in dir (open for reading) hold data, via a
// synced temporary file renamed over it; a symlink at name is replaced, not
// followed. The new file keeps like's mode (less group and other write, for
// root) and group, else mode 0644. The caller holds Lock and resolved dir.
func ReplaceAt(dir *os.File, name string, data []byte, like os.FileInfo) error {
	removeStaleTemps(dir, name) // only a killed writer leaves these, and the caller holds the lock
	return replace(dir, name, data, like)
}
