package nodegres

// This file writes the files slurm-mig keeps on a node, a config file and
// the device state, and reports what it wrote as text or JSON.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/atomicfile"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// Report is what a write did.
type Report struct {
	atomicfile.Result     // the path with symlinks resolved
	Devices           int `json:"devices"`
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
	// Unchanged, when set, looks at the file there now: true leaves it as it
	// is, an error refuses the write; without it only equal bytes are unchanged.
	Unchanged func(path string) (bool, error)
}

// Write writes the state, then the config file atomically, so the two
// agree: a state that fails leaves the file (advice.StateNotWritten); a
// file that fails puts the state back as it was, and says if it could not.
func (f Files) Write() (*Report, error) {
	target, unchanged, err := f.unchanged()
	if err != nil {
		return nil, err
	}
	var state *Report
	var putBack func() error
	if f.State != nil {
		putBack = f.State.saved()
		if state, err = f.State.Write(); err != nil {
			return nil, advice.Wrap(fmt.Errorf("%w; %s left as it was", err, f.Path), advice.StateNotWritten)
		}
	}
	rep := &Report{Result: atomicfile.Result{Path: target}, Devices: f.Devices, State: state}
	if unchanged {
		return rep, nil
	}
	res, err := atomicfile.Write(f.Path, f.Data, atomicfile.Options{Backup: f.Backup})
	if err != nil {
		if state == nil || !state.Changed {
			return nil, err
		}
		if perr := putBack(); perr != nil {
			return nil, advice.Hinted(fmt.Errorf("%w; the device state %s, already written for it, could not be put back (%v)", err, state.Path, perr), fmt.Sprintf(": run it again once %s can be written", f.Path))
		}
		return nil, fmt.Errorf("%w; device state %s put back as it was", err, state.Path)
	}
	rep.Result = res
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
	Node      *model.Node
	Name      string // the node's Slurm NodeName
	WrittenBy string
}

// saved returns what puts the state file back as it is now: its content,
// or no file; one that cannot be read is not put back.
func (s State) saved() func() error {
	path := s.File.Path()
	old, err := fileio.ReadFile(path, jobenv.MaxStateBytes, "a slurm-mig state")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return func() error {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
	case err != nil:
		return func() error { return fmt.Errorf("its old content was not read: %w", err) }
	}
	return func() error {
		_, err := atomicfile.Write(path, old, atomicfile.Options{})
		return err
	}
}

// Write writes the state.
func (s State) Write() (*Report, error) {
	st, res, err := s.File.Write(s.Node, s.Name, s.WrittenBy)
	if err != nil {
		return nil, fmt.Errorf("device state not written: %w", err)
	}
	return &Report{Result: atomicfile.Result{Path: res.Path, Changed: res.Changed}, Devices: st.Usable()}, nil
}

// WriteJSON writes the report as one line of JSON.
func (r *Report) WriteJSON(w io.Writer) error { return json.NewEncoder(w).Encode(r) }

// WriteText writes a line a file: its path, whether it changed, and what
// it holds.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s: %s (%s)\n", r.Path, r.Changes(), gresgen.DeviceCount(r.Devices))
	if r.State != nil {
		fmt.Fprintf(w, "%s: %s (device state for slurm-mig env)\n", r.State.Path, r.State.Changes())
	}
	return nil
}
