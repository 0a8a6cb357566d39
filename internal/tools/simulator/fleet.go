package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/rebalance"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
)

// fleetDef is the fleet's types and configs, worked out with migplan.
type fleetDef struct {
	types   []string // Slurm GRES types, lower case
	configs []config
	// shares are the types a trace's share of a GPU may get.
	shares shareTypes
	// model is the snapshot's GPU name (NVIDIA H100 80GB HBM3): a trace
	// names a whole GPU by a name of its family (isModel).
	model string
}

// defaultSnapshot is -snapshot's default: the real H100 node of testdata.
const defaultSnapshot = "testdata/real/h100-snapshot-v2/snapshot.json"

func loadFleet(o options) (*fleetDef, error) {
	snapPath := inRepository(o.snapshot)
	if fi, err := os.Stat(snapPath); err == nil && fi.IsDir() {
		// A captured node is a directory: its snapshot.json, beside the
		// root it was read from (testdata/real/h200-snapshot-v2).
		snapPath = filepath.Join(snapPath, "snapshot.json")
	}
	snap, err := snapshot.Load(snapPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !filepath.IsAbs(o.snapshot) {
			return nil, fmt.Errorf("%v (a relative -snapshot is read from the current directory: run from the repository root, or give the file)", err)
		}
		return nil, err
	}
	if len(snap.GPUs) == 0 {
		return nil, fmt.Errorf("%s: no GPUs", o.snapshot)
	}
	gpu := snap.GPUs[0]
	if len(gpu.MigProfiles()) == 0 {
		return nil, fmt.Errorf("%s: GPU %d (%s): its MIG profiles are unknown (a snapshot of schema 1?); take a new snapshot", o.snapshot, gpu.Index, gpu.Name)
	}
	snap.GPUs = nil
	for i := range o.gpus {
		g := gpu
		g.Index, g.Minor = i, i
		snap.GPUs = append(snap.GPUs, g)
	}
	path := o.migConfig
	if path == "" {
		dir, err := migPartedDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "deployments/systemd/config-default.yaml")
	}
	cfg, err := migplan.ReadConfig(path)
	if err != nil {
		return nil, err
	}
	ev := &rebalance.Evaluator{Gres: gresgen.Options{TypeStyle: gresgen.StyleModel}}
	for _, name := range cfg.Names() {
		sel, _ := cfg.Select(name)
		ev.Configs = append(ev.Configs, sel)
	}
	_, opts, err := ev.Node(snap)
	if err != nil {
		return nil, err
	}
	if len(opts.Configs) == 0 {
		return nil, fmt.Errorf("%s: no config of %s holds the GPUs of %s", path, path, o.snapshot)
	}
	f := &fleetDef{model: gpu.Name}
	index := map[string]int{}
	for _, op := range opts.Configs {
		for _, c := range op.Counts {
			t := strings.ToLower(c.Type)
			if _, ok := index[t]; !ok {
				index[t] = len(f.types)
				f.types = append(f.types, t)
			}
		}
	}
	f.shares = sharesOf(f.types, gpu.MigProfiles())
	for _, op := range opts.Configs {
		c := config{name: op.Config, counts: make([]int, len(f.types))}
		for _, g := range op.Counts {
			c.counts[index[strings.ToLower(g.Type)]] += g.Count
		}
		f.configs = append(f.configs, c)
	}
	return f, nil
}

// migPartedDir is the mig-parted module's directory in the module
// cache, at the version this program was built with: its default config
// file is read from there, not copied.
func migPartedDir() (string, error) {
	const mod = "github.com/NVIDIA/mig-parted"
	version := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == mod {
				version = d.Version
			}
		}
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			home, _ := os.UserHomeDir()
			gopath = filepath.Join(home, "go")
		}
		cache = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
	}
	// The module cache spells an upper-case letter as ! and the letter.
	var esc strings.Builder
	for _, r := range mod {
		if r >= 'A' && r <= 'Z' {
			esc.WriteByte('!')
			r += 'a' - 'A'
		}
		esc.WriteRune(r)
	}
	dir := filepath.Join(cache, esc.String()+"@"+version)
	if version == "" {
		return "", fmt.Errorf("no -mig-config, and this build does not say its mig-parted version")
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no -mig-config, and the mig-parted module is not in the module cache (%v): go mod download %s fetches it", err, mod)
	}
	return dir, nil
}

// inRepository is the default snapshot, when the current directory is not
// the repository root, in the repository this was built from (go run).
func inRepository(path string) string {
	if path != defaultSnapshot {
		return path
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return path
	}
	if _, src, _, ok := runtime.Caller(0); ok {
		if alt := filepath.Join(filepath.Dir(src), "..", "..", "..", path); alt != path {
			if _, err := os.Stat(alt); err == nil {
				return alt
			}
		}
	}
	return path
}

// profileOf is a type's name without the model: the size a trace names.
func profileOf(typ string) string {
	if _, p, ok := strings.Cut(typ, "_"); ok {
		return p
	}
	return typ
}

// resolve maps a trace's profile to a type of the fleet: the type, its
// profile (1g.10gb), a generator's prefix (1g.: the smallest such), the
// GPU's model name (whole), or a share of one GPU from 0 to 1 (byFraction).
func (f *fleetDef) resolve(profile string) (int, bool) {
	if share, ok := gpuFraction(profile); ok {
		if share <= 0 || share > 1 {
			return -1, false
		}
		return f.byFraction(share)
	}
	p := strings.ToLower(strings.TrimSpace(profile))
	if model, _, ok := nvmlMIG(p); ok && !f.isModel(model) {
		return -1, false // another GPU's MIG device
	}
	if f.isModel(p) {
		p = gresgen.ShortModel(f.model)
	}
	p = migProfile(p)
	best := -1
	for t, typ := range f.types {
		switch {
		case typ == p || profileOf(typ) == p:
			return t, true
		case strings.HasSuffix(p, ".") && strings.HasPrefix(profileOf(typ), p) && !strings.Contains(typ, "+"):
			if best < 0 || profileOf(typ) < profileOf(f.types[best]) {
				best = t
			}
		}
	}
	return best, best >= 0
}

// isModel says whether name (lower case) names the fleet's GPU: any name of
// its family (NVIDIA H100 PCIe, h100) with no word of a MIG device (mig,
// 1g.10gb, 1g.), lest a device with a typo be read as a whole GPU.
func (f *fleetDef) isModel(name string) bool {
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '-' || r == '_' }) {
		if w == "mig" || migWord.MatchString(w) {
			return false
		}
	}
	return gresgen.ShortModel(name) == gresgen.ShortModel(f.model)
}

// migWord is a word that begins a MIG profile's name: 1g., 3c.
var migWord = regexp.MustCompile(`^[1-9][gc]\.`)

// nvmlMIG splits NVML's name of a MIG device, "<model> mig <profile>" in
// lower case, into the GPU's model and the profile.
func nvmlMIG(p string) (model, profile string, ok bool) {
	i := strings.LastIndex(p, " mig ")
	if i <= 0 {
		return "", "", false
	}
	return strings.TrimSpace(p[:i]), strings.TrimSpace(p[i+len(" mig "):]), true
}

// migProfilePattern is a MIG profile's name: compute slices, then memory.
var migProfilePattern = regexp.MustCompile(`^[1-9]g\.[0-9]+gb`)

// migProfile strips what other tools write before a MIG profile (NVML's
// "<model> MIG ", Kubernetes' nvidia.com/mig-, the device plugin's mig-,
// nvidia-smi -L's "MIG "), reads 1g.10gb.me as 1g.10gb+me; p is lower case.
func migProfile(p string) string {
	if _, mig, ok := nvmlMIG(p); ok {
		p = mig
	}
	for _, prefix := range []string{"nvidia.com/", "mig-", "mig "} {
		p = strings.TrimPrefix(p, prefix)
	}
	if base, ok := strings.CutSuffix(p, ".me"); ok && strings.Contains(base, "g.") {
		p = base + "+me"
	}
	return p
}

// fleetCounts is the devices of each type a layout (nodes per config)
// offers.
func fleetCounts(f *fleetDef, configs []config, x []int) []int {
	out := make([]int, len(f.types))
	for k, n := range x {
		for t, c := range configs[k].counts {
			out[t] += n * c
		}
	}
	return out
}

func layoutName(configs []config, x []int) string {
	var parts []string
	for k, n := range x {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d*%s", n, configs[k].name))
		}
	}
	return strings.Join(parts, "+")
}

// parseLayout reads -start: a config (every node) or N*CONFIG+...
func parseLayout(s string, f *fleetDef, nodes int) ([]int, error) {
	x := make([]int, len(f.configs))
	total := 0
	for _, part := range strings.Split(s, "+") {
		n, name := nodes, part
		if a, b, ok := strings.Cut(part, "*"); ok {
			v, err := strconv.Atoi(a)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("-start %q: %q is not a count", s, a)
			}
			n, name = v, b
		}
		k := -1
		for i, c := range f.configs {
			if c.name == name {
				k = i
			}
		}
		if k < 0 {
			return nil, fmt.Errorf("-start %q: no config %q holds these GPUs", s, name)
		}
		x[k] += n
		total += n
	}
	if total != nodes {
		return nil, fmt.Errorf("-start %q: %d nodes, not %d", s, total, nodes)
	}
	return x, nil
}
