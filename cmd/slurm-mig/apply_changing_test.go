package main

import (
	"strings"
	"testing"
)

// TestApplyDrainsNoSecondNodeForTheSameJobs: with --max-nodes 2 and
// Propose (no --history), the journal's changes in progress were not told
// to the proposal (only byPolicy read them). Run 1 drains gpu01 for the
// seven waiting 1g.10gb jobs; a CPU job keeps it busy. Run 2 saw gpu01
// drained (held), the same seven jobs still pending, and drained and
// changed gpu02 for them too: two nodes out of service, and two
// converted, for demand one node serves. The docs promise the opposite for the
// policy ("capacity on its way ... so the same shift asks for no second
// node"); Propose's changes need the same.
func TestApplyDrainsNoSecondNodeForTheSameJobs(t *testing.T) {
	r := newApplyRig(t, "gpu01", "gpu02")
	r.set("gpu01", "cpus", "2")
	r.set("gpu01", "state", "MIXED")
	code, stdout, stderr := r.run(r.args("--max-nodes", "2"))
	if code != 0 || !strings.Contains(stdout, "gpu01 wait: waiting") {
		t.Fatalf("run 1: exit %d, want gpu01 drained and waiting for its CPU job\nstdout:\n%sstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = r.run(r.args("--max-nodes", "2"))
	if strings.Contains(r.calls(), "NodeName=gpu02 State=DRAIN") {
		t.Errorf("run 2 (exit %d) drained gpu02 for the seven jobs gpu01 is already draining for\nstdout:\n%sstderr:\n%s", code, stdout, stderr)
	}
}
