package nodegres

// This file writes the files slurm-mig keeps on a node: a config file
// (gres.conf, slurm.conf, a node line) and the device state that
// slurm-mig env reads. It reports what it wrote as a line a file for the
// admin, or as JSON for automation.

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/atomicfile"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
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
}

// Write writes the config file atomically (atomicfile), then the state.
func (f Files) Write() (*Report, error) {
	res, err := atomicfile.Write(f.Path, f.Data, atomicfile.Options{Backup: f.Backup})
	if err != nil {
		return nil, err
	}
	rep := &Report{Path: res.Path, Changed: res.Changed, Backup: res.Backup, Devices: f.Devices}
	if f.State != nil {
		if rep.State, err = f.State.Write(); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// State is the device state of a node, to write where File says.
type State struct {
	File      jobenv.StateFile
	Node      *model.Node
	Name      string // the node's Slurm NodeName
	WrittenBy string
	// Warn, when set, makes failing to write the state to its default
	// place (File.Default) a warning and a nil Report: written with a
	// config file, the file is in place, and env then refuses GPU tasks
	// for want of a state.
	Warn func(string)
}

// Write writes the state.
func (s State) Write() (*Report, error) {
	st, res, err := s.File.Write(s.Node, s.Name, s.WrittenBy)
	if err != nil && s.Warn != nil && s.File.Default() {
		s.Warn(fmt.Sprintf("device state not written (slurm-mig env needs it; --no-state if this node runs no TaskProlog): %v", err))
		return nil, nil
	}
	if err != nil {
		return nil, err
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
