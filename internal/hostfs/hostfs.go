// Package hostfs is the one place where a path on the node is joined with
// --root: a value of FS knows the root ("/" on a live node, a fixture tree
// or a chroot in tests) and Path puts a node path under it. Every reader of
// /proc and /sys files takes an FS, so the same code reads the node or a
// copy of it (as prometheus/procfs's FS does for its mount point).
package hostfs

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/fileio"
)

// FS is the root under which the node's /proc and /sys are read. Nothing
// checks it when made, unlike procfs.NewFS: a run whose snapshot carries
// everything reads no host file, and each read names the whole path.
type FS string

// ThisHost reports whether the root is this machine's own /, the default
// of --root. Any other root is a tree of the node the run describes, whose
// files are that node's, not this host's.
func (fs FS) ThisHost() bool { return filepath.Clean(string(fs)) == "/" }

// Path is the file at the node path elems (relative to /, as
// "proc/driver/nvidia-caps/mig-minors") under the root.
func (fs FS) Path(elems ...string) string {
	return filepath.Join(append([]string{string(fs)}, elems...)...)
}

// NodePath is the inverse of Path: the node path ("/dev/nvidia0") of a file
// under the root ("ROOT/dev/nvidia0"), and whether it was under it: a test
// cluster's configs name device nodes in its root, read as the node's /dev.
func (fs FS) NodePath(p string) (string, bool) {
	root := strings.TrimSuffix(string(fs), "/")
	if root == "" {
		return p, strings.HasPrefix(p, "/")
	}
	rest, ok := strings.CutPrefix(p, root+"/")
	if !ok {
		return p, false
	}
	return "/" + rest, true
}

// maxNoStat bounds ReadFileNoStat, as procfs's does: no /proc or /sys
// file that slurm-mig reads comes near it.
const maxNoStat = 1 << 20

// ReadFileNoStat reads the /proc, /sys or /dev file at path whole within
// 1 MiB without a stat, since such files say size 0. An open error is the
// *fs.PathError; a larger file is refused, naming path.
func ReadFileNoStat(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fileio.ReadStream(f, path, maxNoStat, "a /proc, /sys or /dev file")
}

// ReadFile is ReadFileNoStat of the node path elems under the root.
func (fs FS) ReadFile(elems ...string) ([]byte, error) { return ReadFileNoStat(fs.Path(elems...)) }
