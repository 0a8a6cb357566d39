// Package gresgen turns the discovery model of a node into gres.conf
// records: which devices Slurm gets, under which type, with which files.
package gresgen

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TypeStyle chooses how GRES types are named.
type TypeStyle string

const (
	// StyleModel: whole GPU "a100", MIG device "a100_1g.10gb" (the style of
	// Slurm's gres.html example).
	StyleModel TypeStyle = "model"
	// StyleProfile: whole GPU "a100", MIG device "1g.10gb".
	StyleProfile TypeStyle = "profile"
	// StyleAutodetect: the names Slurm's AutoDetect=nvml gives
	// ("nvidia_a100-sxm4-40gb", "nvidia_a100_1g.5gb").
	StyleAutodetect TypeStyle = "autodetect"
)

// FileStyle chooses the device files of a MIG device's line.
type FileStyle string

const (
	// FilesAuto (or ""): FilesCI for a Slurm older than 21.08, else
	// FilesMultiple (FileStyleFor).
	FilesAuto FileStyle = "auto"
	// FilesMultiple: MultipleFiles=/dev/nvidiaN,<GI cap>,<CI cap>, as Slurm's
	// autodetect builds it; read from 21.08 on (20.11 refuses shared files).
	FilesMultiple FileStyle = "multiple"
	// FilesCI: File=<CI cap>, the legacy form every Slurm reads.
	FilesCI FileStyle = "ci"
)

// FileStyleFor is the file style for Slurm release v: FilesMultiple
// where v lets MultipleFiles= records share a file, or is not known;
// FilesCI before that.
func FileStyleFor(v slurmconf.Version) FileStyle {
	if v.Before(slurmconf.SharedFilesSince) {
		return FilesCI
	}
	return FilesMultiple
}

// Options are the choices that shape the records.
type Options struct {
	NodeName  string // empty: no NodeName= on the lines
	TypeStyle TypeStyle
	FileStyle FileStyle
	// TypeMap overrides the model part of types: keys are NVML names or
	// short models, matched without regard to case.
	TypeMap map[string]string
	// NoCores leaves out Cores=; NoLinks leaves out Links=.
	NoCores, NoLinks bool
	// Flags is written as Flags= on every line (nvidia_gpu_env).
	Flags string
	// Slurm is the release that will read the records; the zero Version
	// when not known. It picks FilesAuto's style, and Records refuses
	// records it would refuse or misread (slurmconf.CheckGres).
	Slurm slurmconf.Version
	// Sharing: the slurm.conf read configures mps or shard, so a slurmd before
	// 23.02.7 splits MultipleFiles= records: FilesAuto takes FilesCI, and
	// FilesMultiple is refused (slurmconf.CheckSharing).
	Sharing bool
}

// Records builds one record per device: GPUs in NVML index order, a
// MIG-enabled GPU as its MIG devices in (GI, CI) order, every other GPU
// whole. Every MIG device must have its cap minors resolved.
func Records(n *Node, o Options) ([]slurmconf.GresRecord, error) {
	recs, _, err := records(n, o)
	return recs, err
}

// records is Records with its warnings: what is legal but likely not what
// the admin wants (a pending MIG mode change, GPU names that share a type,
// with advice.TypeMap).
func records(n *Node, o Options) ([]slurmconf.GresRecord, []error, error) {
	var recs []slurmconf.GresRecord
	typer, err := newTyper(o)
	if err != nil {
		return nil, nil, err
	}
	if err := slurmconf.ValidFlags(o.Flags); err != nil {
		return nil, nil, err
	}
	if o.FileStyle == "" || o.FileStyle == FilesAuto {
		o.FileStyle = FileStyleFor(o.Slurm)
		if o.Sharing && slurmconf.SplitsMultipleFiles(o.Slurm) {
			o.FileStyle = FilesCI
		}
	}
	var warnings []error
	links := nvlinkMatrix(n)
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if g.MigChangePending() {
			warnings = append(warnings, fmt.Errorf("%s: MIG mode is %s but will be %s after the next GPU reset; this config describes the current layout",
				g.Label(), migWord(g.MigEnabled), migWord(g.MigPending)))
		}
		if !g.MigEnabled {
			t, err := typer.gpuType(g)
			if err != nil {
				return nil, nil, err
			}
			r := slurmconf.GresRecord{NodeName: o.NodeName, Name: "gpu", Type: t, File: g.DevicePath(), Flags: o.Flags}
			if !o.NoCores {
				r.Cores = g.Cores
			}
			if !o.NoLinks && links != nil {
				r.Links = links[i]
			}
			recs = append(recs, r)
			continue
		}
		if len(g.MigDevices) == 0 {
			warnings = append(warnings, fmt.Errorf("%s: MIG mode is enabled but it has no MIG devices; it offers Slurm nothing", g.Label()))
			continue
		}
		for j := range g.MigDevices {
			m := &g.MigDevices[j]
			if m.GICapMinor == nil || m.CICapMinor == nil {
				return nil, nil, fmt.Errorf("%s: cap minors unknown", m.Label(g))
			}
			t, err := typer.migType(g, m)
			if err != nil {
				return nil, nil, err
			}
			// A MIG device has its GPU's cores; Slurm gives MIG devices no Links.
			r := slurmconf.GresRecord{NodeName: o.NodeName, Name: "gpu", Type: t, Flags: o.Flags}
			if !o.NoCores {
				r.Cores = g.Cores
			}
			if o.FileStyle == FilesCI {
				r.File = model.CapPath(*m.CICapMinor)
			} else {
				r.MultipleFiles = []string{g.DevicePath(), model.CapPath(*m.GICapMinor), model.CapPath(*m.CICapMinor)}
			}
			recs = append(recs, r)
		}
	}
	if o.Sharing {
		if err := slurmconf.CheckSharing(o.Slurm, recs); err != nil {
			return nil, nil, err
		}
	}
	if err := slurmconf.CheckGres(o.Slurm, recs); err != nil {
		return nil, nil, err
	}
	warnings = append(warnings, typer.clashes()...)
	return recs, append(warnings, unmatchedTypeMap(n, o.TypeMap)...), nil
}

// unmatchedTypeMap warns of type map names that match no GPU of the node:
// most often a typo, which would silently leave the default type.
func unmatchedTypeMap(n *model.Node, typeMap map[string]string) []error {
	var out []error
	for name := range typeMap {
		var known []string // the names it could have matched, once each
		matched := false
		for i := range n.GPUs {
			g := &n.GPUs[i]
			short := ShortModel(g.Name)
			if strings.EqualFold(name, g.Name) || strings.ToLower(name) == short {
				matched = true
				break
			}
			for _, k := range []string{g.Name, short} {
				if !slices.Contains(known, k) {
					known = append(known, k)
				}
			}
		}
		if !matched {
			out = append(out, advice.Hinted(fmt.Errorf("type map name %q matches no GPU of this node (NVML names and short models here: %s)",
				name, quoteAll(known)), "; check its spelling"))
		}
	}
	sortByText(out)
	return out
}

// sortByText puts warnings in the order of their messages, so that a run
// says them in the same order every time.
func sortByText(warnings []error) {
	slices.SortFunc(warnings, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
}

func quoteAll(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

func migWord(enabled bool) string {
	if enabled {
		return "enabled"
	}
	return "disabled"
}

// typer names types for one run and notices short models that two
// different GPU names share ("NVIDIA A100-SXM4-40GB" and "...-80GB" are
// both "a100"), which the admin may want to tell apart with --type-map.
type typer struct {
	style   TypeStyle
	typeMap map[string]string // lower-cased key -> type
	namesOf map[string]map[string]bool

	last       *model.GPU // the GPU modelOf last worked out
	lastModel  string
	lastMapped bool
}

func newTyper(o Options) (*typer, error) {
	t := &typer{style: o.TypeStyle, typeMap: map[string]string{}, namesOf: map[string]map[string]bool{}}
	switch t.style {
	case "":
		t.style = StyleModel
	case StyleModel, StyleProfile, StyleAutodetect:
	default:
		return nil, fmt.Errorf("unknown type style %q (want model, profile or autodetect)", o.TypeStyle)
	}
	switch o.FileStyle {
	case "", FilesAuto, FilesMultiple, FilesCI:
	default:
		return nil, fmt.Errorf("unknown file style %q (want auto, multiple or ci)", o.FileStyle)
	}
	for k, v := range o.TypeMap {
		if err := slurmconf.ValidType(v); err != nil {
			return nil, fmt.Errorf("type map %s=%s: %v", k, v, err)
		}
		t.typeMap[strings.ToLower(k)] = v
	}
	return t, nil
}

// modelOf is model, worked out once per GPU: a GPU has up to dozens of
// MIG devices.
func (t *typer) modelOf(g *model.GPU) (string, bool) {
	if t.last == g {
		return t.lastModel, t.lastMapped
	}
	t.last = g
	t.lastModel, t.lastMapped = t.model(g)
	return t.lastModel, t.lastMapped
}

// model is the GPU part of a type, and whether the type map set it.
func (t *typer) model(g *model.GPU) (string, bool) {
	if v, ok := t.typeMap[strings.ToLower(g.Name)]; ok {
		return v, true
	}
	short := ShortModel(g.Name)
	if v, ok := t.typeMap[short]; ok {
		return v, true
	}
	if t.style == StyleAutodetect {
		return autodetectName(g.Name), false
	}
	if t.namesOf[short] == nil {
		t.namesOf[short] = map[string]bool{}
	}
	t.namesOf[short][g.Name] = true
	return short, false
}

func (t *typer) gpuType(g *model.GPU) (string, error) {
	m, _ := t.model(g)
	if err := slurmconf.ValidType(m); err != nil {
		return "", fmt.Errorf("%s: %v", g.Label(), err)
	}
	return m, nil
}

func (t *typer) migType(g *model.GPU, mig *model.MigDevice) (string, error) {
	m, mapped := t.modelOf(g)
	var typ string
	switch {
	case t.style == StyleProfile:
		typ = mig.Profile
	case t.style == StyleAutodetect && !mapped:
		// Slurm cuts the GPU part of a MIG type at the first '-'
		// (gpu_nvml.c): "nvidia_a100-sxm4-40gb" -> "nvidia_a100".
		m, _, _ = strings.Cut(m, "-")
		typ = m + "_" + strings.ToLower(mig.Profile)
	default:
		typ = m + "_" + mig.Profile
	}
	if err := slurmconf.ValidType(typ); err != nil {
		return "", fmt.Errorf("%s: %v", mig.Label(g), err)
	}
	return typ, nil
}

// clashes warns of short models that GPUs of different names share, in
// the order of their messages, each with the fix that tells them apart.
func (t *typer) clashes() []error {
	var out []error
	for short, names := range t.namesOf {
		if len(names) < 2 {
			continue
		}
		list := make([]string, 0, len(names))
		for n := range names {
			list = append(list, fmt.Sprintf("%q", n))
		}
		sort.Strings(list)
		out = append(out, advice.Wrap(fmt.Errorf("GPUs %s all get type %q", strings.Join(list, ", "), short), advice.TypeMap))
	}
	sortByText(out)
	return out
}

// ShortModel is the short GPU model of an NVML name, lower case without
// "nvidia " or "tesla ", cut at a space or '-': "A100-PCIE-40GB" -> "a100".
func ShortModel(name string) string {
	s := strings.ToLower(strings.TrimSpace(name))
	for _, prefix := range []string{"nvidia ", "tesla "} {
		s = strings.TrimPrefix(s, prefix)
	}
	if i := strings.IndexAny(s, " -"); i >= 0 {
		s = s[:i]
	}
	return s
}

// autodetectName is the type Slurm's AutoDetect=nvml gives a whole GPU:
// the NVML name lower-cased with spaces turned into '_'
// (gpu_common_underscorify_tolower).
func autodetectName(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), " ", "_")
}

// nvlinkMatrix gives each GPU's Links=, in index order: -1 for itself, else
// its NVLinks to the other (through NVSwitches, the smaller link count);
// nil without NVLink or with a GPU in MIG mode (docs/gen.md, --no-links).
func nvlinkMatrix(n *model.Node) []string {
	for i := range n.GPUs {
		if n.GPUs[i].MigEnabled {
			return nil
		}
	}
	index := map[string]int{}
	for i := range n.GPUs {
		index[strings.ToUpper(n.GPUs[i].PCIBusID)] = i
	}
	linked := false
	counts := make([][]int, len(n.GPUs))
	fabric := make([]int, len(n.GPUs)) // links to switches, per GPU
	for i := range n.GPUs {
		counts[i] = make([]int, len(n.GPUs))
		counts[i][i] = -1
		for _, l := range n.GPUs[i].NVLinks {
			linked = true
			if j, ok := index[strings.ToUpper(l.RemotePCIBusID)]; !ok {
				fabric[i] += l.Links
			} else if j != i {
				counts[i][j] += l.Links
			}
		}
	}
	if !linked {
		return nil
	}
	out := make([]string, len(n.GPUs))
	for i, row := range counts {
		parts := make([]string, len(row))
		for j, c := range row {
			if j != i && fabric[i] > 0 && fabric[j] > 0 {
				c += min(fabric[i], fabric[j])
			}
			parts[j] = strconv.Itoa(c)
		}
		out[i] = strings.Join(parts, ",")
	}
	return out
}
