package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
)

// flakyAfterChange is the world with a slurmctld that does not answer
// the first scontrol show node after the flakeAt'th change command
// returns: repartition.sh has just restarted it, and on a busy cluster
// its first answers time out.
type flakyAfterChange struct {
	*world
	flakeAt int
	changes *int
	flake   *bool
}

func (f flakyAfterChange) Change(node, config string) error {
	err := f.world.Change(node, config)
	if *f.changes++; *f.changes == f.flakeAt {
		*f.flake = true
	}
	return err
}

func (f flakyAfterChange) Node(name string) (slurmhost.Node, error) {
	if *f.flake {
		*f.flake = false
		return slurmhost.Node{}, fmt.Errorf("scontrol show node %s: Socket timed out on send/recv operation", name)
	}
	return f.world.Node(name)
}

// TestCheckSlurmctldSilentIsNoFailedChange: an scontrol error at the check
// after the change command (slurmctld just restarted) is the run's error, not
// the change's failure: the next run finds the change, or the rollback, made.
func TestCheckSlurmctldSilentIsNoFailedChange(t *testing.T) {
	for _, c := range []struct {
		name    string
		fail    bool // mig-parted fails the change: the flake hits the rollback's check
		flakeAt int
		want    func(Outcome) bool
	}{
		{"after the change", false, 1, func(o Outcome) bool { return slices.Equal(o.Done, []string{"gpu01"}) && len(o.RolledBack) == 0 }},
		{"after the rollback", true, 2, func(o Outcome) bool { return slices.Equal(o.RolledBack, []string{"gpu01"}) && len(o.Failed) == 0 }},
	} {
		w := newWorld(t)
		w.failApply["all-balanced"] = c.fail
		f := flakyAfterChange{world: w, flakeAt: c.flakeAt, changes: new(int), flake: new(bool)}
		var events []string
		ctl := w.controller(&events)
		ctl.Slurm, ctl.Changer = f, f
		var all Outcome
		for run, changes := range [][]Change{{toBalanced}, nil, nil} {
			out, err := ctl.Run(changes)
			events = append(events, fmt.Sprintf("-- run %d: %+v, %v", run+1, out, err))
			all.Done = append(all.Done, out.Done...)
			all.RolledBack = append(all.RolledBack, out.RolledBack...)
			all.Failed = append(all.Failed, out.Failed...)
			if len(w.entries) == 0 {
				break
			}
		}
		wantRuns := 1
		if c.fail {
			wantRuns = 2
		}
		if !c.want(all) || w.changeRuns != wantRuns || len(w.entries) != 0 || w.drained || len(w.violations) > 0 {
			t.Errorf("%s: one scontrol timeout at the check: outcomes %+v, %d change runs (want %d), entries %v, drained %v (%s), violations %v\n%s",
				c.name, all, w.changeRuns, wantRuns, w.entries, w.drained, w.reason, w.violations, strings.Join(events, "\n"))
		}
	}
}
