package jobenv

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/capmap"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/slurmd"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Options say where env reads from; empty fields take their defaults.
type Options struct {
	SlurmConf string    // slurm.conf; default $SLURM_CONF
	GresConf  string    // default: gres.conf beside slurm.conf
	State     string    // the state file; default StatePath's
	Snapshot  string    // take the UUIDs from this snapshot instead of the state
	Root      hostfs.FS // where /proc and /dev are (the boot id, a snapshot's mig-minors, the device probe)
	// Release says the release of this node's slurmd; asked only where
	// slurmd's numbering depends on it. nil: not known.
	Release func() (slurmconf.Version, error)
}

// Run is `slurm-mig env`: it decides from the task's environment and
// returns the lines for the TaskProlog to print (none to leave the task
// alone). A task that asks for nothing reads no file at all.
func Run(opts Options, getenv func(string) (string, bool)) ([]string, error) {
	req, err := Decide(getenv)
	if err != nil || req.Leave {
		return nil, err
	}
	n, err := Load(opts, req.Node, getenv)
	if err != nil {
		return nil, err
	}
	return Lines(req, n, getenv, openProbe(opts.Root))
}

// Device is one GPU index of a node as slurmd numbers it, with its device
// files: the global GRES index that SLURM_JOB_GPUS, SLURM_STEP_GPUS and
// `scontrol show job -d` (IDX:) name.
type Device = slurmd.GPUIndex

// Node is what maps a node's GPU indices to its devices: slurmd's index
// map and the device state. env (the TaskProlog) and jobmap (the Prolog
// and Epilog) both map through it, so that they name the same devices.
type Node struct {
	Devices []Device // by index, with their files under Options.Root
	// Types counts the GPU types of the node's Gres=: a job of a node
	// with several may have GPUs of two, of which Slurm gives a Prolog
	// one type's indices only.
	Types   int
	State   *State
	Context string // where the index map came from, for errors
}

// Load reads what mapping the indices of node needs: slurm.conf and
// gres.conf (opts, else $SLURM_CONF) for the index map, and the device
// state, checked to be this node's and this boot's (or a snapshot's).
func Load(opts Options, node string, getenv func(string) (string, bool)) (*Node, error) {
	paths, err := resolvePaths(opts.SlurmConf, opts.GresConf, getenv)
	if err != nil {
		return nil, err
	}
	// The state is read while the configs are: the errors still come in
	// this order, the configs' first.
	var st *State
	var stErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		st, stErr = opts.loadState(node, getenv)
	}()
	devs, types, ctx, err := nodeIndexMap(paths, node, opts.Release)
	<-done
	if err != nil {
		return nil, err
	}
	if stErr != nil {
		return nil, stErr
	}
	return &Node{Devices: underRoot(devs, opts.Root), Types: types, State: st, Context: ctx}, nil
}

// Pick returns the devices at indices, in order; from names their variable,
// for errors. An index beyond the node's GPUs or whose files are no device
// of the state is an error: the device a job got is never guessed.
func (n *Node) Pick(from string, indices []int) ([]*StateDevice, error) {
	picked := make([]*StateDevice, 0, len(indices))
	for _, i := range indices {
		if i >= len(n.Devices) {
			return nil, fmt.Errorf("%s names GPU index %d, but %s numbers %s", from, i, n.Context, indexRange(len(n.Devices)))
		}
		d, err := n.State.Lookup(n.Devices[i].Files)
		if err != nil {
			return nil, fmt.Errorf("GPU index %d (%s): %v", i, n.Devices[i].Pos, err)
		}
		picked = append(picked, d)
	}
	return picked, nil
}

// loadState reads the state file and checks that it is this node's and
// this boot's, or builds the state from a snapshot.
func (o Options) loadState(node string, getenv func(string) (string, bool)) (*State, error) {
	if o.Snapshot != "" {
		return snapshotState(o.Snapshot, o.Root)
	}
	path := StatePath(o.State, func(k string) string { v, _ := getenv(k); return v })
	st, err := LoadTrustedState(path)
	if err != nil {
		return nil, err
	}
	if err := CheckState(st, path, node, readBootID(o.Root)); err != nil {
		return nil, err
	}
	return st, nil
}

// snapshotState is the state of a snapshot's node, its cap minors read
// from mig-minors under root where it lacks them. It names no node and
// no boot, so neither is checked.
func snapshotState(path string, root hostfs.FS) (*State, error) {
	n, err := snapshot.Load(path)
	if err != nil {
		return nil, err
	}
	if err := capmap.Resolve(n, func() (*capmap.Map, error) { return capmap.Load(string(root)) }); err != nil {
		return nil, err
	}
	st, err := NewState(n, "", "", "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st.Path = path
	return st, nil
}

// underRoot reads device files under root as the host's /dev files, as
// --root has every command do: a gres.conf of a test cluster whose device
// nodes live in root/dev names root/dev/nvidia0 for /dev/nvidia0.
func underRoot(devs []Device, fs hostfs.FS) []Device {
	out := make([]Device, len(devs))
	for i, d := range devs {
		d.Files = append([]string(nil), d.Files...)
		for j, f := range d.Files {
			if node, ok := fs.NodePath(f); ok && strings.HasPrefix(node, "/dev/") {
				d.Files[j] = node
			}
		}
		out[i] = d
	}
	return out
}
