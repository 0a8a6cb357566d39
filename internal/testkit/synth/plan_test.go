package synth

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// TestH100ProfilesAreReal holds the synthetic fleet's profile table to
// the real H100's snapshot, so that the plan benchmark reads what a real
// fleet's snapshots hold and no smaller.
func TestH100ProfilesAreReal(t *testing.T) {
	real, err := snapshot.Load(fixture.Path(t, "real/h100-snapshot-v2/snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := H100Profiles(), real.GPUs[0].MigProfiles(); !reflect.DeepEqual(got, want) {
		t.Errorf("H100Profiles() = %+v\nthe real H100's table is %+v", got, want)
	}
}

// TestPlanSnapshotsRead writes a node of each layout as gencluster -plan
// does and reads it back as plan does: the snapshots must pass the
// model's checks, or the benchmark would time a refusal.
func TestPlanSnapshotsRead(t *testing.T) {
	for i := range 10 {
		var b bytes.Buffer
		if err := snapshot.Write(&b, PlanSnapshot(i)); err != nil {
			t.Fatal(err)
		}
		n, err := snapshot.Parse(b.Bytes())
		if err != nil {
			t.Fatalf("node %d (%s): %v", i, PlanLayout(i), err)
		}
		if len(n.GPUs) != 8 {
			t.Errorf("node %d: %d GPUs, want 8", i, len(n.GPUs))
		}
	}
}
