package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York on a host without a zone database

	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
)

// inNewYork runs the test with the controller's local time in a zone
// whose clocks go back at 02:00 EDT on 2026-11-01.
func inNewYork(t *testing.T) *time.Location {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	local := time.Local
	time.Local = ny
	t.Cleanup(func() { time.Local = local })
	return ny
}

// TestChangeAcrossTheClocksGoingBack: slurmd last started at 01:30 EDT,
// and the change restarts it at 01:05 EST, 35 minutes later. In local
// time the new start reads earlier than the old one, and the change
// was taken for failed and rolled back; in UTC it is later.
func TestChangeAcrossTheClocksGoingBack(t *testing.T) {
	ny := inNewYork(t)
	w := newWorld(t)
	w.slurmdStart = time.Unix(1793511000, 0).In(ny) // 01:30 EDT, 05:30 UTC
	w.now = w.slurmdStart.Add(35 * time.Minute)     // 01:05 EST
	var events []string
	out, _ := w.run(&events)
	if !slices.Equal(out.Done, []string{"gpu01"}) || w.layout != "all-balanced" || w.drained || len(w.violations) > 0 {
		t.Fatalf("outcome %+v, layout %s, drained %v, violations %v\n%s", out, w.layout, w.drained, w.violations, strings.Join(events, "\n"))
	}
}

// TestRegisteredReadsEitherJournal: the slurmd start before the step is
// kept in RFC 3339, in UTC; a journal an earlier version wrote holds
// scontrol's local time, with no zone, and is read in the local zone.
func TestRegisteredReadsEitherJournal(t *testing.T) {
	inNewYork(t)
	gres := counts["all-balanced"]
	since := time.Unix(1793511000, 0)
	for _, c := range []struct {
		before, start string
		want          bool
	}{
		{"2026-11-01T05:30:00Z", "2026-11-01T06:05:00", true},  // 01:30 EDT, then 01:05 EST
		{"2026-11-01T06:05:00Z", "2026-11-01T05:30:00", false}, // the other way round
		{"2026-11-01T00:30:00", "2026-11-01T05:30:00", true},   // local 00:30 EDT is 04:30 UTC
		{"2026-11-01T03:00:00", "2026-11-01T06:05:00", false},  // local 03:00 EST is 08:00 UTC
	} {
		e := &Entry{Since: since, SlurmdBefore: c.before}
		st := slurmhost.Node{Gres: gres, State: "IDLE+DRAIN", SlurmdStart: c.start}
		if got := registered(e, st, gres); got != c.want {
			t.Errorf("slurmd before %q, now %q (UTC): registered = %v, want %v", c.before, c.start, got, c.want)
		}
	}
}
