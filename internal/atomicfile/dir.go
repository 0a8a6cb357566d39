package atomicfile

import (
	"os"
	"time"
)

// Lock takes the exclusive lock name in dir, waiting up to timeout (0: 60 s),
// for a change spanning several files of dir: every writer of them takes it,
// then writes each file with ReplaceAt. The lock file exists only while held.
func Lock(dir *os.File, name string, timeout time.Duration) (unlock func(), err error) {
	return lock(dir, name, timeout)
}

// ReplaceAt atomically makes name in dir hold data, replacing a symlink there
// rather than following it, with like's group and mode (root: less group and
// other write), else 0644. The caller holds Lock and opened dir by safepath.
func ReplaceAt(dir *os.File, name string, data []byte, like os.FileInfo) error {
	removeStaleTemps(dir, name) // only a killed writer leaves these, and the caller holds the lock
	return replace(dir, name, data, like)
}
