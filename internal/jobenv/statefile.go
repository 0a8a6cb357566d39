package jobenv

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/atomicfile"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/safepath"
)

// StateFile is where a node's device state lives and how its GPUs were
// read: what writing the state (gen -o, node --update, state) and
// comparing it (diff) both start from.
type StateFile struct {
	Flag   string              // the path asked for; else $SLURM_MIG_STATE, else DefaultStatePath
	Getenv func(string) string // reads $SLURM_MIG_STATE
	// Live says the UUIDs were read from NVML now, not from a snapshot,
	// so the state records this boot, whose id is read under Root.
	Live bool
	Root hostfs.FS
}

// Path is the state file to use.
func (f StateFile) Path() string { return StatePath(f.Flag, f.Getenv) }

// Default reports whether the path is the built-in default, asked for
// neither by flag nor by $SLURM_MIG_STATE.
func (f StateFile) Default() bool { return f.Flag == "" && f.Getenv(StatePathEnv) == "" }

// Build is the state of the node's GPUs, named name as slurm.conf names
// the node.
func (f StateFile) Build(n *model.Node, name, writtenBy string) (*State, error) {
	boot := ""
	if f.Live {
		boot = readBootID(f.Root)
	}
	return NewState(n, name, boot, writtenBy)
}

// Write builds the node's state and writes it atomically, world-readable
// (env runs as the job's user), making its directory if need be.
func (f StateFile) Write(n *model.Node, name, writtenBy string) (*State, atomicfile.Result, error) {
	st, err := f.Build(n, name, writtenBy)
	if err != nil {
		return nil, atomicfile.Result{}, err
	}
	path := f.Path()
	if err := makeDir(filepath.Dir(path)); err != nil {
		return nil, atomicfile.Result{}, err // names the directory; callers say it was the state's
	}
	res, err := atomicfile.Write(path, st.Encode(), atomicfile.Options{})
	if err != nil {
		return nil, atomicfile.Result{}, err
	}
	return st, res, nil
}

// makeDir makes the state's directory where missing, through directories
// only root or this user may change (safepath), so no other user's link
// leads the mkdir elsewhere; one that exists is left to atomicfile.
func makeDir(dir string) error {
	d, err := safepath.Dir(dir, safepath.Options{UID: -1})
	if err == nil {
		return d.Close()
	}
	if !errors.Is(err, unix.ENOENT) {
		return err
	}
	d, err = safepath.Dir(dir, safepath.Options{UID: -1, TrustDirs: true, Mkdir: true})
	if err != nil {
		return err
	}
	return d.Close()
}

// ToCompare is the path of the state file to compare with the GPUs, or ""
// for none: the one asked for, else the default one when it exists and
// the GPUs are this node's as they are now (Live).
func (f StateFile) ToCompare() string {
	if f.Flag != "" {
		return f.Flag
	}
	if !f.Live {
		return ""
	}
	path := f.Path()
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}
