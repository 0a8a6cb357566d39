package rebalance

import (
	"math"
	"testing"
)

// The builder's windows: rates over the recent and long windows (over
// what the history covers, when less), the mean run over the long
// window as it slides, the hourly peak, and each node's empty time.
func TestHistoryState(t *testing.T) {
	// Four jobs, each starting as it arrives: at 10 (running 60 min),
	// 20 (30 min), 100 and 110 (running on).
	h := NewHistory(1, 0)
	h.Arrive(0, 10)
	h.Start(0, 10)
	h.Arrive(0, 20)
	h.Start(0, 20)
	h.End(0, 50, 30)
	h.End(0, 70, 60)
	h.Arrive(0, 100)
	h.Start(0, 100)
	h.Arrive(0, 110)
	h.Start(0, 110)
	w := Windows{Recent: 60, Long: 100}
	nodes := []NodeNow{{Config: 0, Busy: []int{2}, Ends: []float64{100 + 90, 110 + 45}, LastChange: math.Inf(-1)}, {Config: 0, Busy: []int{0}, LastChange: 80}}
	s := h.State(120, w, []string{"1g"}, [][]int{{7}}, []int{3}, nodes)
	// Recent: 100 and 110 of the last 60 minutes; long: the same of the
	// last 100 (20 is as old as the window, and out, as in the
	// simulator).
	if s.Rate[0] != 2.0/60 || s.LongRate[0] != 2.0/100 || s.Window != 60 {
		t.Errorf("rate %v, long %v, window %v; want 2/60, 2/100, 60", s.Rate[0], s.LongRate[0], s.Window)
	}
	if s.Mean[0] != 45 || s.Peak[0] != 2 || s.Backlog[0] != 3 {
		t.Errorf("mean %v, peak %v, backlog %v; want 45, 2, 3", s.Mean[0], s.Peak[0], s.Backlog[0])
	}
	if s.Nodes[0].EmptyIn != 70 || s.Nodes[1].EmptyIn != 0 || !math.IsInf(s.Nodes[0].SinceChange, 1) || s.Nodes[1].SinceChange != 40 {
		t.Errorf("nodes %+v, want empty in 70 and 0, changed never and 40 minutes ago", s.Nodes)
	}
	// Later, the job that ended at 50 is older than the long window: the
	// mean is the other's, 60.
	s = h.State(155, w, []string{"1g"}, [][]int{{7}}, []int{0}, nil)
	if s.Mean[0] != 60 || s.LongRate[0] != 2.0/100 {
		t.Errorf("at 155: mean %v, long rate %v; want 60, 2/100", s.Mean[0], s.LongRate[0])
	}
	// A history that began at 100 counts its rates over what it covers.
	h = NewHistory(1, 100)
	h.Arrive(0, 110)
	s = h.State(130, w, []string{"1g"}, [][]int{{7}}, []int{0}, nil)
	if s.Rate[0] != 1.0/30 || s.LongRate[0] != 1.0/30 || s.Window != 30 {
		t.Errorf("short history: rate %v, long %v, window %v; want 1/30, 1/30, 30", s.Rate[0], s.LongRate[0], s.Window)
	}
}
