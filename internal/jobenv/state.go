package jobenv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// StateVersion is the state file format this package reads and writes.
const StateVersion = 1

// DefaultStatePath is the device state's default home: node-local, since
// configless nodes have no gres.conf to sit beside, and on tmpfs, so that a
// reboot clears it with the MIG devices it describes.
const DefaultStatePath = "/run/slurm-mig/devices.json"

// StatePathEnv names another default state path: for sites that keep it
// elsewhere, and for tests.
const StatePathEnv = "SLURM_MIG_STATE"

// StatePath is the state file to use: the flag's value, else
// $SLURM_MIG_STATE, else DefaultStatePath.
func StatePath(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if p := getenv(StatePathEnv); p != "" {
		return p
	}
	return DefaultStatePath
}

// MaxStateBytes bounds a state file: 64 GPUs of 8 MIG devices are 40 KiB.
const MaxStateBytes = 16 << 20

// State is what env needs to know of the node's devices, without NVML:
// which device, named by its device files, has which UUID. gen writes it
// whenever it writes gres.conf; its JSON form is the state file.
type State struct {
	Version int    `json:"state_version"`
	Node    string `json:"node"` // the Slurm NodeName it was written for
	// Generation is a hash of Devices: equal generations, equal devices
	// and UUIDs. It changes when a repartition changes only the UUIDs.
	Generation string `json:"generation"`
	// BootID is the kernel's boot id when the UUIDs were read from NVML;
	// MIG devices do not survive a reboot, so a state from another boot
	// is stale. Empty when written from a snapshot.
	BootID    string        `json:"boot_id,omitempty"`
	WrittenBy string        `json:"written_by,omitempty"`
	Devices   []StateDevice `json:"devices"`
	// Path is the file it was read from (a state file, or a snapshot),
	// for errors; not part of the file.
	Path string `json:"-"`
}

// StateDevice is one device with its UUID: a whole GPU has only GPU, a MIG
// device its GPU's file and GI and CI caps. A GPU in MIG mode has MIG set:
// it is no CUDA device, and a gres.conf offering it whole is refused.
type StateDevice struct {
	UUID  string `json:"uuid"`
	GPU   string `json:"gpu"`              // /dev/nvidiaN
	GICap string `json:"gi_cap,omitempty"` // /dev/nvidia-caps/nvidia-capM
	CICap string `json:"ci_cap,omitempty"`
	MIG   bool   `json:"mig_enabled,omitempty"`
	// Index is the NVML index of the GPU (a MIG device's parent), which
	// dcgm-exporter calls gpu; GI is a MIG device's GPU instance id. The job
	// map names files by them. Both are nil in a state that lacks them.
	Index *int `json:"index,omitempty"`
	GI    *int `json:"gpu_instance_id,omitempty"`
}

// Addressed reports whether the state records every device's NVML index
// and, for a MIG device, its GPU instance id: a state written before
// slurm-mig recorded them does not.
func (s *State) Addressed() bool {
	for _, d := range s.Devices {
		if d.Index == nil || (d.CICap != "" && d.GI == nil) {
			return false
		}
	}
	return true
}

// ownFile is the file that is the device's alone: a MIG device's CI cap,
// a whole GPU's /dev/nvidiaN.
func (d StateDevice) ownFile() string {
	if d.CICap != "" {
		return d.CICap
	}
	return d.GPU
}

// NewState builds the state of a discovered node, whose MIG devices have
// their cap minors resolved. node names it as slurm.conf does.
func NewState(n *model.Node, node, bootID, writtenBy string) (*State, error) {
	s := &State{Version: StateVersion, Node: node, BootID: bootID, WrittenBy: writtenBy, Devices: []StateDevice{}}
	// Every device has its UUID: model.Node.Check refuses a node,
	// from NVML or a snapshot, that lacks one.
	for i := range n.GPUs {
		g := &n.GPUs[i]
		s.Devices = append(s.Devices, StateDevice{UUID: g.UUID, GPU: g.DevicePath(), MIG: g.MigEnabled, Index: intp(g.Index)})
		if !g.MigEnabled {
			continue
		}
		for j := range g.MigDevices {
			m := &g.MigDevices[j]
			if m.GICapMinor == nil || m.CICapMinor == nil {
				return nil, fmt.Errorf("%s: cap minors unknown", m.Label(g))
			}
			s.Devices = append(s.Devices, StateDevice{UUID: m.UUID, GPU: g.DevicePath(),
				GICap: model.CapPath(*m.GICapMinor), CICap: model.CapPath(*m.CICapMinor),
				Index: intp(g.Index), GI: intp(m.GPUInstanceID)})
		}
	}
	s.Generation = generation(s.Devices)
	return s, nil
}

func intp(i int) *int { return &i }

// generation hashes the devices in a fixed order: their files and
// UUIDs. The NVML index and GPU instance id are left out, so that a
// slurm-mig that does not know them still reads a state that has them.
func generation(devs []StateDevice) string {
	lines := make([]string, len(devs))
	for i, d := range devs {
		lines[i] = strings.Join([]string{d.GPU, d.GICap, d.CICap, d.UUID, fmt.Sprint(d.MIG)}, " ")
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}

// Encode renders the state file: indented JSON, one device a line block.
func (s *State) Encode() []byte {
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err) // plain strings and bools
	}
	return append(out, '\n')
}

// LoadState reads and checks a state file. Errors name the file; where
// there is none, the error carries the fix: the commands that write it.
func LoadState(path string) (*State, error) {
	data, err := fileio.ReadFile(path, MaxStateBytes, "a slurm-mig state")
	return loadStateFile(path, data, err)
}

// LoadTrustedState is LoadState for readers that hand devices out by it:
// the file must be root's or this user's and writable by nobody else, as
// whoever could write it could misroute every job's devices.
func LoadTrustedState(path string) (*State, error) {
	data, err := fileio.ReadTrusted(path, MaxStateBytes, "a slurm-mig state", os.Geteuid())
	return loadStateFile(path, data, err)
}

func loadStateFile(path string, data []byte, err error) (*State, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, advice.Wrap(fmt.Errorf("no device state at %s", path), advice.StateMissing)
	}
	if err != nil {
		return nil, err
	}
	s, err := ParseState(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// ParseState decodes and checks a state: known version, a UUID and files
// for every device, no file claimed twice, a generation that matches.
func ParseState(data []byte) (*State, error) {
	var s State
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a slurm-mig state: %v", err)
	}
	if s.Version != StateVersion {
		return nil, fmt.Errorf("state_version %d, this slurm-mig reads %d", s.Version, StateVersion)
	}
	seen := map[string]bool{}
	address := map[string]int{} // a whole GPU's index, a MIG device's index and GI: its job map file
	for i, d := range s.Devices {
		switch {
		case d.GPU == "":
			return nil, fmt.Errorf("devices[%d]: no gpu", i)
		case (d.GICap == "") != (d.CICap == ""):
			return nil, fmt.Errorf("devices[%d]: a MIG device needs both gi_cap and ci_cap", i)
		case d.CICap != "" && d.MIG:
			return nil, fmt.Errorf("devices[%d]: mig_enabled is for GPUs, not MIG devices", i)
		case d.GI != nil && d.CICap == "":
			return nil, fmt.Errorf("devices[%d]: gpu_instance_id is for MIG devices", i)
		case d.GI != nil && d.Index == nil:
			return nil, fmt.Errorf("devices[%d]: a gpu_instance_id without an index", i)
		case d.Index != nil && (*d.Index < 0 || (d.GI != nil && *d.GI < 0)):
			return nil, fmt.Errorf("devices[%d]: a negative index or gpu_instance_id", i)
		}
		key := d.ownFile()
		if err := model.ValidUUID(d.UUID, d.CICap != ""); err != nil {
			return nil, fmt.Errorf("devices[%d] (%s): %v", i, key, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("devices[%d]: %s is listed twice", i, key)
		}
		seen[key] = true
		if d.Index != nil && !d.MIG {
			a := strconv.Itoa(*d.Index)
			if d.GI != nil {
				a += "." + strconv.Itoa(*d.GI)
			}
			// Two CIs of one GPU instance share it; anything else that does
			// would have the job map name two devices by one file.
			if j, ok := address[a]; ok && (d.CICap == "" || s.Devices[j].GICap != d.GICap || s.Devices[j].GPU != d.GPU) {
				return nil, fmt.Errorf("devices[%d] (%s) has the index and gpu_instance_id of devices[%d] (%s)", i, key, j, s.Devices[j].ownFile())
			}
			address[a] = i
		}
	}
	if g := generation(s.Devices); s.Generation != g {
		return nil, fmt.Errorf("generation %q does not match its devices (%s); the file was edited or damaged", s.Generation, g)
	}
	return &s, nil
}

// Lookup finds the device a gres.conf unit names by its files: a GPU by its
// /dev/nvidiaN alone, a MIG device by its CI cap, with or without its other
// files. Files of no such device, or of two, are an error: env never guesses.
func (s *State) Lookup(files []string) (*StateDevice, error) {
	var dev *StateDevice
	for i := range s.Devices {
		d := &s.Devices[i]
		if d.CICap != "" && slices.Contains(files, d.CICap) {
			if dev != nil {
				return nil, fmt.Errorf("%s names two MIG devices (%s and %s)", strings.Join(files, ","), dev.CICap, d.CICap)
			}
			dev = d
		}
	}
	if dev != nil {
		for _, f := range files {
			if f != dev.CICap && f != dev.GICap && f != dev.GPU {
				return nil, fmt.Errorf("%s: %s is not a file of the MIG device %s", strings.Join(files, ","), f, dev.UUID)
			}
		}
		return dev, nil
	}
	if len(files) == 1 {
		for i := range s.Devices {
			d := &s.Devices[i]
			if d.CICap == "" && d.GPU == files[0] {
				if d.MIG {
					return nil, advice.Hinted(fmt.Errorf("%s is offered as a whole GPU, but the GPU is in MIG mode", files[0]), " (offer its MIG devices: slurm-mig gen)")
				}
				return d, nil
			}
		}
	}
	return nil, fmt.Errorf("%s is no device in the state", strings.Join(files, ","))
}

// StateReport is how a state file compares with the node's GPUs now.
type StateReport struct {
	Path       string   `json:"path"`
	Same       bool     `json:"same"`
	Generation string   `json:"generation,omitempty"` // the file's
	Want       string   `json:"want_generation"`      // the GPUs'
	Problems   []string `json:"problems"`             // one line each
}

// CompareState compares the state file at path with want, the GPUs' state
// now, UUIDs included, since a repartition may change only those. A file
// it cannot read or parse is an error, not a difference to rewrite.
func CompareState(path string, want *State) (*StateReport, error) {
	got, err := LoadState(path)
	if err != nil {
		return nil, err
	}
	r := &StateReport{Path: path, Want: want.Generation, Problems: []string{}}
	r.Generation = got.Generation
	if got.Node != want.Node && want.Node != "" {
		r.Problems = append(r.Problems, fmt.Sprintf("written for node %s, this is %s", got.Node, want.Node))
	}
	if got.BootID != "" && want.BootID != "" && got.BootID != want.BootID {
		r.Problems = append(r.Problems, "written before the last reboot (boot id "+got.BootID+")")
	}
	have := map[string]StateDevice{}
	for _, d := range got.Devices {
		have[d.ownFile()] = d
	}
	for _, w := range want.Devices {
		k := w.ownFile()
		g, ok := have[k]
		delete(have, k)
		switch {
		case !ok:
			r.Problems = append(r.Problems, fmt.Sprintf("+ %s %s (not in the state)", k, w.UUID))
		case g.UUID != w.UUID:
			r.Problems = append(r.Problems, fmt.Sprintf("~ %s: UUID %s -> %s", k, g.UUID, w.UUID))
		case g.GPU != w.GPU || g.GICap != w.GICap || g.MIG != w.MIG:
			r.Problems = append(r.Problems, fmt.Sprintf("~ %s: files or MIG mode changed", k))
		case g.Index == nil && w.Index != nil:
			r.Problems = append(r.Problems, fmt.Sprintf("~ %s: no NVML index or GPU instance id recorded (written by an older slurm-mig)", k))
		case !sameInt(g.Index, w.Index) || !sameInt(g.GI, w.GI):
			r.Problems = append(r.Problems, fmt.Sprintf("~ %s: NVML index or GPU instance id changed", k))
		}
	}
	var gone []string
	for k, d := range have {
		gone = append(gone, fmt.Sprintf("- %s %s (no longer there)", k, d.UUID))
	}
	sort.Strings(gone)
	r.Problems = append(r.Problems, gone...)
	r.Same = len(r.Problems) == 0
	return r, nil
}

func sameInt(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// Usable counts the devices a task can be given: whole GPUs not in MIG
// mode and MIG devices.
func (s *State) Usable() int {
	n := 0
	for _, d := range s.Devices {
		if !d.MIG {
			n++
		}
	}
	return n
}
