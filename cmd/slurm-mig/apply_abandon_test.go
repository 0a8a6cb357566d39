package main

import (
	"strings"
	"testing"
	"time"
)

// TestApplyHoldsAnAbandonedNode: rebalance proposes a node whose
// GPU is idle though CPU jobs run there (rebalance.txtar's gpu02), and
// --apply drains it and waits for them. A CPU job that outlives
// --drain-timeout (4h) gets the change abandoned and the node resumed.
// Nothing recorded that (changes.log kept done and rolled back only, and
// Propose read no journal), so the very next run proposed the same node
// for the same jobs and drained it for another 4h: drained about 4h of
// every 4h10m for as long as the CPU job ran, every run exiting 0. Now
// the abandon is recorded, and the node held while a job runs there.
// Here with --drain-timeout 1s: drain, abandon, and no second drain.
func TestApplyHoldsAnAbandonedNode(t *testing.T) {
	r := newApplyRig(t, "gpu01")
	r.set("gpu01", "cpus", "2")
	r.set("gpu01", "state", "MIXED")
	for i, want := range []string{"gpu01 wait: waiting", "gpu01 wait: abandoned"} {
		code, stdout, stderr := r.run(r.args("--drain-timeout", "1s"))
		if !strings.Contains(stdout, want) {
			t.Fatalf("run %d: exit %d, want %q\nstdout:\n%sstderr:\n%s", i+1, code, want, stdout, stderr)
		}
		time.Sleep(1500 * time.Millisecond)
	}
	if r.get("gpu01", "state") != "MIXED" {
		t.Fatalf("after the abandon gpu01 is %s, want MIXED (resumed)", r.get("gpu01", "state"))
	}
	code, stdout, stderr := r.run(r.args("--drain-timeout", "1s"))
	if n := strings.Count(r.calls(), "NodeName=gpu01 State=DRAIN"); n > 1 {
		t.Errorf("the run after the abandon (exit %d) drained gpu01 again, for the same jobs and the same CPU job (%d drains)\nstdout:\n%sstderr:\n%s",
			code, n, stdout, stderr)
	}
}
