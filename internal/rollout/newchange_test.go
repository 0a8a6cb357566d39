package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// drainRefused is the world with a slurmctld that refuses the drain
// (scontrol update times out, or slurmctld denies it).
type drainRefused struct{ *world }

func (d drainRefused) Drain(name, reason string) error {
	return fmt.Errorf("scontrol update NodeName=%s State=DRAIN: Socket timed out on send/recv operation", name)
}

// TestNewChangeErrorIsLogged: a new change whose first step errs (its drain
// refused) has its error event, and the changes after it are said skipped.
func TestNewChangeErrorIsLogged(t *testing.T) {
	w := newWorld(t)
	var events []string
	c := w.controller(&events)
	c.Slurm = drainRefused{w}
	other := toBalanced
	other.Node = "gpu02"
	out, err := c.Run([]Change{toBalanced, other})
	got := strings.Join(events, "\n")
	if err == nil || !strings.Contains(got, "gpu01 drain: error") || !slices.Equal(out.Skipped, []string{"gpu02"}) || !strings.Contains(got, "gpu02 drain: skipped") {
		t.Errorf("run error %v, outcome %+v, journal %v; events, want an error line for gpu01:\n%s", err, out, w.entries, got)
	}
}
