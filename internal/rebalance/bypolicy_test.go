package rebalance

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Real sacct of Slurm 22.05.8 (a loopback cluster with slurmdbd, the
// accounting that slurm-mig writes): a 1g.10gb job, a whole-GPU job, and
// a --gres=gpu:1 job whose type only AllocTRES names.
func TestParseHistoryReadsSacct2205(t *testing.T) {
	data, err := os.ReadFile("testdata/sacct-22.05.8.txt")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ParseHistory("sacct.txt", data, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s %s:%d %v %s %s %v", r.ID, r.Type, r.Count, r.Nodes, r.State, r.End.Sub(r.Start), r.Limit))
	}
	want := []string{
		"17 a100_1g.10gb:1 [vm] COMPLETED 3s +Inf",
		"18 a100:1 [vm] COMPLETED 3s +Inf",
		"19 a100:1 [vm] COMPLETED 3s +Inf",
	}
	if !slices.Equal(got, want) {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseHistoryFields(t *testing.T) {
	for in, want := range map[string]float64{"01:00:00": 60, "1-00:00:00": 1440, "2-12:30:00": 3630, "30:00": 30, "45": 45, "00:00:30": 0.5} {
		if got, err := sacctLimit(in); err != nil || got != want {
			t.Errorf("sacctLimit(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, _ := sacctLimit("Partition_Limit"); !math.IsNaN(got) {
		t.Errorf("Partition_Limit: %v, want NaN (not said)", got)
	}
	for in, want := range map[string]int{"12": 1, "12_3": 1, "12_[1-8%2]": 8, "12_[1,4-5]": 3} {
		if got, err := arrayTasks(in); err != nil || got != want {
			t.Errorf("arrayTasks(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// A pending array; a running job on two nodes; a job of two types
	// (no one type).
	text := "20_[1-4]|2026-11-28T10:00:00|Unknown|Unknown|01:00:00|None assigned|PENDING|billing=1,gres/gpu:a100_1g.10gb=1,gres/gpu=1|\n" +
		"21|2026-11-28T10:00:00|2026-11-28T10:01:00|Unknown|2:00:00|gpu[01-02]|RUNNING|gres/gpu:a100=2|gres/gpu:a100=2,gres/gpu=2\n" +
		"22|2026-11-28T10:00:00|None|2026-11-28T10:05:00|1:00:00||CANCELLED by 0|gres/gpu:a100=1,gres/gpu:a100_1g.10gb=1|\n"
	recs, err := ParseHistory("h.txt", []byte(text), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[0]; r.Tasks != 4 || r.Type != "a100_1g.10gb" || !r.Start.IsZero() || r.Nodes != nil {
		t.Errorf("pending array: %+v", r)
	}
	if r := recs[1]; r.Limit != 120 || !slices.Equal(r.Nodes, []string{"gpu01", "gpu02"}) || r.Count != 2 || !r.End.IsZero() {
		t.Errorf("running job: %+v", r)
	}
	if r := recs[2]; r.Type != "" || !r.Start.IsZero() {
		t.Errorf("two types: %+v", r)
	}
	for _, bad := range []struct {
		line       string
		timeFormat bool // a time, which SLURM_TIME_FORMAT=standard would mend
	}{
		{"1|2026-11-28T10:00:00|Unknown|Unknown|01:00:00|None assigned|PENDING|", false},                 // 8 fields
		{"1|yesterday|Unknown|Unknown|01:00:00|None assigned|PENDING||", true},                           // a time
		{"1|2026-11-28 10:00:00|Unknown|Unknown|01:00:00|None assigned|PENDING||", true},                 // SLURM_TIME_FORMAT="%F %T"
		{"1|2026-11-28T10:00:00|Unknown|Unknown|1:xx|None assigned|PENDING||", false},                    // a limit
		{"1|2026-11-28T10:00:00|Unknown|Unknown|01:00:00|None assigned|PENDING|gres/gpu:a100=x|", false}, // a count
	} {
		_, err := ParseHistory("h.txt", []byte("\n"+bad.line+"\n"), time.UTC)
		if err == nil || !strings.HasPrefix(err.Error(), "h.txt:2: ") {
			t.Errorf("%q: error %v, want one naming h.txt:2", bad.line, err)
		}
		var h advice.Hinter
		if hinted := errors.As(err, &h) && strings.Contains(h.Hint(), "SLURM_TIME_FORMAT=standard"); hinted != bad.timeFormat {
			t.Errorf("%q: %v, hint of SLURM_TIME_FORMAT %v, want %v", bad.line, err, hinted, bad.timeFormat)
		}
	}
}

// policyInput is three nodes of one kind ("small": 56 1g, "large": 8
// 7g), gpu01 and gpu02 small, gpu03 large, and a day of sacct's jobs:
// each type's jobs arrive evenly at its rate, and run an hour, the
// last hour's still running (on gpu01 for 1g, gpu03 for 7g, with a
// two-hour limit). From shiftAt minutes before now the rates are the
// shifted ones.
func policyInput(t *testing.T, rate1g, rate7g, shifted1g, shifted7g, shiftAt float64, backlog7g int) SlurmInput {
	t.Helper()
	opts := &Options{Configs: []Option{
		{Config: "large", Counts: []slurmconf.GresCount{{Name: "gpu", Type: "7g", Count: 8}}},
		{Config: "small", Counts: []slurmconf.GresCount{{Name: "gpu", Type: "1g", Count: 56}}},
	}}
	small, large := opts.Configs[1].Counts, opts.Configs[0].Counts
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	in := SlurmInput{Now: now, Nodes: []Node{
		{Name: "gpu01", Current: small, Options: opts},
		{Name: "gpu02", Current: small, Options: opts},
		{Name: "gpu03", Current: large, Options: opts},
	}}
	busy := map[string]int{}
	id := 0
	for _, typ := range []string{"1g", "7g"} {
		r, s := rate1g, shifted1g
		node := "gpu01"
		if typ == "7g" {
			r, s, node = rate7g, shifted7g, "gpu03"
		}
		for at := -1440.0; at < 0; {
			rate := r
			if at >= -shiftAt {
				rate = s
			}
			if rate <= 0 {
				at += 1
				continue
			}
			id++
			sub := now.Add(time.Duration(at * float64(time.Minute)))
			rec := Record{ID: fmt.Sprint(id), Submit: sub, Start: sub, Limit: 120, State: "COMPLETED", Type: typ, Count: 1, Tasks: 1, Nodes: []string{node}}
			if at > -60 {
				rec.State = "RUNNING"
				busy[typ]++
			} else {
				rec.End = sub.Add(time.Hour)
			}
			in.History = append(in.History, rec)
			at += 1 / rate
		}
	}
	in.States = map[string]NodeState{
		"gpu01": {Name: "gpu01", State: "MIXED", Used: []slurmconf.GresCount{{Name: "gpu", Type: "1g", Count: busy["1g"]}}},
		"gpu02": {Name: "gpu02", State: "IDLE"},
		"gpu03": {Name: "gpu03", State: "MIXED", Used: []slurmconf.GresCount{{Name: "gpu", Type: "7g", Count: min(busy["7g"], 8)}}},
	}
	for i := range backlog7g {
		in.Jobs = append(in.Jobs, Job{ID: fmt.Sprint(9000 + i), Submit: now.Add(-time.Duration(backlog7g-i) * time.Minute), Nodes: 1, GPU: []Request{{Type: "7g", Count: 1}}})
	}
	return in
}

// With demand as it has been all day, the policy proposes nothing, and
// the state it decides from is the day's: the rates, an hour's mean run,
// the running jobs' limits.
func TestProposeByPolicyNoShiftNothing(t *testing.T) {
	in := policyInput(t, 0.5, 0.1, 0.5, 0.1, 0, 0)
	s := buildSlurmState(in, DefaultWindows())
	if !slices.Equal(s.state.Types, []string{"1g", "7g"}) || len(s.held) != 0 {
		t.Fatalf("types %v, held %v", s.state.Types, s.held)
	}
	for tt, want := range []float64{0.5, 0.1} {
		if math.Abs(s.state.Rate[tt]-want) > 0.02 || math.Abs(s.state.LongRate[tt]-want) > 0.01 || s.state.Mean[tt] != 60 {
			t.Errorf("%s: rate %v, long %v, mean %v; want %v, %v, 60", s.state.Types[tt], s.state.Rate[tt], s.state.LongRate[tt], s.state.Mean[tt], want, want)
		}
	}
	// gpu01's jobs started within the hour, each with two hours.
	if e := s.state.Nodes[0].EmptyIn; e <= 60 || e > 120 {
		t.Errorf("gpu01 empties in %v min, want the last job's limit (60 to 120)", e)
	}
	if e := s.state.Nodes[1].EmptyIn; e != 0 {
		t.Errorf("idle gpu02 empties in %v, want 0", e)
	}
	// A backlog that grew by chance changes nothing either, even the
	// one that moves a node once demand shifted (FollowsShift).
	for _, backlog := range []int{0, 5, 20} {
		in := policyInput(t, 0.5, 0.1, 0.5, 0.1, 0, backlog)
		p, err := ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Changes) != 0 {
			t.Errorf("backlog %d: changes %+v with unchanged demand", backlog, p.Changes)
		}
		if len(p.NodeLines) != 2 || p.Pending != backlog {
			t.Errorf("backlog %d: node lines %q, pending %d", backlog, p.NodeLines, p.Pending)
		}
	}
}

// Nodes of the same GPUs in other MIG layouts are of one kind: their
// Options, each node's own, have the same configs and counts.
func TestSlurmStateKindByContent(t *testing.T) {
	in := policyInput(t, 0.5, 0.1, 0.5, 0.1, 0, 0)
	own := *in.Nodes[2].Options
	in.Nodes[2].Options = &own
	if s := buildSlurmState(in, DefaultWindows()); len(s.held) != 0 {
		t.Errorf("held %+v: want none, the three nodes are of one kind", s.held)
	}
	other := Options{Configs: []Option{{Config: "large", Counts: []slurmconf.GresCount{{Name: "gpu", Type: "7g", Count: 4}}}}}
	in.Nodes[2].Options = &other
	if s := buildSlurmState(in, DefaultWindows()); len(s.held) != 1 || s.held[0].Node != "gpu03" || !strings.Contains(s.held[0].Why, "other GPUs than gpu01's") {
		t.Errorf("held %+v: want gpu03, of other GPUs", s.held)
	}
}

// Demand shifted six hours ago from 1g to 7g jobs, and 7g jobs queue:
// the idle small node gpu02 changes to large (not gpu01, whose 1g jobs
// run on for up to two hours), and the change names the oldest waiting
// 7g jobs.
func TestProposeByPolicyFollowsShift(t *testing.T) {
	in := policyInput(t, 0.5, 0.1, 0.2, 0.4, 360, 20)
	p, err := ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 {
		t.Fatalf("changes %+v, want one", p.Changes)
	}
	c := p.Changes[0]
	if c.Node != "gpu02" || c.Config != "large" || c.Gres != "gpu:7g:8" || c.Was != "gpu:1g:56" {
		t.Errorf("change %+v, want gpu02 to large", c)
	}
	if want := []string{"9000", "9001", "9002", "9003", "9004", "9005", "9006", "9007"}; !slices.Equal(c.Jobs, want) {
		t.Errorf("jobs %v, want %v", c.Jobs, want)
	}
	if want := []string{"NodeName=gpu01 Gres=gpu:1g:56", "NodeName=gpu[02-03] Gres=gpu:7g:8"}; !slices.Equal(p.NodeLines, want) {
		t.Errorf("node lines %q, want %q", p.NodeLines, want)
	}
	// A node out of service is held, and not changed.
	st := in.States["gpu02"]
	st.State = "IDLE+DRAIN"
	in.States["gpu02"] = st
	if p, err = ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Changes {
		if c.Node == "gpu02" {
			t.Errorf("drained gpu02 changed: %+v", c)
		}
	}
	if len(p.Held) != 1 || p.Held[0].Node != "gpu02" || p.Held[0].Why != "state IDLE+DRAIN" {
		t.Errorf("held %+v, want gpu02 for its state", p.Held)
	}
	// A node the fleet holds with a hint (no layout of its kind) keeps
	// the hint apart from its reason.
	n := &in.Nodes[0]
	n.Options, n.Why, n.Hint = nil, "its Gres=gpu:1g:56 is no layout of the GPUs of h100.json", ": give the node's own snapshot"
	if p, err = ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	want := Held{Node: "gpu01", Why: n.Why, Hint: n.Hint}
	if !slices.Contains(p.Held, want) {
		t.Errorf("held %+v, want %+v", p.Held, want)
	}
}

// A history whose GPU jobs name no type of the nodes (accounting that
// tracks gres/gpu and not its types) is an error, not a quiet day.
func TestProposeByPolicyUntypedHistory(t *testing.T) {
	in := policyInput(t, 0.5, 0.1, 0.5, 0.1, 0, 0)
	for i := range in.History {
		in.History[i].Type, in.History[i].GPU = "", true
	}
	_, err := ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute)
	if err == nil || !strings.Contains(err.Error(), "AccountingStorageTRES lists gres/gpu:TYPE") {
		t.Errorf("error %v, want one naming AccountingStorageTRES", err)
	}
	// No jobs at all is a quiet day.
	in.History = nil
	if _, err := ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute); err != nil {
		t.Error(err)
	}
}

// What rebalance --apply's journal adds: a node that changed within the
// dwell is not changed again, and a node drained for the controller's
// change to large is capacity on its way, not a node out of service, so
// the same shift asks for nothing more.
func TestProposeByPolicyReadsTheJournal(t *testing.T) {
	in := policyInput(t, 0.5, 0.1, 0.2, 0.4, 360, 20)
	in.LastChange = map[string]time.Time{"gpu02": in.Now.Add(-30 * time.Minute)}
	p, err := ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Changes {
		if c.Node == "gpu02" {
			t.Errorf("gpu02, changed 30 minutes ago (dwell %v min), changes again: %+v", DefaultPolicyLimits().Dwell, c)
		}
	}
	in = policyInput(t, 0.5, 0.1, 0.2, 0.4, 360, 20)
	st := in.States["gpu02"]
	st.State = "IDLE+DRAIN"
	in.States["gpu02"] = st
	in.Changing = map[string]string{"gpu02": "large"}
	if p, err = ProposeByPolicy(in, DefaultWindows(), looseLimits(), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 0 || len(p.Held) != 0 {
		t.Errorf("with gpu02 changing to large: changes %+v, held %+v; want none", p.Changes, p.Held)
	}
}
