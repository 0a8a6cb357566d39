package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAbandonIsRecorded: a change given up at the drain timeout, its
// jobs still running, leaves one "abandoned" line in the record, however
// often a killed run repeats the step, so that the proposal takes the node
// again only once it is empty. Before, nothing recorded it, and the next
// run drained the node again for as long as its jobs ran.
func TestAbandonIsRecorded(t *testing.T) {
	for k := 1; ; k++ {
		w := newWorld(t)
		var events []string
		w.jobs = 1 // outlives the drain timeout
		if out, _ := w.controller(&events).Run([]Change{toBalanced}); !slices.Equal(out.Waiting, []string{"gpu01"}) {
			t.Fatalf("first run: %+v\n%s", out, strings.Join(events, "\n"))
		}
		w.now = w.now.Add(2 * time.Hour)
		w.ticks, w.killAt = 0, k
		_, wasKilled := w.run(&events)
		w.killAt = -1
		w.controller(&events).Run(nil)
		if len(w.entries) != 0 || w.drained || len(w.recorded) != 1 || !strings.HasSuffix(w.recorded[0], " gpu01 "+OutcomeAbandoned) {
			t.Errorf("killed before action %d: entries %v, drained %v, recorded %q\n%s", k, w.entries, w.drained, w.recorded, strings.Join(events, "\n"))
		}
		if !wasKilled {
			return
		}
	}
}
