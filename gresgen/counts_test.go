package gresgen

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Counts names and counts devices as Generate does, in every style and
// with a type map, and needs no cap minors: a node as plan makes it has
// none yet. Generate still refuses a MIG device without them.
func TestCountsAgree(t *testing.T) {
	for _, o := range []Options{
		{TypeStyle: StyleModel}, {TypeStyle: StyleProfile}, {TypeStyle: StyleAutodetect},
		{TypeMap: map[string]string{"h100": "hopper"}},
	} {
		cfg, err := Generate(node(), o)
		if err != nil {
			t.Fatal(err)
		}
		bare := node()
		migs := bare.GPUs[1].MigDevices
		for i := range migs {
			migs[i] = model.MigDevice{Profile: migs[i].Profile}
		}
		per, err := GPUCounts(bare, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if diff := cmp.Diff(cfg.Counts, SumCounts(per)); diff != "" {
			t.Errorf("%+v: counts differ from Generate's (-gen +counts):\n%s", o, diff)
		}
		want := [][]slurmconf.GresCount{{cfg.Counts[0]}, cfg.Counts[1:]}
		if diff := cmp.Diff(want, per); diff != "" {
			t.Errorf("%+v: per GPU (-want +got):\n%s", o, diff)
		}
		if _, err := Generate(bare, o); err == nil {
			t.Errorf("%+v: Generate took MIG devices without cap minors", o)
		}
	}
}

// Two MIG devices of one profile on two GPUs are one count, in the order
// first seen; a GPU in MIG mode with no MIG device counts nothing.
func TestSumCounts(t *testing.T) {
	n := &model.Node{GPUs: []model.GPU{
		{Index: 0, Name: "NVIDIA H100 80GB HBM3", MigEnabled: true, MigDevices: []model.MigDevice{{Profile: "3g.40gb"}, {Profile: "1g.10gb"}}},
		{Index: 1, Name: "NVIDIA H100 80GB HBM3", MigEnabled: true},
		{Index: 2, Name: "NVIDIA H100 80GB HBM3", MigEnabled: true, MigDevices: []model.MigDevice{{Profile: "1g.10gb"}, {Profile: "1g.10gb"}}},
		{Index: 3, Name: "NVIDIA H100 80GB HBM3"},
	}}
	per, err := GPUCounts(n, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := slurmconf.GresList(SumCounts(per))
	if want := "gpu:h100_3g.40gb:1,gpu:h100_1g.10gb:3,gpu:h100:1"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
