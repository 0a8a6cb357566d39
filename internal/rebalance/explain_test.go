package rebalance

import (
	"strings"
	"testing"
)

// sameSlices gives every node of states the one table s.
func sameSlices(states map[string]NodeState, s Slices) map[string]Slices {
	out := map[string]Slices{}
	for name := range states {
		out[name] = s
	}
	return out
}

// explainOne runs Explain on scontrol lines and one job, with the real
// H100's profile table (1g.10gb 1 slice, 2g.20gb 2, 3g.40gb 4, 7g.80gb 8).
func explainOne(t *testing.T, nodesText string, j Job) Explanation {
	t.Helper()
	states, err := ParseNodes("nodes.txt", []byte(nodesText))
	if err != nil {
		t.Fatal(err)
	}
	out := Explain(states, []Job{j}, sameSlices(states, SlicesOf(h100Node(t, "ref"))))
	if len(out) != 1 {
		t.Fatalf("explanations %+v, want one for job %s", out, j.ID)
	}
	return out[0]
}

// The job asks two 3g.40gb of one node; gpu01 has two 3g.40gb, one busy
// and one idle. The admin read
//
//	"busy: all 2 h100_3g.40gb devices (on gpu01) are busy"
//
// though scontrol's GresUsed= says one of the two is idle: the count in
// the detail was the node's total. It now counts the busy ones.
func TestExplainBusyCountsTheBusy(t *testing.T) {
	e := explainOne(t,
		"NodeName=gpu01 Gres=gpu:h100_3g.40gb:2 State=MIXED GresUsed=gpu:h100_3g.40gb:1(IDX:0) AllocTRES=cpu=1\n",
		job("3001", "h100_3g.40gb", 2, 30))
	if e.Why == WaitBusy && strings.Contains(e.Detail, "all 2 h100_3g.40gb devices") {
		t.Errorf("%s: %s\nbut GresUsed= says 1 of gpu01's 2 h100_3g.40gb is idle: not all are busy", e.Why, e.Detail)
	}
}

// The job asks two 2g.20gb of one node. gpu01 (3g.40gb busy; one
// 2g.20gb and two 1g.10gb idle: 2 + 1 + 1 = 4 idle slices, a 2g.20gb's
// worth twice) would start it under a new layout: the idle 2g.20gb and
// the two idle 1g.10gb beside it make room for a second 2g.20gb. gpu02's
// three 2g.20gb are busy. Explain subtracted gpu01's idle 2g.20gb from
// its idle slices and then still asked for slices for both devices
// (2 < 4), so it said
//
//	"busy: all 3 h100_2g.20gb devices (on gpu02) are busy, and no node has idle slices enough"
//
// which is false twice: gpu01's 2g.20gb is idle, and gpu01 has the idle
// slices. By the doc, "busy" is "every device of it is in use: the job
// waits for a running job to end"; here a new layout on gpu01 starts it
// (fragmentation).
func TestExplainIdleDevicesOfTheJobsOwnTypeCountTowardItsSlices(t *testing.T) {
	e := explainOne(t,
		"NodeName=gpu01 Gres=gpu:h100_3g.40gb:1,gpu:h100_2g.20gb:1,gpu:h100_1g.10gb:2 State=MIXED GresUsed=gpu:h100_3g.40gb:1(IDX:0),gpu:h100_2g.20gb:0(IDX:N/A),gpu:h100_1g.10gb:0(IDX:N/A) AllocTRES=cpu=1\n"+
			"NodeName=gpu02 Gres=gpu:h100_2g.20gb:3 State=MIXED GresUsed=gpu:h100_2g.20gb:3(IDX:0-2) AllocTRES=cpu=3\n",
		job("3002", "h100_2g.20gb", 2, 30))
	if e.Why != WaitFragmented {
		t.Errorf("%s: %s\nwant %s: gpu01 has 4 idle slices (an idle 2g.20gb and two idle 1g.10gb), enough for 2 x 2", e.Why, e.Detail, WaitFragmented)
	}
}

// A 7g.80gb job; gpu01's 7g.80gb is busy, gpu02 is a whole idle H100 in
// seven 1g.10gb (all idle: nothing runs on the GPU). Re-laid out, gpu02
// starts the job at once. Explain counted gpu02's idle slices as 7 x 1
// (a 1g.10gb's placement size), not the GPU's 8: seven 1g.10gb can never
// use slice 7 (1g.10gb placements start at 0..6), so a GPU entirely idle
// in that layout never counted as room for a 7g.80gb, nor did one in
// three 2g.20gb (6 slices). The admin was told
//
//	"busy: all 1 h100_7g.80gb devices (on gpu01) are busy, and no node has idle slices enough"
//
// and waited, where a new layout on gpu02 starts the job. Likewise a
// node whose GPU is whole (Gres=gpu:h100:1, MIG off) and idle counted 0
// slices (its type names no profile). A node with nothing running now
// counts all its GPUs' slices, and an idle whole GPU all of its own.
func TestExplainAnIdleGPUHoldsAll8Slices(t *testing.T) {
	busy7g := "NodeName=gpu01 Gres=gpu:h100_7g.80gb:1 State=MIXED GresUsed=gpu:h100_7g.80gb:1(IDX:0) AllocTRES=cpu=1\n"
	for name, gpu02 := range map[string]string{
		"seven idle 1g.10gb": "NodeName=gpu02 Gres=gpu:h100_1g.10gb:7 State=IDLE GresUsed=gpu:h100_1g.10gb:0(IDX:N/A) AllocTRES=\n",
		"three idle 2g.20gb": "NodeName=gpu02 Gres=gpu:h100_2g.20gb:3 State=IDLE GresUsed=gpu:h100_2g.20gb:0(IDX:N/A) AllocTRES=\n",
		"an idle whole H100": "NodeName=gpu02 Gres=gpu:h100:1 State=IDLE GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=\n",
	} {
		e := explainOne(t, busy7g+gpu02, job("3003", "h100_7g.80gb", 1, 30))
		if e.Why == WaitBusy {
			t.Errorf("gpu02 %s: %s: %s\nbut gpu02's GPU is entirely idle: a new layout there starts the job", name, e.Why, e.Detail)
		}
	}
}
