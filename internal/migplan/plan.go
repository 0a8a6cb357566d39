package migplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	v1 "github.com/NVIDIA/mig-parted/api/spec/v1"
	"github.com/NVIDIA/mig-parted/pkg/types"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Plan is what a node's GPUs will be once mig-parted applies a config.
type Plan struct {
	File   string    `json:"mig_config"`
	Config string    `json:"select"`
	GPUs   []GPUPlan `json:"gpus"`
	// Node is the node as it will be: matched GPUs have their new MIG mode and
	// devices, with a profile and nothing else (no UUID, ids or cap minors).
	Node *model.Node `json:"-"`
	// Warnings name each GPU left in MIG mode with no MIG device.
	Warnings []error `json:"-"`
}

// GPUPlan is what one GPU will be.
type GPUPlan struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Entry is the entry of the config that decides the GPU's layout
	// (the last that matches it, as mig-parted applies them in turn);
	// nil when none matches and the GPU keeps its layout.
	Entry      *EntryRef      `json:"entry"`
	MigEnabled bool           `json:"mig_enabled"`
	Devices    []ProfileCount `json:"mig_devices"`
	// Gres is the GPU's share of the node's Gres= counts (Counts).
	Gres []TypeCount `json:"gres"`
}

// TypeCount is how many gpu GRES of a type a GPU offers Slurm.
type TypeCount struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
}

// EntryRef names an entry of the config: its place and its line.
type EntryRef struct {
	Number int `json:"number"`
	Line   int `json:"line"`
}

// ProfileCount is how many MIG devices of a profile a GPU has.
type ProfileCount struct {
	Profile string `json:"profile"`
	Count   int    `json:"count"`
}

// Refusal is a config that mig-parted could not apply to a GPU of the
// node: it names the file and the entry's line, the config, the GPU and
// what is wrong (an *Unfit names the profile).
type Refusal struct {
	File, Config string
	Line         int
	GPU          *model.GPU
	Err          error
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s:%d: config %q: GPU %d (%s): %v", r.File, r.Line, r.Config, r.GPU.Index, r.GPU.Name, r.Err)
}

func (r *Refusal) Unwrap() error { return r.Err }

// Make works out each GPU of node once mig-parted applies sel, or refuses
// as the apply would fail; Plan.Warnings name a GPU left in MIG mode with
// no MIG device.
func Make(node *model.Node, sel *Selected) (*Plan, error) {
	next := *node
	next.GPUs = make([]model.GPU, len(node.GPUs))
	p := &Plan{File: sel.File, Config: sel.Name, Node: &next}
	made := layouts{}
	for i := range node.GPUs {
		g := &node.GPUs[i]
		gp, gpu, err := sel.gpu(node, g, made)
		if err != nil {
			return nil, err
		}
		if gpu.MigEnabled && len(gpu.MigDevices) == 0 {
			p.Warnings = append(p.Warnings, fmt.Errorf("%s: config %q: GPU %d (%s): MIG will be enabled with no MIG devices; it offers Slurm nothing", sel.File, sel.Name, g.Index, g.Name))
		}
		next.GPUs[i] = gpu
		p.GPUs = append(p.GPUs, gp)
	}
	return p, nil
}

// layouts are the MIG devices an entry makes from a profile table, worked
// out once for the GPUs that share both (most of a fleet plan's work).
type layouts map[layoutKey][]model.MigDevice

type layoutKey struct {
	table *model.ProfileTable
	entry *Entry
}

func keyOf(g *model.GPU, e *Entry) layoutKey {
	return layoutKey{table: g.Profiles, entry: e}
}

// gpu is what g, a GPU of node, will be: its plan and its model.
func (sel *Selected) gpu(node *model.Node, g *model.GPU, made layouts) (GPUPlan, model.GPU, error) {
	var last *Entry
	for i := range sel.Entries {
		e := &sel.Entries[i]
		refuse := func(err error) error {
			return &Refusal{File: sel.File, Config: sel.Name, Line: e.Line, GPU: g, Err: err}
		}
		match, err := matches(&e.Spec, g)
		if err != nil {
			return GPUPlan{}, model.GPU{}, refuse(err)
		}
		if !match {
			continue
		}
		skip, err := applies(&e.Spec, g)
		if err != nil {
			return GPUPlan{}, model.GPU{}, refuse(err)
		}
		if skip {
			continue
		}
		if last != nil && last.Spec.MigEnabled != e.Spec.MigEnabled {
			// mig-parted sets the mode of every entry first, the last
			// one winning, then refuses the configs of the entries
			// whose mode is not the GPU's.
			return GPUPlan{}, model.GPU{}, refuse(fmt.Errorf("entries %d and %d both match it, one with MIG enabled and one without; mig-parted refuses that", last.Number, e.Number))
		}
		if _, done := made[keyOf(g, e)]; e.Spec.MigEnabled && !done {
			err := unread(node, e.Spec.MigDevices)
			var reqs []request
			if err == nil {
				reqs, err = resolve(g, e.Spec.MigDevices)
			}
			if err == nil {
				err = fit(reqs)
			}
			if err != nil {
				return GPUPlan{}, model.GPU{}, refuse(err)
			}
			made[keyOf(g, e)] = devices(reqs)
		}
		last = e
	}
	gp := GPUPlan{Index: g.Index, Name: g.Name, Devices: []ProfileCount{}}
	if last == nil {
		gp.MigEnabled = g.MigEnabled
		if g.MigEnabled {
			gp.Devices = countProfiles(g.MigDevices)
		}
		return gp, *g, nil
	}
	gp.Entry = &EntryRef{Number: last.Number, Line: last.Line}
	gpu := *g
	gpu.MigEnabled, gpu.MigPending, gpu.MigDevices = last.Spec.MigEnabled, last.Spec.MigEnabled, nil
	gp.MigEnabled = gpu.MigEnabled
	if gpu.MigEnabled {
		gpu.MigDevices = slices.Clone(made[keyOf(g, last)]) // fitted above
		gp.Devices = countProfiles(gpu.MigDevices)
	}
	return gp, gpu, nil
}

// matches reports whether the entry takes the GPU, by its device filter
// and its devices, as mig-parted walks a config: mig-parted's own rules
// (v1.MigConfigSpec), with the PCI device id the GPU's model records.
func matches(spec *v1.MigConfigSpec, g *model.GPU) (bool, error) {
	if !spec.MatchesDevices(g.Index) {
		return false, nil
	}
	if !hasFilter(spec) {
		return true, nil
	}
	if g.PCIDeviceID == "" {
		return false, advice.Hinted(errors.New("its PCI device id is unknown (a snapshot of schema 1?), so the entry's device-filter cannot be matched"), "; take a new snapshot")
	}
	id, err := types.NewDeviceIDFromString(g.PCIDeviceID)
	if err != nil {
		return false, err
	}
	return spec.MatchesDeviceFilter(id), nil
}

// hasFilter reports whether the entry filters by PCI device id at all.
func hasFilter(spec *v1.MigConfigSpec) bool {
	switch f := spec.DeviceFilter.(type) {
	case string:
		return f != ""
	case []string:
		return len(f) > 0
	}
	return false
}

// applies is mig-parted's rule for a GPU without MIG: an all-devices entry
// or one turning MIG off skips it, one naming it and asking for MIG fails;
// without a profile table (schema 1) it cannot be told.
func applies(spec *v1.MigConfigSpec, g *model.GPU) (skip bool, err error) {
	if g.Profiles != nil {
		return false, nil
	}
	unknown := g.PCIDeviceID == "" || g.MigEnabled
	switch {
	case !spec.MigEnabled:
		return !unknown, nil // a GPU without MIG is whole either way
	case unknown:
		return false, advice.Hinted(errors.New("its MIG profiles are unknown (a snapshot of schema 1?)"), "; take a new snapshot")
	case spec.MatchesAllDevices():
		return true, nil
	}
	return false, errors.New("it has no MIG, and the entry names it with MIG enabled")
}

// devices are the MIG devices reqs make, largest first as mig-parted orders
// them, one per compute instance, named as NVML names them ("3c.3g.40gb"
// makes 3g.40gb devices).
func devices(reqs []request) []model.MigDevice {
	sorted := append([]request(nil), reqs...)
	sort.SliceStable(sorted, func(a, b int) bool {
		if sorted[a].gi.Slices != sorted[b].gi.Slices {
			return sorted[a].gi.Slices > sorted[b].gi.Slices
		}
		return sorted[a].ci.Slices > sorted[b].ci.Slices
	})
	var out []model.MigDevice
	for _, r := range sorted {
		for range r.count {
			out = append(out, model.MigDevice{Profile: r.ci.Name, GISlices: r.gi.Slices, MemoryMiB: r.gi.MemoryMiB})
		}
	}
	return out
}

// countProfiles counts MIG devices by profile, in the order they come.
func countProfiles(migs []model.MigDevice) []ProfileCount {
	out := []ProfileCount{}
	at := map[string]int{}
	for _, m := range migs {
		i, ok := at[m.Profile]
		if !ok {
			i = len(out)
			at[m.Profile] = i
			out = append(out, ProfileCount{Profile: m.Profile})
		}
		out[i].Count++
	}
	return out
}

// Slurm is the plan in slurm.conf's words: the node's NodeName line with
// the Gres= counts it will have, and each GPU's share of them.
type Slurm struct {
	NodeLine string `json:"node_line"`
	// Counts are the node line's Gres= counts, for a fleet's lines.
	Counts []slurmconf.GresCount `json:"-"`
	// Warnings are gresgen's about the type names (gresgen.Counts).
	Warnings []error `json:"-"`
	*Plan
}

// Counts names and counts the devices of the node as it will be, as gen
// and node name and count them (gresgen.Count with o), under the node's
// name ("": no NodeName=).
func (p *Plan) Counts(nodeName string, o gresgen.Options) (*Slurm, error) {
	counted, err := gresgen.Count(p.Node, o)
	if err != nil {
		return nil, err
	}
	per := counted.PerGPU
	for i := range p.GPUs {
		p.GPUs[i].Gres = []TypeCount{}
		for _, c := range per[i] {
			p.GPUs[i].Gres = append(p.GPUs[i].Gres, TypeCount{Type: c.Type, Count: c.Count})
		}
	}
	total := gresgen.SumCounts(per)
	return &Slurm{NodeLine: slurmconf.NodeLine(nodeName, total), Counts: total, Warnings: counted.Warnings, Plan: p}, nil
}

// WriteText prints the node line.
func (s *Slurm) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, s.NodeLine)
	return err
}

// WriteJSON prints the node line and each GPU's plan.
func (s *Slurm) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
