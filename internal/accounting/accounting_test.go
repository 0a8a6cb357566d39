package accounting

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Profile tables as NVML gives them (brief section 10; nvidia-smi mig
// -lgip): name, compute slices, memory slices of a placement.
type prof struct {
	name      string
	slices    int
	memSlices int
	cis       []string
}

var (
	h100 = []prof{{"1g.10gb", 1, 1, nil}, {"1g.10gb+me", 1, 1, nil}, {"1g.20gb", 1, 2, nil}, {"2g.20gb", 2, 2, nil},
		{"3g.40gb", 3, 4, []string{"1c.3g.40gb", "2c.3g.40gb"}}, {"4g.40gb", 4, 4, nil}, {"7g.80gb", 7, 8, nil}}
	a100_40 = []prof{{"1g.5gb", 1, 1, nil}, {"1g.10gb", 1, 2, nil}, {"2g.10gb", 2, 2, nil}, {"3g.20gb", 3, 4, nil},
		{"4g.20gb", 4, 4, nil}, {"7g.40gb", 7, 8, nil}}
	a100_80 = []prof{{"1g.10gb", 1, 1, nil}, {"1g.20gb", 1, 2, nil}, {"2g.20gb", 2, 2, nil}, {"3g.40gb", 3, 4, nil},
		{"4g.40gb", 4, 4, nil}, {"7g.80gb", 7, 8, nil}}
	a30 = []prof{{"1g.6gb", 1, 1, nil}, {"2g.12gb", 2, 2, nil}, {"4g.24gb", 4, 4, nil}}
)

func gpu(name string, table []prof, profiles ...string) model.GPU {
	g := model.GPU{Name: name, MigEnabled: len(profiles) > 0}
	var ps []model.GIProfile
	for i, p := range table {
		gp := model.GIProfile{ID: i, Name: p.name, Instances: 1, Slices: p.slices, Placements: []model.Placement{{Start: 0, Size: p.memSlices}}}
		for _, c := range p.cis {
			gp.CIProfiles = append(gp.CIProfiles, model.CIProfile{Name: c})
		}
		ps = append(ps, gp)
	}
	if ps != nil {
		g.Profiles = &model.ProfileTable{Profiles: ps}
	}
	for _, p := range profiles {
		g.MigDevices = append(g.MigDevices, model.MigDevice{Profile: p})
	}
	return g
}

func node(t *testing.T, name string, style gresgen.TypeStyle, typeMap map[string]string, gpus ...model.GPU) Node {
	t.Helper()
	n := &model.Node{Hostname: name, GPUs: gpus}
	for i := range n.GPUs {
		n.GPUs[i].Index = i
	}
	devs, err := gresgen.DeviceTypes(n, gresgen.Options{TypeStyle: style, TypeMap: typeMap})
	if err != nil {
		t.Fatal(err)
	}
	types, err := NodeTypes(n, devs)
	if err != nil {
		t.Fatal(err)
	}
	return Node{Name: name, Types: types}
}

// weightsOf reads TRESBillingWeights into a map, keys lower case.
func weightsOf(t *testing.T, s string) map[string]*big.Rat {
	t.Helper()
	m := map[string]*big.Rat{}
	for _, item := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(item, "=")
		if strings.HasPrefix(strings.ToLower(k), "mem") {
			continue // a suffixed weight of the site's, no gpu's
		}
		// Slurm reads each weight with strtod and sums doubles.
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("weight %q", item)
		}
		m[strings.ToLower(k)] = new(big.Rat).SetFloat64(f)
	}
	return m
}

// bill is what Slurm bills a job of one device of typ (empty: untyped)
// and cpus CPUs in a partition of weights w: it counts a typed job under
// gres/gpu and gres/gpu:<type>, an untyped one under gres/gpu, and sums
// (or, max, takes the largest).
func bill(w map[string]*big.Rat, typ string, cpus int64, max bool) *big.Rat {
	parts := []*big.Rat{new(big.Rat).Mul(big.NewRat(cpus, 1), orZero(w["cpu"])), orZero(w["gres/gpu"])}
	if typ != "" {
		parts = append(parts, orZero(w["gres/gpu:"+strings.ToLower(typ)]))
	}
	out := new(big.Rat)
	for _, p := range parts {
		if max {
			if p.Cmp(out) > 0 {
				out = p
			}
		} else {
			out.Add(out, p)
		}
	}
	return out
}

// close says a billing Slurm computes in doubles is the exact one, to
// the double's precision.
func close(got, want *big.Rat) bool {
	g, _ := got.Float64()
	w, _ := want.Float64()
	return math.Abs(g-w) <= 1e-15*math.Max(1, w)
}

func orZero(r *big.Rat) *big.Rat {
	if r == nil {
		return new(big.Rat)
	}
	return r
}

// mixedFleet: H100s split every way, CIs, 80 GB and 40 GB A100s, A30s,
// whole GPUs, in three partitions.
func mixedFleet(t *testing.T) []Node {
	return []Node{
		node(t, "h01", gresgen.StyleModel, nil,
			gpu("NVIDIA H100 80GB HBM3", h100, "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"),
			gpu("NVIDIA H100 80GB HBM3", h100, "3g.40gb", "2g.20gb", "1g.20gb"),
			gpu("NVIDIA H100 80GB HBM3", h100, "1c.3g.40gb", "2c.3g.40gb", "4g.40gb"),
			gpu("NVIDIA H100 80GB HBM3", h100)),
		node(t, "a01", gresgen.StyleModel, map[string]string{"NVIDIA A100-SXM4-40GB": "a100_40g"},
			gpu("NVIDIA A100-SXM4-40GB", a100_40, "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"),
			gpu("NVIDIA A100-SXM4-40GB", a100_40)),
		node(t, "a02", gresgen.StyleModel, nil,
			gpu("NVIDIA A100-SXM4-80GB", a100_80, "1g.10gb", "3g.40gb", "2g.20gb"),
			gpu("NVIDIA A30", a30, "1g.6gb", "1g.6gb", "2g.12gb")),
	}
}

func TestShares(t *testing.T) {
	for _, tc := range []struct {
		table           []prof
		profile         string
		compute, memory string
	}{
		{h100, "1g.10gb", "1/7", "1/8"},
		{h100, "1g.20gb", "1/7", "1/4"},
		{h100, "2g.20gb", "2/7", "1/4"},
		{h100, "3g.40gb", "3/7", "1/2"},
		{h100, "1c.3g.40gb", "1/7", "1/6"},
		{h100, "2c.3g.40gb", "2/7", "1/3"},
		{h100, "4g.40gb", "4/7", "1/2"},
		{h100, "7g.80gb", "1", "1"},
		{a100_40, "1g.10gb", "1/7", "1/4"},
		{a100_80, "1g.10gb", "1/7", "1/8"},
		{a30, "1g.6gb", "1/4", "1/4"},
		{a30, "2g.12gb", "1/2", "1/2"},
	} {
		g := gpu("x", tc.table)
		c, m, err := MigShare(&g, tc.profile)
		if err != nil {
			t.Fatalf("%s: %v", tc.profile, err)
		}
		if c.RatString() != tc.compute || m.RatString() != tc.memory {
			t.Errorf("%s: compute %s memory %s, want %s %s", tc.profile, c.RatString(), m.RatString(), tc.compute, tc.memory)
		}
	}
	g := gpu("x", nil)
	_, _, err := MigShare(&g, "1g.10gb")
	var h advice.Hinter
	if !errors.As(err, &h) || err.Error() != "no MIG profile table to size 1g.10gb by (a snapshot of schema 1?)" || h.Hint() != "; take it again with this slurm-mig's snapshot" {
		t.Errorf("no table: %v; want it said with the hint to take the snapshot again", err)
	}
}

// TestMixedFleetBillsEveryShare checks, by Slurm's own arithmetic
// (bill), that each type of a mixed fleet bills exactly its share times
// its GPU's weight, in every partition holding it, by either basis and
// either PriorityFlags form; an untyped job bills the partition's
// smallest share, never nothing; the partition keeps its CPU billing.
func TestMixedFleetBillsEveryShare(t *testing.T) {
	nodes := mixedFleet(t)
	w, err := ParseGPUWeights("1,h100=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, basis := range []Basis{Compute, Memory} {
		for _, max := range []bool{false, true} {
			flags := ""
			if max {
				flags = "MAX_TRES"
			}
			conf := &slurmconf.Accounting{TRES: "license/iop1", PriorityFlags: flags, Partitions: []slurmconf.PartitionConf{
				{Name: "all", Nodes: "ALL", Pos: "s:1"},
				{Name: "h", Nodes: "h01", Weights: "CPU=0.5,Mem=0.25G", HasWeights: true, Pos: "s:2"},
				{Name: "a", Nodes: "a[01-02]", Weights: "CPU=2,GRES/gpu=3", HasWeights: true, Pos: "s:3"},
				{Name: "cpu", Nodes: "c[1-9]", Pos: "s:4"},
			}}
			l, err := Make(nodes, Options{Basis: basis, Weights: w}, conf)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Partitions) != 3 {
				t.Fatalf("partitions %+v", l.Partitions)
			}
			tres := splitList(l.TRES)
			if tres[0] != "license/iop1" || tres[1] != "gres/gpu" {
				t.Errorf("TRES %s", l.TRES)
			}
			for _, p := range l.Partitions {
				wm := weightsOf(t, p.Weights)
				switch p.Name {
				case "all":
					if wm["cpu"].Cmp(big.NewRat(1, 1)) != 0 {
						t.Errorf("%s: %s: CPU billing lost", p.Name, p.Weights)
					}
				case "h":
					if !strings.HasPrefix(p.Weights, "CPU=0.5,Mem=0.25G,GRES/gpu=") {
						t.Errorf("%s: %s: site's weights not kept", p.Name, p.Weights)
					}
				case "a":
					if !strings.HasPrefix(p.Weights, "CPU=2,GRES/gpu=") || strings.Contains(p.Weights, "h100") {
						t.Errorf("%s: %s", p.Name, p.Weights)
					}
				}
				low := new(big.Rat).SetInt64(1 << 30)
				for _, n := range nodes {
					in, _ := conf.Partitions[slicesIndex(conf.Partitions, p.Name)].Holds(n.Name)
					if !in {
						continue
					}
					for _, ty := range n.Types {
						gw, _ := w.Of(ty.Model)
						want := new(big.Rat).Mul(gw, ty.Share(basis))
						if want.Cmp(low) < 0 {
							low = want
						}
						if !containsFold(tres, "gres/gpu:"+ty.Name) {
							t.Errorf("TRES lacks %s: %s", ty.Name, l.TRES)
						}
						got := bill(wm, ty.Name, 0, max)
						if !close(got, want) {
							t.Errorf("%s %s max=%v: %s bills %s, want %s (%s)", basis, p.Name, max, ty.Name, got.RatString(), want.RatString(), p.Weights)
						}
					}
				}
				if got := bill(wm, "", 0, max); !close(got, low) || got.Sign() <= 0 {
					t.Errorf("%s %s: untyped bills %s, want the smallest share %s", basis, p.Name, got.RatString(), low.RatString())
				}
			}
		}
	}
}

func slicesIndex(ps []slurmconf.PartitionConf, name string) int {
	for i, p := range ps {
		if p.Name == name {
			return i
		}
	}
	return -1
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// TestOneNameTwoSizes: 1g.10gb is 1/8 of an 80 GB A100's memory and 2/8
// of a 40 GB one's. Under one name (the short model a100 for both) the
// memory basis refuses it; compute (1/7 both) does not. Profile style
// collides across H100 and A100-80GB only where their weights differ.
func TestOneNameTwoSizes(t *testing.T) {
	nodes := []Node{
		node(t, "a1", gresgen.StyleModel, nil, gpu("NVIDIA A100-SXM4-80GB", a100_80, "1g.10gb")),
		node(t, "a2", gresgen.StyleModel, nil, gpu("NVIDIA A100-SXM4-40GB", a100_40, "1g.10gb")),
	}
	w, _ := ParseGPUWeights("")
	if _, err := Make(nodes, Options{Basis: Memory, Weights: w}, nil); err == nil || !strings.Contains(err.Error(), "type a100_1g.10gb bills 0.125 on node a1") {
		t.Errorf("memory: %v", err)
	}
	if _, err := Make(nodes, Options{Basis: Compute, Weights: w}, nil); err != nil {
		t.Errorf("compute: %v", err)
	}
	prof := []Node{
		node(t, "h1", gresgen.StyleProfile, nil, gpu("NVIDIA H100 80GB HBM3", h100, "1g.10gb")),
		node(t, "a1", gresgen.StyleProfile, nil, gpu("NVIDIA A100-SXM4-80GB", a100_80, "1g.10gb")),
	}
	if _, err := Make(prof, Options{Basis: Memory, Weights: w}, nil); err != nil {
		t.Errorf("profile style, one weight: %v", err)
	}
	w2, _ := ParseGPUWeights("h100=2,a100=1")
	if _, err := Make(prof, Options{Basis: Memory, Weights: w2}, nil); err == nil || !strings.Contains(err.Error(), "type 1g.10gb bills") {
		t.Errorf("profile style, two weights: %v", err)
	}
}

func TestNoConf(t *testing.T) {
	n := node(t, "h01", gresgen.StyleModel, nil,
		gpu("NVIDIA H100 80GB HBM3", h100, "1g.10gb", "1g.10gb", "3g.40gb"), gpu("NVIDIA H100 80GB HBM3", h100))
	w, _ := ParseGPUWeights("7")
	l, err := Make([]Node{n}, Options{Basis: Compute, Weights: w}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.TRES != "gres/gpu,gres/gpu:h100_1g.10gb,gres/gpu:h100_3g.40gb,gres/gpu:h100" {
		t.Errorf("TRES %s", l.TRES)
	}
	want := "CPU=1,GRES/gpu=1,GRES/gpu:h100_1g.10gb=0,GRES/gpu:h100_3g.40gb=2,GRES/gpu:h100=6"
	if len(l.Partitions) != 1 || l.Partitions[0].Name != "DEFAULT" || l.Partitions[0].Weights != want {
		t.Errorf("partitions %+v, want %s", l.Partitions, want)
	}
}

// TestUpdateKeepsOtherTypes: one node's update of a partition whose
// weights bill other nodes' types keeps their billing.
func TestUpdateKeepsOtherTypes(t *testing.T) {
	n := node(t, "h01", gresgen.StyleModel, nil, gpu("NVIDIA H100 80GB HBM3", h100, "2g.20gb"))
	w, _ := ParseGPUWeights("7")
	conf := &slurmconf.Accounting{Partitions: []slurmconf.PartitionConf{
		{Name: "p", Nodes: "h[01-02]", Weights: "CPU=1,GRES/gpu=1,GRES/gpu:h100_1g.10gb=0,GRES/gpu:h100=6", HasWeights: true}}}
	l, err := Make([]Node{n}, Options{Basis: Compute, Weights: w}, conf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Partitions[0].Weights, "CPU=1,GRES/gpu=1,GRES/gpu:h100_1g.10gb=0,GRES/gpu:h100=6,GRES/gpu:h100_2g.20gb=1"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestWeights(t *testing.T) {
	for _, bad := range []string{"0", "-1", "x", "1,2", "h100=1,h100=2", "=3", "1/7", "1e3"} {
		if _, err := ParseGPUWeights(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	w, _ := ParseGPUWeights("h100=2")
	_, err := w.Of("a100")
	var h advice.Hinter
	if !errors.As(err, &h) || err.Error() != "no GPU weight for model a100 (weights are given for h100 only)" || h.Hint() != "; add a100=NUMBER, or a bare NUMBER for every other model" {
		t.Errorf("a100: %v; want it said with the hint to add its weight", err)
	}
	for r, s := range map[*big.Rat]string{big.NewRat(1, 7): "0.14285714285714285", big.NewRat(1, 8): "0.125", big.NewRat(6, 1): "6", big.NewRat(2, 7): "0.2857142857142857"} {
		if got := formatWeight(r); got != s {
			t.Errorf("%s: %s, want %s", r.RatString(), got, s)
		}
	}
}

// TestCheck: a site that bills GPUs hears of each type its accounting
// lines leave out, and what a job on it is billed; lines as Make writes
// them are clean; a site that bills no GPU hears nothing.
func TestCheck(t *testing.T) {
	nodes := []slurmconf.SlurmNode{
		{Nodes: "h[01-04]", Gres: "gpu:h100_1g.10gb:7,gpu:h100:1", Pos: "s:3"},
		{Nodes: "a[1-2]", Gres: "gpu:a100:4,mps:100", Pos: "s:4"},
		{Nodes: "c1", Pos: "s:5"},
	}
	a := &slurmconf.Accounting{TRES: "gres/gpu,gres/gpu:h100", TRESPos: "s:2", Partitions: []slurmconf.PartitionConf{
		{Name: "gpu", Nodes: "h[01-04]", Weights: "CPU=1,GRES/gpu=1", HasWeights: true, Pos: "s:6"},
		{Name: "all", Nodes: "ALL", Pos: "s:7"},
		{Name: "a", Nodes: "a[1-2]", Weights: "CPU=1,GRES/gpu:a100=2", HasWeights: true, Pos: "s:8"},
		{Name: "cpu", Nodes: "c1", Weights: "CPU=1", HasWeights: true, Pos: "s:9"},
	}}
	var got []string
	for _, p := range Check(nodes, a) {
		got = append(got, p.Pos+" "+p.Message)
	}
	want := []string{
		"s:3 NodeName=h[01-04] declares gpu type h100_1g.10gb, which AccountingStorageTRES (s:2) does not track",
		"s:4 NodeName=a[1-2] declares gpu type a100, which AccountingStorageTRES (s:2) does not track",
		"s:6 PartitionName=gpu weighs no GRES/gpu:h100_1g.10gb, GRES/gpu:h100: a job on one of them there is billed the GRES/gpu weight, 1,",
		"s:7 PartitionName=all has no TRESBillingWeights: it bills CPUs only, and a job on h100_1g.10gb, h100, a100 there nothing for its GPU",
		"s:8 PartitionName=a weighs GRES/gpu:a100, which AccountingStorageTRES does not track: slurmctld does not start",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
	// No GPU weight anywhere: the site bills no GPU, and hears nothing.
	a.Partitions = []slurmconf.PartitionConf{{Name: "all", Nodes: "ALL", Pos: "s:7"}}
	if p := Check(nodes, a); len(p) != 0 {
		t.Errorf("a site billing no GPU: %v", p)
	}
	// The lines Make writes for these nodes are clean.
	w, _ := ParseGPUWeights("")
	l, err := Make([]Node{
		node(t, "h01", gresgen.StyleModel, nil, gpu("NVIDIA H100 80GB HBM3", h100, "1g.10gb"), gpu("NVIDIA H100 80GB HBM3", h100)),
		node(t, "a1", gresgen.StyleModel, nil, gpu("NVIDIA A100-SXM4-80GB", a100_80)),
	}, Options{Weights: w}, &slurmconf.Accounting{Partitions: []slurmconf.PartitionConf{{Name: "all", Nodes: "ALL", Pos: "s:7"}}})
	if err != nil {
		t.Fatal(err)
	}
	a = &slurmconf.Accounting{TRES: l.TRES, Partitions: []slurmconf.PartitionConf{{Name: "all", Nodes: "ALL", Weights: l.Partitions[0].Weights, HasWeights: true, Pos: "s:7"}}}
	if p := Check([]slurmconf.SlurmNode{{Nodes: "h01", Gres: "gpu:h100_1g.10gb:1,gpu:h100:1"}, {Nodes: "a1", Gres: "gpu:a100:1"}}, a); len(p) != 0 {
		t.Errorf("Make's own lines: %v", p)
	}
}
