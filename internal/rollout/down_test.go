package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
)

// downed is the world where the node has crashed: slurmctld shows it
// DOWN (its jobs killed), keeping the drain's reason, ours, as it keeps
// any reason already set (node_mgr.c: only a NULL or "Not responding"
// reason is replaced).
type downed struct{ *world }

func (d downed) Node(name string) (slurmhost.Node, error) {
	st, err := d.world.Node(name)
	st.State = strings.Replace(st.State, "IDLE", "DOWN", 1)
	return st, err
}

// TestWaitKeepsADownNodeOut: a node that crashes while it empties
// (DOWN+DRAIN, our reason kept) is not resumed at the drain timeout as if
// jobs still ran; once slurmctld has it back, the change goes on.
func TestWaitKeepsADownNodeOut(t *testing.T) {
	w := newWorld(t)
	var events []string
	c := w.controller(&events)
	w.jobs = 1 // a job starts between the proposal and the drain
	if out, err := c.Run([]Change{toBalanced}); err != nil || !slices.Equal(out.Waiting, []string{"gpu01"}) {
		t.Fatalf("%v, %+v", err, out)
	}
	// The node crashes: slurmd gone, its job killed, slurmctld marks it DOWN.
	w.jobs, w.slurmdUp = 0, false
	c.Slurm = downed{w}
	w.now = w.now.Add(2 * time.Hour) // past the drain timeout of 1 h
	out, err := c.Run(nil)
	got := strings.Join(events, "\n")
	if !w.drained || len(w.violations) > 0 || strings.Contains(got, "jobs still run there after") {
		t.Errorf("a DOWN node past the drain timeout: %v, %+v, drained %v, violations %v\n%s", err, out, w.drained, w.violations, got)
	}
	// slurmd is back: IDLE+DRAIN, empty.
	w.slurmdUp, c.Slurm = true, w
	if out, err := c.Run(nil); err != nil || !slices.Equal(out.Done, []string{"gpu01"}) || w.drained || len(w.violations) > 0 {
		t.Errorf("the node back: %v, %+v, drained %v, violations %v\n%s", err, out, w.drained, w.violations, strings.Join(events, "\n"))
	}
}
