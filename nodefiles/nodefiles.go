// Package nodefiles writes the files slurm-mig keeps on a node, a config
// file (gres.conf, slurm.conf, a node line) and the device state that
// slurm-mig env reads, and reports what it wrote: a line a file for the
// admin, or JSON for automation.
package nodefiles

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/slurm-mig/slurm-mig/atomicfile"
	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/jobenv"
)

// Report is what a write did.
type Report struct {
	Path    string `json:"path"` // symlinks resolved
	Changed bool   `json:"changed"`
	Backup  string `json:"backup,omitempty"`
	Devices int    `json:"devices"`
	// State is the device state for slurm-mig env, written with the file.
	State *Report `json:"state,omitempty"`
}

// Files are what gen -o and node -o/--update write: a config file and,
// with State set, the device state, which describes the GPUs as they are
// now, whether the file changed or not.
type Files struct {
	Path    string
	Data    []byte
	Devices int  // how many GRES the file offers Slurm
	Backup  bool // keep the replaced content as Path.bak
	State   *State
	// Unchanged, when set, looks at the regular file there now (symlinks
	// followed) before anything is written: true leaves it as it is, as
	// holding Data already in the sense Unchanged knows (gen compares
	// records, not its header); an error refuses the write. Without it,
	// only the same bytes are unchanged.
	Unchanged func(path string) (bool, error)
}

// Write writes the state, then the config file atomically (atomicfile).
// A state that cannot be written is an error with the config file left as
// it was: slurm-mig env fails every GPU task of a node without its state,
// so the run must fail where automation sees it, not leave a new config
// that the node's jobs cannot use.
func (f Files) Write() (*Report, error) {
	target, unchanged, err := f.unchanged()
	if err != nil {
		return nil, err
	}
	var state *Report
	if f.State != nil {
		if state, err = f.State.Write(); err != nil {
			return nil, fmt.Errorf("%w; %s left as it was (slurm-mig env needs the device state; --no-state if this node runs no TaskProlog)", err, f.Path)
		}
	}
	rep := &Report{Path: target, Devices: f.Devices, State: state}
	if unchanged {
		return rep, nil
	}
	res, err := atomicfile.Write(f.Path, f.Data, atomicfile.Options{Backup: f.Backup})
	if err != nil {
		return nil, err
	}
	rep.Path, rep.Changed, rep.Backup = res.Path, res.Changed, res.Backup
	return rep, nil
}

// unchanged asks f.Unchanged about the file at f.Path, if there is one
// and it is a regular file; anything else is atomicfile's to refuse. It
// returns the file's path, symlinks resolved.
func (f Files) unchanged() (string, bool, error) {
	target, err := atomicfile.Target(f.Path)
	if err != nil || f.Unchanged == nil {
		return target, false, err
	}
	if info, err := os.Stat(target); err != nil || !info.Mode().IsRegular() {
		return target, false, nil
	}
	same, err := f.Unchanged(target)
	return target, same, err
}

// State is the device state of a node, to write where File says.
type State struct {
	File      jobenv.StateFile
	Node      *discover.Node
	Name      string // the node's Slurm NodeName
	WrittenBy string
}

// Write writes the state.
func (s State) Write() (*Report, error) {
	st, res, err := s.File.Write(s.Node, s.Name, s.WrittenBy)
	if err != nil {
		return nil, fmt.Errorf("device state not written: %w", err)
	}
	return &Report{Path: res.Path, Changed: res.Changed, Devices: st.Usable()}, nil
}

// WriteJSON writes the report as one line of JSON.
func (r *Report) WriteJSON(w io.Writer) error { return json.NewEncoder(w).Encode(r) }

// WriteText writes a line a file: its path, whether it changed, and what
// it holds.
func (r *Report) WriteText(w io.Writer) error {
	changed := map[bool]string{false: "unchanged", true: "changed"}
	fmt.Fprintf(w, "%s: %s (%s)\n", r.Path, changed[r.Changed], gresgen.DeviceCount(r.Devices))
	if r.State != nil {
		fmt.Fprintf(w, "%s: %s (device state for slurm-mig env)\n", r.State.Path, changed[r.State.Changed])
	}
	return nil
}
