package rebalance

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// The same pending jobs as each release's squeue prints them with
// QueueFormat: %b spells a GRES "gpu:..." on 20.11, "gres:gpu:..." on
// 21.08 and 22.05, "gres/gpu:..." on later releases; a job without GRES
// is N/A; a pending array task is JOB_TASK.
func TestParseQueueReleases(t *testing.T) {
	want := []Job{
		{ID: "101", Submit: time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC), Nodes: 1, GPU: []Request{{"a100_1g.10gb", 2}}, Line: 1},
		{ID: "102_3", Submit: time.Date(2026, 11, 24, 9, 31, 5, 0, time.UTC), Nodes: 2, GPU: []Request{{"", 1}}, Line: 2},
		{ID: "103", Submit: time.Date(2026, 11, 24, 9, 32, 0, 0, time.UTC), Nodes: 1, Line: 3},
		{ID: "104", Submit: time.Date(2026, 11, 24, 9, 33, 0, 0, time.UTC), Nodes: 1, GPU: []Request{{"a100", 1}}, Line: 4},
	}
	for release, text := range map[string]string{
		"20.11": "101 2026-11-24T09:30:00 1 gpu:a100_1g.10gb:2\n102_3 2026-11-24T09:31:05 2 gpu\n103 2026-11-24T09:32:00 1 N/A\n104 2026-11-24T09:33:00 1 gpu:a100:1,shard:2\n",
		"22.05": "101 2026-11-24T09:30:00 1 gres:gpu:a100_1g.10gb:2\n102_3 2026-11-24T09:31:05 2 gres:gpu:1\n103 2026-11-24T09:32:00 1 N/A\n104 2026-11-24T09:33:00 1 gres:gpu:a100:1,gres:shard:2\n",
		"24.11": "101 2026-11-24T09:30:00 1 gres/gpu:a100_1g.10gb:2\n102_3 2026-11-24T09:31:05 2 gres/gpu:1\n103 2026-11-24T09:32:00 1 N/A\n104 2026-11-24T09:33:00 1 gres/gpu:a100:1,gres/shard:2\n",
		"26.05": "  101 2026-11-24T09:30:00 1 gres/gpu:a100_1g.10gb:2\n102_3 2026-11-24T09:31:05 2 gres/gpu\n\n103 2026-11-24T09:32:00 1 N/A\n104 2026-11-24T09:33:00 1 gres/gpu:a100,gres/shard:2\n",
	} {
		got, err := ParseQueue("q.txt", []byte(text), time.UTC)
		if err != nil {
			t.Fatalf("%s: %v", release, err)
		}
		if release == "26.05" {
			got[2].Line, got[3].Line = 3, 4 // a blank line moved them
		}
		if !slices.EqualFunc(got, want, func(a, b Job) bool {
			return a.ID == b.ID && a.Submit.Equal(b.Submit) && a.Nodes == b.Nodes && slices.Equal(a.GPU, b.GPU) && a.Line == b.Line
		}) {
			t.Errorf("%s:\n got %+v\nwant %+v", release, got, want)
		}
	}
}

func TestParseQueueErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"101 2026-11-24T09:30:00 1\n", "q.txt:1: want 5 fields"},
		{"ok 2026-11-24T09:30:00 1 N/A\n101 yesterday 1 N/A\n", `q.txt:2: submit time "yesterday" is not 2006-01-02T15:04:05`},
		{"101 2026-11-24T09:30:00 x N/A\n", `q.txt:1: node count "x"`},
		{"101 2026-11-24T09:30:00 1 gpu:a100:x\n", `q.txt:1: GRES "gpu:a100:x": count "x" is not a number`},
		{"101 2026-11-24T09:30:00 1 gpu:a100:0\n", `q.txt:1: GRES "gpu:a100:0": count must be at least 1`},
		{"101 2026-11-24T09:30:00 1 N/A\n102_1 2026-11-24T09:30:00 1 N/A\n101 2026-11-24T09:30:00 1 N/A\n", `q.txt:3: job 101 is given twice (first at line 1)`},
	} {
		_, err := ParseQueue("q.txt", []byte(tc.text), time.UTC)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err %v, want %q...", tc.text, err, tc.want)
		}
	}
	// A time squeue printed under another SLURM_TIME_FORMAT (relative;
	// "%F %T", whose space adds a field; "%s") says how to get the
	// standard one. Other errors say nothing of it.
	for text, hinted := range map[string]bool{
		"101 Ystday 1 N/A\n": true, "101 2026-11-24 09:30:00 1 N/A\n": true, "101 1795000000 1 N/A\n": true,
		"101 2026-11-24T09:30:00 x N/A\n": false,
	} {
		_, err := ParseQueue("q.txt", []byte(text), time.UTC)
		var h advice.Hinter
		if got := errors.As(err, &h) && strings.Contains(h.Hint(), "SLURM_TIME_FORMAT=standard"); err == nil || got != hinted {
			t.Errorf("%q: %v, hint of SLURM_TIME_FORMAT %v, want %v", text, err, got, hinted)
		}
	}
}

// squeue's %r, last, is the pending reason; it may hold blanks (a state
// description such as "launch failed requeued held"). A queue printed
// without it, as before %r was asked for, reads with no reason.
func TestParseQueueReasons(t *testing.T) {
	text := "101 2026-11-24T09:30:00 1 gres/gpu:a100_1g.10gb:1 Resources\n" +
		"102 2026-11-24T09:30:00 1 gres/gpu:a100_1g.10gb:1 Priority\n" +
		"103 2026-11-24T09:30:00 1 gres/gpu:a100_1g.10gb:1 launch failed requeued held\n" +
		"104 2026-11-24T09:30:00 1 gres/gpu:a100_1g.10gb:1 QOSMaxGRESPerUser\n" +
		"105 2026-11-24T09:30:00 1 gres/gpu:a100_1g.10gb:1 ReqNodeNotAvail,_UnavailableNodes:gpu01\n" +
		"106 2026-11-24T09:30:00 1 gres/gpu:a100_1g.10gb:1\n"
	jobs, err := ParseQueue("q.txt", []byte(text), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		reason  string
		blocked bool
	}{{"Resources", false}, {"Priority", false}, {"launch failed requeued held", true}, {"QOSMaxGRESPerUser", true},
		{"ReqNodeNotAvail,_UnavailableNodes:gpu01", false}, {"", false}}
	for i, j := range jobs {
		if j.Reason != want[i].reason || j.Blocked() != want[i].blocked {
			t.Errorf("job %s: reason %q, blocked %v; want %q, %v", j.ID, j.Reason, j.Blocked(), want[i].reason, want[i].blocked)
		}
	}
}

// scontrol --details --oneliner show node, as 22.05 prints it: an idle
// node; one with a job on one GPU (GresUsed counts it, AllocTRES does
// not: accounting does not track gres/gpu there); one running only a CPU
// job (its GPUs are idle); a drained one whose Reason has spaces; one not
// responding; one whose AllocTRES counts a GPU.
func TestParseNodes(t *testing.T) {
	text := `NodeName=gpu01 Arch=x86_64 CoresPerSocket=8 CPUAlloc=0 CPUTot=16 Gres=gpu:h100:1 NodeAddr=gpu01 State=IDLE ThreadsPerCore=1 GresDrain=N/A GresUsed=gpu:h100:0(IDX:N/A) CfgTRES=cpu=16,mem=64000M,billing=16 AllocTRES= CapWatts=n/a
NodeName=gpu02 CPUAlloc=1 Gres=gpu:a100:1,gpu:a100_1g.10gb:7,gpu:a100_1g.10gb+me:1 State=MIXED GresDrain=N/A GresUsed=gpu:a100:0(IDX:N/A),gpu:a100_1g.10gb:0(IDX:N/A),gpu:a100_1g.10gb+me:1(IDX:13) CfgTRES=cpu=2,mem=1M,billing=2 AllocTRES=cpu=1,mem=1M
NodeName=gpu03 CPUAlloc=4 Gres=gpu:h100:1 State=MIXED GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=cpu=4,mem=1G
NodeName=gpu04 Gres=gpu:h100:1 State=IDLE+DRAIN GresUsed=gpu:h100:0(IDX:N/A) Reason=repartition in progress [root@2026-11-24T10:00:00] AllocTRES=
NodeName=gpu05 Gres=gpu:h100:1 State=IDLE* GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=
NodeName=gpu07 Gres=gpu:h100:1 State=IDLE+NOT_RESPONDING GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=
NodeName=gpu08 Gres=gpu:h100:1 State=BOGUS GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=
NodeName=gpu06 Gres=gpu:h100:2 State=MIXED GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=cpu=1,gres/gpu=1,gres/gpu:h100=1
NodeName=cpu01 Gres=(null) State=IDLE AllocTRES=
`
	got, err := ParseNodes("nodes.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"gpu01": "", "gpu02": "1 GPUs in use by running jobs", "gpu03": "",
		"gpu04": "state IDLE+DRAIN", "gpu05": "not responding (IDLE*)", "gpu06": "1 GPUs in use by running jobs", "cpu01": "",
		"gpu07": "not responding (IDLE+NOT_RESPONDING)", "gpu08": "state BOGUS",
	}
	for name, why := range want {
		s, ok := got[name]
		if !ok || s.Why() != why {
			t.Errorf("%s: %+v why %q, want %q", name, s, s.Why(), why)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d nodes, want %d", len(got), len(want))
	}
	if _, err := ParseNodes("nodes.txt", []byte("NodeName=a State=IDLE\nNodeName=a State=IDLE\n")); err == nil || err.Error() != "nodes.txt:2: node a is given twice (first at line 1)" {
		t.Errorf("twice: %v", err)
	}
	if _, err := ParseNodes("nodes.txt", []byte("hello\n")); err == nil || !strings.HasPrefix(err.Error(), "nodes.txt:1: no NodeName= or State=") {
		t.Errorf("not scontrol: %v", err)
	}
	// A Reason= that spells fields does not override the node's own,
	// which scontrol prints before it.
	faked, err := ParseNodes("nodes.txt", []byte("NodeName=a Gres=gpu:h100:1 State=MIXED GresUsed=gpu:h100:1(IDX:0) AllocTRES= Reason=was State=IDLE GresUsed=gpu:h100:0(IDX:N/A) [root@2026-11-24T10:00:00]\n"))
	if a := faked["a"]; err != nil || a.Why() != "1 GPUs in use by running jobs" || a.State != "MIXED" {
		t.Errorf("Reason= with fields: %+v, %v", a, err)
	}
	if _, err := ParseNodes("nodes.txt", []byte("NodeName=a Gres=gpu:h100:1x State=IDLE GresUsed=gpu:h100:0(IDX:N/A)\n")); err == nil || !strings.HasPrefix(err.Error(), "nodes.txt:1: node a: Gres=gpu:h100:1x: bad count") {
		t.Errorf("bad Gres: %v", err)
	}
	// A GresUsed= count that does not read would make a busy node idle.
	for _, used := range []string{"gpu:h100:99999999999999999999(IDX:0)", "gpu:h100:x(IDX:0)", "gpu:h100:-1(IDX:0)"} {
		_, err := ParseNodes("nodes.txt", []byte("NodeName=a Gres=gpu:h100:1 State=MIXED GresUsed="+used+" AllocTRES=\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "nodes.txt:1: ") || !strings.Contains(err.Error(), "is not a count") {
			t.Errorf("GresUsed=%s: %v", used, err)
		}
	}
	// Without --details a busy node looks idle: refused.
	if _, err := ParseNodes("nodes.txt", []byte("NodeName=a Gres=gpu:h100:1 State=MIXED AllocTRES=cpu=1\n")); err == nil ||
		err.Error() != "nodes.txt:1: node a has GPUs and no GresUsed= (want the output of scontrol --details --oneliner show node)" {
		t.Errorf("no GresUsed: %v", err)
	}
}

const configs = `version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
  all-3g.40gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "2g.20gb": 1
        "1g.10gb": 1
  too-full:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "2g.20gb": 1
        "1g.10gb": 2
  a100:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
`

func h100Node(t *testing.T, host string) *model.Node {
	t.Helper()
	n, err := snapshot.Load(fixture.Path(t, "real/h100-snapshot-v2/snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	n.Hostname = host
	return n
}

func evaluator(t *testing.T) *Evaluator {
	t.Helper()
	cfg, err := migplan.ParseConfig("mig.yaml", []byte(configs))
	if err != nil {
		t.Fatal(err)
	}
	e := &Evaluator{Gres: gresgen.Options{TypeStyle: gresgen.StyleModel}}
	for _, name := range cfg.Names() {
		sel, _ := cfg.Select(name)
		e.Configs = append(e.Configs, sel)
	}
	return e
}

// The real H100's options are migplan's counts, h100's in the tests
// above; the layouts it cannot hold (no placements for too-full, A100
// names) are refused, never offered.
func TestEvaluatorFit(t *testing.T) {
	e := evaluator(t)
	cur, opts, err := e.Node(h100Node(t, "gpu01.example"))
	if err != nil {
		t.Fatal(err)
	}
	if slurmconf.GresList(cur) != "gpu:h100:1" {
		t.Errorf("current %s", slurmconf.GresList(cur))
	}
	for _, want := range h100.Configs {
		i := slices.IndexFunc(opts.Configs, func(o Option) bool { return o.Config == want.Config })
		if i < 0 || !slurmconf.SameGresCounts(opts.Configs[i].Counts, want.Counts) {
			t.Errorf("%s: %v, want %s", want.Config, opts.Configs, slurmconf.GresList(want.Counts))
		}
	}
	if len(opts.Configs) != 4 {
		t.Errorf("configs %v, want the four of h100", opts.Configs)
	}
	var refused []string
	for _, r := range opts.Refused {
		refused = append(refused, r.Config)
	}
	if !slices.Equal(refused, []string{"a100", "too-full"}) {
		t.Errorf("refused %v", opts.Refused)
	}
	// too-full would start all three jobs, but no placement holds it.
	// all-1g.10gb starts job 3 (two 1g.10gb), all-balanced job 2 (its
	// one 1g.10gb is too few for job 3): one each, and of those the one
	// that starts the older job (2 before 3, submitted together) wins.
	js := []Job{job("1", "h100_4g.40gb", 1, 30), job("2", "h100_2g.20gb", 1, 30), job("3", "h100_1g.10gb", 2, 30)}
	states := map[string]NodeState{"gpu01": {Name: "gpu01", State: "IDLE", Gres: cur}}
	nodes, err := Fleet([]*model.Node{h100Node(t, "gpu01.example")}, nil, states, e)
	if err != nil {
		t.Fatal(err)
	}
	check(t, Propose(nodes, js, lim), "gpu01=all-balanced[2]")
	// A node whose counts slurmctld does not hold (an old snapshot, a
	// slurm.conf not updated) is held: the controller would refuse it.
	for _, gres := range [][]slurmconf.GresCount{nil, {{Name: "gpu", Type: "h100_1g.10gb", Count: 7}}} {
		other := map[string]NodeState{"gpu01": {Name: "gpu01", State: "IDLE", Gres: gres}}
		nodes, _ := Fleet([]*model.Node{h100Node(t, "gpu01")}, nil, other, e)
		if p := Propose(nodes, js, lim); len(p.Changes) != 0 || len(p.Held) != 1 || !strings.HasPrefix(p.Held[0].Why, "slurmctld holds Gres="+slurmconf.GresList(gres)+", not its snapshot's gpu:h100:1") {
			t.Errorf("slurmctld holds Gres=%s: changes %v, held %v", slurmconf.GresList(gres), p.Changes, p.Held)
		}
	}
	// A node of the snapshots that slurmctld does not know is held.
	nodes, _ = Fleet([]*model.Node{h100Node(t, "gpu01"), h100Node(t, "gpu02")}, nil, states, e)
	p := Propose(nodes, js, lim)
	if len(p.Held) != 1 || p.Held[0].Node != "gpu02" {
		t.Errorf("held %v", p.Held)
	}
	if _, err := Fleet([]*model.Node{h100Node(t, "gpu01"), h100Node(t, "gpu01.b")}, nil, states, e); err == nil || !strings.Contains(err.Error(), "node gpu01 is given twice") {
		t.Errorf("twice: %v", err)
	}
}

// Nodes declared to have one snapshot's hardware (Hardware) take their
// counts now from scontrol's Gres=, and the configs that snapshot's GPUs
// may take. A config that leaves a GPU as it is would give each node its
// own counts, which no shared snapshot says: refused for the kind. A node
// whose Gres= is no layout of the kind (another model, another number of
// GPUs) is held, never changed. A declared node slurmctld does not list,
// or one given twice, is an error.
func TestFleetHardware(t *testing.T) {
	e := evaluator(t)
	other, err := migplan.ParseConfig("other.yaml", []byte("version: v1\nmig-configs:\n  gpu1-only:\n    - devices: [1]\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := other.Select("gpu1-only")
	e.Configs = append(e.Configs, sel)
	nodesText := `NodeName=gpu01 Gres=gpu:h100:1 State=IDLE GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=
NodeName=gpu02 Gres=gpu:h100_3g.40gb:2(S:0) State=IDLE GresUsed=gpu:h100_3g.40gb:0(IDX:N/A) AllocTRES=
NodeName=gpu03 Gres=gpu:a100:1 State=IDLE GresUsed=gpu:a100:0(IDX:N/A) AllocTRES=
NodeName=gpu04 Gres=gpu:h100:2 State=IDLE GresUsed=gpu:h100:0(IDX:N/A) AllocTRES=
NodeName=gpu05 Gres=gpu:h100:1 State=MIXED GresUsed=gpu:h100:1(IDX:0) AllocTRES=
`
	states, err := ParseNodes("nodes.txt", []byte(nodesText))
	if err != nil {
		t.Fatal(err)
	}
	hw := []migplan.Hardware{{Spec: "gpu[01-05]=h100.json", Nodes: []string{"gpu01", "gpu02", "gpu03", "gpu04", "gpu05"}, Snapshot: h100Node(t, "ref")}}
	nodes, err := Fleet(nil, hw, states, e)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range nodes {
		got[n.Name] = slurmconf.GresList(n.Current) + " | " + n.Why + " | " + n.Hint
	}
	want := map[string]string{
		"gpu01": "gpu:h100:1 |  | ",
		"gpu02": "gpu:h100_3g.40gb:2 |  | ",
		"gpu03": "gpu:a100:1 | its Gres=gpu:a100:1 is no layout of the GPUs of gpu[01-05]=h100.json (now or under an allowed config) | : give the node's own snapshot",
		"gpu04": "gpu:h100:2 | its Gres=gpu:h100:2 is no layout of the GPUs of gpu[01-05]=h100.json (now or under an allowed config) | : give the node's own snapshot",
		"gpu05": "gpu:h100:1 | 1 GPUs in use by running jobs | ",
	}
	if len(got) != len(want) {
		t.Errorf("nodes %v", got)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	opts := nodes[0].Options
	var refused []string
	for _, r := range opts.Refused {
		refused = append(refused, r.Config+": "+r.Why+" | "+r.Hint)
	}
	if len(opts.Configs) != 4 || len(refused) != 3 || refused[2] != "gpu1-only: it leaves GPU 0 (NVIDIA H100 80GB HBM3) as it is, so its counts are each node's own | ; give the node's own snapshot" {
		t.Errorf("configs %v, refused %q", opts.Configs, refused)
	}
	// A held node's hint travels to the proposal apart from its reason.
	for _, h := range Propose(nodes, nil, lim).Held {
		if (h.Node == "gpu03" || h.Node == "gpu04") && (strings.Contains(h.Why, "snapshot\"") || h.Hint != ": give the node's own snapshot") {
			t.Errorf("held %+v: want the hint apart from the reason", h)
		}
	}
	// The same proposal as from each node's own snapshot: gpu01, whole,
	// turns to seven 1g.10gb; gpu02's 3g.40gb serve the 3g.40gb job.
	js := []Job{job("1", "h100_1g.10gb", 1, 30), job("2", "h100_3g.40gb", 1, 30)}
	check(t, Propose(nodes, js, lim), "gpu01=all-1g.10gb[1]")

	// A GPU node slurmctld lists that neither a snapshot nor a
	// declaration names is held, its counts from Gres=: its GPUs are
	// unknown, and its counts are still the fleet's. A node without
	// GPUs is none of rebalance's business.
	states["gpu09"] = NodeState{Name: "gpu09", State: "IDLE", Gres: gres("h100_1g.10gb:7")}
	states["cpu01"] = NodeState{Name: "cpu01", State: "IDLE"}
	nodes, err = Fleet(nil, hw[:0], states, e)
	if err != nil || len(nodes) != 6 || !slices.ContainsFunc(nodes, func(n Node) bool {
		return n.Name == "gpu09" && n.Options == nil && slurmconf.GresList(n.Current) == "gpu:h100_1g.10gb:7" &&
			n.Why == "no snapshot gives its GPUs, neither its own nor one declared for it"
	}) {
		t.Errorf("undeclared GPU node: %v, %+v", err, nodes)
	}
	delete(states, "gpu09")
	delete(states, "cpu01")

	missing := append(hw[:0:0], migplan.Hardware{Spec: "gpu[05-06]=h100.json", Nodes: []string{"gpu05", "gpu06"}, Snapshot: hw[0].Snapshot})
	if _, err := Fleet(nil, missing, states, e); err == nil || err.Error() != "gpu[05-06]=h100.json: node gpu06 is not in the node states" {
		t.Errorf("missing: %v", err)
	}
	own := h100Node(t, "gpu02")
	own.Snapshot = "gpu02.json"
	if _, err := Fleet([]*model.Node{own}, hw, states, e); err == nil || err.Error() != "gpu[01-05]=h100.json: node gpu02 is given twice (also by gpu02.json)" {
		t.Errorf("twice: %v", err)
	}
}

// Nodes are of one kind when their GPUs' tables are equal, which a fleet's
// snapshots read with one set of tables makes one pointer; a table that
// differs in one placement makes another kind.
func TestNodeKindTables(t *testing.T) {
	e := evaluator(t)
	dir := t.TempDir()
	for _, host := range []string{"a", "b"} {
		data, err := os.ReadFile(fixture.Path(t, "real/h100-snapshot-v2/snapshot.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, host+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err := ReadSnapshots([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := nodes[0], nodes[1], h100Node(t, "c")
	if a.GPUs[0].Profiles != b.GPUs[0].Profiles {
		t.Fatal("equal tables read together are two values")
	}
	ps := slices.Clone(c.GPUs[0].MigProfiles())
	ps[0].Placements = slices.Clone(ps[0].Placements[:6])
	c.GPUs[0].Profiles = &model.ProfileTable{Profiles: ps}
	if ka, kb, kc := e.nodeKind(a), e.nodeKind(b), e.nodeKind(c); ka != kb || ka == kc {
		t.Errorf("kinds: a %q, b %q, c %q", ka, kb, kc)
	}
}

// A config migplan refuses with a hint of its own (a snapshot of schema
// 1: take a new one) keeps it, apart from the refusal's message.
func TestEvaluatorKeepsTheRefusalsHint(t *testing.T) {
	cfg, err := migplan.ParseConfig("mig.yaml", []byte(`version: v1
mig-configs:
  filtered:
    - devices: all
      device-filter: "0x233010DE"
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
`))
	if err != nil {
		t.Fatal(err)
	}
	sel, err := cfg.Select("filtered")
	if err != nil {
		t.Fatal(err)
	}
	n := h100Node(t, "gpu01.example")
	for i := range n.GPUs {
		n.GPUs[i].PCIDeviceID = "" // as a snapshot of schema 1 has it
	}
	e := &Evaluator{Gres: gresgen.Options{TypeStyle: gresgen.StyleModel}, Configs: []*migplan.Selected{sel}}
	_, opts, err := e.Node(n)
	if err != nil {
		t.Fatal(err)
	}
	want := Refused{Config: "filtered",
		Why:  `mig.yaml:4: config "filtered": GPU 0 (NVIDIA H100 80GB HBM3): its PCI device id is unknown (a snapshot of schema 1?), so the entry's device-filter cannot be matched`,
		Hint: "; take a new snapshot"}
	if len(opts.Configs) != 0 || len(opts.Refused) != 1 || opts.Refused[0] != want {
		t.Errorf("configs %v, refused %+v; want %+v", opts.Configs, opts.Refused, want)
	}
}

// Refusals: one entry a named config and reason, nodes in the order
// given, configs in the order named; configs not named, and nodes
// without options, are left out.
func TestRefusals(t *testing.T) {
	shared := &Options{Refused: []Refused{{Config: "b", Why: "no 1g.5gb"}, {Config: "a", Why: "overlap", Hint: "; fix it"}}}
	other := &Options{Refused: []Refused{{Config: "b", Why: "no 1g.5gb"}, {Config: "a", Why: "leaves GPU 1"}}}
	nodes := []Node{{Name: "n2", Options: shared}, {Name: "n1", Options: other}, {Name: "n3"}, {Name: "n4", Options: shared}}
	got := Refusals(nodes, []string{"a", "b"})
	want := []Refusal{
		{Config: "a", Nodes: []string{"n2", "n4"}, Why: "overlap", Hint: "; fix it"},
		{Config: "a", Nodes: []string{"n1"}, Why: "leaves GPU 1"},
		{Config: "b", Nodes: []string{"n2", "n1", "n4"}, Why: "no 1g.5gb"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Refusals:\n got %+v\nwant %+v", got, want)
	}
	if got := Refusals(nodes, []string{"c"}); got != nil {
		t.Errorf("a config no node refuses: %+v, want none", got)
	}
}
