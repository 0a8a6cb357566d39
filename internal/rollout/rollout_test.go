package rollout

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// counts are the Gres= of the two configs of the tests.
var counts = map[string]string{
	"all-1g":       "gpu:1g.10gb:7",
	"all-balanced": "gpu:3g.40gb:1,gpu:2g.20gb:1,gpu:1g.10gb:2",
}

// toBalanced is the change the tests roll out.
var toBalanced = Change{Node: "gpu01", Config: "all-balanced", Gres: counts["all-balanced"], WasConfig: "all-1g", WasGres: counts["all-1g"]}

// killed is the panic that stands for SIGKILL at a kill point.
type killed struct{}

// world is one node, slurmctld and the journal, as the fakes change
// them. Every action that changes something is a kill point: tick runs
// before it, and panics at the killAt'th.
type world struct {
	t            *testing.T
	layout       string // the config the GPUs have
	gres         string // the config whose counts slurmctld holds
	slurmdUp     bool
	slurmdStart  time.Time
	startUnknown bool // slurmctld restarted with slurmd down: it shows SlurmdStartTime=None
	startMissing bool // a scontrol (a stand-in) that prints no SlurmdStartTime= at all
	jobsOnResume int  // jobs that start on the node when the change command resumes it
	drained      bool
	reason       string
	jobs         int
	now          time.Time
	ticks        int
	killAt       int
	failApply    map[string]bool // configs mig-parted fails to apply
	slurmdBroken bool            // slurmd will not start
	changeRuns   int
	entries      map[string]Entry
	recorded     []string
	unreachable  string // a node slurmctld will not show
	quiet        bool   // slurmctld, just restarted, has not heard from slurmd yet
	violations   []string
}

func newWorld(t *testing.T) *world {
	return &world{t: t, layout: "all-1g", gres: "all-1g", slurmdUp: true, slurmdStart: time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local),
		now: time.Date(2026, 11, 28, 10, 0, 0, 0, time.Local), killAt: -1, failApply: map[string]bool{}, entries: map[string]Entry{}}
}

func (w *world) tick(what string) {
	w.ticks++
	w.now = w.now.Add(time.Second)
	if w.ticks == w.killAt {
		panic(killed{})
	}
	w.check(what)
}

// check holds the promise: a node that takes jobs has a slurmd that
// registered the layout the GPUs have, with slurmctld's counts.
func (w *world) check(what string) {
	if !w.drained && (!w.slurmdUp || w.layout != w.gres) {
		w.violations = append(w.violations, fmt.Sprintf("before %s: in service with slurmd up=%v, layout %s, slurmctld's counts of %s", what, w.slurmdUp, w.layout, w.gres))
	}
}

// Slurm.
func (w *world) Node(name string) (slurmhost.Node, error) {
	if name == w.unreachable {
		return slurmhost.Node{}, fmt.Errorf("scontrol show node %s: Invalid node name specified", name)
	}
	state := "IDLE"
	if w.jobs > 0 {
		state = "MIXED"
	}
	if w.drained {
		state += "+DRAIN"
	}
	if w.slurmdUp && w.layout != w.gres {
		state += "+INVALID_REG"
	}
	if w.quiet {
		state += "+NOT_RESPONDING"
	}
	reason := w.reason
	if reason != "" {
		reason += " [root@2026-11-28T10:00:00]"
	}
	// As scontrol prints it for ShowNode: in UTC.
	start := w.slurmdStart.UTC().Format(slurmconf.TimeLayout)
	if w.startUnknown {
		start = "None"
	}
	if w.startMissing {
		start = ""
	}
	return slurmhost.Node{Gres: counts[w.gres], State: state, Reason: reason, SlurmdStart: start}, nil
}

func (w *world) Drain(name, reason string) error {
	w.tick("drain")
	w.drained, w.reason = true, reason
	return nil
}

func (w *world) Resume(name string) error {
	w.tick("resume")
	w.drained, w.reason = false, ""
	w.check("after resume")
	return nil
}

// Change is repartition.sh: drain, stop slurmd, apply, slurm.conf and
// slurmctld, start slurmd, resume; each step a kill point.
func (w *world) Change(node, config string) error {
	w.changeRuns++
	if !w.drained {
		// Jobs may have started there since it was resumed.
		w.violations = append(w.violations, "the change command ran on a node in service")
	}
	w.tick("script drain")
	w.drained, w.reason = true, Reason(config)
	if w.jobs > 0 {
		return fmt.Errorf("gave up waiting for jobs")
	}
	w.tick("slurmd stop")
	w.slurmdUp = false
	w.tick("mig-parted apply")
	if w.failApply[config] {
		return fmt.Errorf("exit status 1: nvidia-mig-parted failed")
	}
	w.layout = config
	w.tick("slurm.conf and slurmctld")
	w.gres, w.startUnknown = config, true
	w.tick("slurmd start")
	if w.slurmdBroken {
		return fmt.Errorf("gave up after 600s waiting for: registered")
	}
	w.slurmdUp, w.slurmdStart, w.startUnknown = true, w.now, false
	w.tick("script resume")
	w.drained, w.reason = false, ""
	w.jobs = w.jobsOnResume
	return nil
}

// Store.
func (w *world) Entries() ([]Entry, error) {
	return slices.SortedFunc(maps.Values(w.entries), func(a, b Entry) int { return strings.Compare(a.Node, b.Node) }), nil
}

func (w *world) Save(e *Entry) error {
	w.tick("save " + string(e.Step))
	w.entries[e.Node] = *e
	return nil
}

// Record keeps a line once, as the journal does.
func (w *world) Record(e *Entry, at time.Time) error {
	w.tick("record")
	line := at.Format(time.RFC3339) + " " + e.Node + " " + e.Outcome
	if !slices.Contains(w.recorded, line) {
		w.recorded = append(w.recorded, line)
	}
	return nil
}

func (w *world) Remove(node string) error {
	w.tick("remove")
	delete(w.entries, node)
	return nil
}

func (w *world) controller(events *[]string) *Controller {
	return &Controller{Store: w, Slurm: w, Changer: w, Now: func() time.Time { return w.now },
		Limits: Limits{MaxNodes: 1, DrainTimeout: time.Hour, MaxAttempts: 2},
		Report: func(e Event) {
			*events = append(*events, fmt.Sprintf("%s %s: %s %s", e.Node, e.Step, e.What, e.Detail))
		}}
}

// run is one timer run; proposes is what rebalance would propose: the
// change, while the node is idle, in service and still all-1g.
func (w *world) run(events *[]string) (out Outcome, wasKilled bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(killed); !ok {
				panic(r)
			}
			wasKilled = true
		}
	}()
	var changes []Change
	if w.layout == "all-1g" && w.gres == "all-1g" && !w.drained && w.jobs == 0 {
		changes = []Change{toBalanced}
	}
	out, err := w.controller(events).Run(changes)
	if err != nil {
		w.t.Fatalf("run: %v", err)
	}
	return out, false
}

// settle runs the timer until the journal is empty, at most n times.
func (w *world) settle(n int, events *[]string) Outcome {
	var out Outcome
	for i := 0; i < n && (i == 0 || len(w.entries) > 0); i++ {
		w.killAt = -1
		out, _ = w.run(events)
	}
	return out
}

func TestRolloutDone(t *testing.T) {
	w := newWorld(t)
	var events []string
	out, _ := w.run(&events)
	if !slices.Equal(out.Done, []string{"gpu01"}) || len(w.entries) != 0 || w.layout != "all-balanced" || w.gres != "all-balanced" || w.drained || len(w.violations) > 0 {
		t.Fatalf("outcome %+v, entries %v, layout %s, counts %s, drained %v, violations %v\n%s", out, w.entries, w.layout, w.gres, w.drained, w.violations, strings.Join(events, "\n"))
	}
	want := []string{"drain: drained", "wait: empty", "apply: applying", "apply: applied", "resume: resumed"}
	for i, e := range events {
		if i >= len(want) || !strings.Contains(e, want[i]) {
			t.Fatalf("events:\n%s\nwant, in order: %v", strings.Join(events, "\n"), want)
		}
	}
	// Nothing more to do: no change is proposed for a node of the new
	// layout, and the journal is empty.
	w.ticks = 0
	if out, _ := w.run(&events); w.ticks != 0 || len(out.Done)+len(out.Waiting) > 0 {
		t.Errorf("a second run acted: %d actions, %+v", w.ticks, out)
	}
}

// TestRolloutKilledAnywhere kills the run before each of its actions
// (journal writes, drains, resumes, each step of the change command) and
// then lets the timer run again: the change is finished, the node is
// back in service with the new layout, and at no point did it take jobs
// with a layout slurmctld did not hold.
func TestRolloutKilledAnywhere(t *testing.T) {
	for _, fault := range []string{"", "mig-parted fails"} {
		clean := newWorld(t)
		clean.failApply["all-balanced"] = fault != ""
		var events []string
		clean.run(&events)
		total := clean.ticks
		if total < 10 {
			t.Fatalf("a clean run took %d actions", total)
		}
		want, outcome := "all-balanced", "done"
		if fault != "" {
			want, outcome = "all-1g", "rolled back to all-1g"
		}
		for k := 1; k <= total; k++ {
			w := newWorld(t)
			w.failApply["all-balanced"] = fault != ""
			w.killAt = k
			var events []string
			if _, wasKilled := w.run(&events); !wasKilled {
				t.Fatalf("%s kill point %d of %d: not reached", fault, k, total)
			}
			w.settle(5, &events)
			if len(w.entries) != 0 || w.layout != want || w.gres != want || w.drained || !w.slurmdUp || len(w.violations) > 0 {
				t.Errorf("%s killed before action %d of %d: entries %v, layout %s, counts %s, drained %v (%s), slurmd up %v, violations %v\n%s",
					fault, k, total, w.entries, w.layout, w.gres, w.drained, w.reason, w.slurmdUp, w.violations, strings.Join(events, "\n"))
			}
			// One line in changes.log, however often the resume ran.
			if len(w.recorded) != 1 || !strings.HasSuffix(w.recorded[0], " gpu01 "+outcome) {
				t.Errorf("%s killed before action %d of %d: recorded %q, want one line for %q", fault, k, total, w.recorded, outcome)
			}
		}
	}
}

// TestRolloutKilledAnywhereFails: as TestRolloutKilledAnywhere, for the
// faults whose change and rollback both fail. Wherever the run is
// killed, the next ones leave the node drained as failed, never in
// service with a layout the change did not confirm.
func TestRolloutKilledAnywhereFails(t *testing.T) {
	for _, fault := range []string{"slurmd will not start", "no SlurmdStartTime"} {
		setup := func(w *world) {
			w.slurmdBroken = fault == "slurmd will not start"
			w.startMissing = fault == "no SlurmdStartTime"
		}
		clean := newWorld(t)
		setup(clean)
		var events []string
		clean.run(&events)
		for k := 1; k <= clean.ticks; k++ {
			w := newWorld(t)
			setup(w)
			w.killAt = k
			var events []string
			if _, wasKilled := w.run(&events); !wasKilled {
				t.Fatalf("%s kill point %d of %d: not reached", fault, k, clean.ticks)
			}
			out := w.settle(5, &events)
			e, kept := w.entries["gpu01"]
			if !kept || e.Step != StepFailed || !slices.Equal(out.Failed, []string{"gpu01"}) || !w.drained ||
				!strings.HasPrefix(w.reason, failedReason("all-balanced")) || strings.Count(e.Why, "; back to ") != 1 || len(w.violations) > 0 {
				t.Errorf("%s killed before action %d of %d: entry kept %v, step %q, Why %q, outcome %+v, drained %v (%q), violations %v\n%s",
					fault, k, clean.ticks, kept, e.Step, e.Why, out, w.drained, w.reason, w.violations, strings.Join(events, "\n"))
			}
		}
	}
}

// TestRolloutFailedDrainIsTheStep: a run killed after a failed
// rollback's drain, before its step was saved, left the rollback step in
// the journal; the next run takes the drain for the failure, and does
// not roll back again.
func TestRolloutFailedDrainIsTheStep(t *testing.T) {
	w := newWorld(t)
	w.drained, w.reason = true, failedReason("all-balanced")
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepRollback, Started: w.now, Since: w.now, Attempts: 1,
		Why: "to all-balanced: broken; back to all-1g: broken"}
	var events []string
	out, _ := w.controller(&events).Run(nil)
	if e := w.entries["gpu01"]; e.Step != StepFailed || w.changeRuns != 0 || !slices.Equal(out.Failed, []string{"gpu01"}) || e.Why != "to all-balanced: broken; back to all-1g: broken" {
		t.Errorf("step %s, %d change runs, outcome %+v, Why %q\n%s", e.Step, w.changeRuns, out, e.Why, strings.Join(events, "\n"))
	}
}

func TestRolloutMigPartedFailsRollsBack(t *testing.T) {
	w := newWorld(t)
	w.failApply["all-balanced"] = true
	// slurmd started seconds before: its registration is not the
	// rollback's (Slurm 22.05 showed this when a clock skew was allowed).
	w.slurmdStart = w.now.Add(-5 * time.Second)
	var events []string
	out, _ := w.run(&events)
	if !slices.Equal(out.RolledBack, []string{"gpu01"}) || !out.Troubled() || w.layout != "all-1g" || w.drained || len(w.entries) != 0 || len(w.violations) > 0 {
		t.Fatalf("outcome %+v, layout %s, drained %v, entries %v, violations %v\n%s", out, w.layout, w.drained, w.entries, w.violations, strings.Join(events, "\n"))
	}
	if w.changeRuns != 2 || !strings.Contains(strings.Join(events, "\n"), "nvidia-mig-parted failed") {
		t.Errorf("the events do not say why:\n%s", strings.Join(events, "\n"))
	}
}

// TestRolloutSlurmdWillNotStart: the change and its rollback both fail;
// the node stays drained with a reason that says so, the journal keeps
// it, and no new change starts until an admin resumes it.
func TestRolloutSlurmdWillNotStart(t *testing.T) {
	w := newWorld(t)
	w.slurmdBroken = true
	var events []string
	out, _ := w.run(&events)
	e, kept := w.entries["gpu01"]
	if !slices.Equal(out.Failed, []string{"gpu01"}) || !kept || e.Step != StepFailed || !w.drained || w.reason != failedReason("all-balanced") || len(w.violations) > 0 {
		t.Fatalf("outcome %+v, entry %+v, drained %v (%s), violations %v\n%s", out, e, w.drained, w.reason, w.violations, strings.Join(events, "\n"))
	}
	if !strings.Contains(e.Why, "to all-balanced: ") || !strings.Contains(e.Why, "back to all-1g: ") {
		t.Errorf("Why = %q, want both failures", e.Why)
	}
	// The next run changes nothing, not even another node.
	w.ticks = 0
	other := toBalanced
	other.Node = "gpu02"
	out, err := w.controller(&events).Run([]Change{other})
	if err != nil || w.ticks != 0 || !slices.Equal(out.Skipped, []string{"gpu02"}) || !slices.Equal(out.Failed, []string{"gpu01"}) {
		t.Fatalf("after a failure: %v, %d actions, %+v", err, w.ticks, out)
	}
	// The admin fixes and resumes the node: the entry goes.
	w.drained, w.reason = false, ""
	if _, err := w.controller(&events).Run(nil); err != nil || len(w.entries) != 0 {
		t.Fatalf("after the admin's resume: %v, entries %v", err, w.entries)
	}
}

// TestRolloutNoSlurmdStartTime: with no SlurmdStartTime= to tell a new
// registration from the old one, the change cannot be confirmed: it
// fails, and the error says what scontrol lacked.
func TestRolloutNoSlurmdStartTime(t *testing.T) {
	w := newWorld(t)
	w.startMissing = true
	var events []string
	out, _ := w.run(&events)
	e := w.entries["gpu01"]
	if !slices.Equal(out.Failed, []string{"gpu01"}) || !w.drained || len(w.violations) > 0 {
		t.Fatalf("outcome %+v, entry %+v, drained %v, violations %v\n%s", out, e, w.drained, w.violations, strings.Join(events, "\n"))
	}
	if !strings.Contains(e.Why, "scontrol shows no SlurmdStartTime= for the node") {
		t.Errorf("Why = %q, want it to name the missing SlurmdStartTime=", e.Why)
	}
}

// TestRolloutRollbackWaitsForJobs: the change command resumed the node
// and a job started there, but the check failed. The rollback drains
// the node again and runs the command only once the job has ended; a
// job that outlives the drain timeout fails the change, the node left
// drained.
func TestRolloutRollbackWaitsForJobs(t *testing.T) {
	w := newWorld(t)
	w.startMissing, w.jobsOnResume = true, 1
	var events []string
	out, killed := w.run(&events)
	e := w.entries["gpu01"]
	if killed || !slices.Equal(out.Waiting, []string{"gpu01"}) || e.Step != StepRollback || !w.drained || w.changeRuns != 1 || len(w.violations) > 0 {
		t.Fatalf("first run: killed %v, outcome %+v, step %s, drained %v, %d change runs, violations %v\n%s", killed, out, e.Step, w.drained, w.changeRuns, w.violations, strings.Join(events, "\n"))
	}
	// The job ends: the next run rolls back (and fails the check again).
	w.jobs, w.jobsOnResume = 0, 0
	out, err := w.controller(&events).Run(nil)
	if err != nil || !slices.Equal(out.Failed, []string{"gpu01"}) || w.changeRuns != 2 || len(w.violations) > 0 {
		t.Fatalf("after the job: %v, outcome %+v, %d change runs, violations %v\n%s", err, out, w.changeRuns, w.violations, strings.Join(events, "\n"))
	}
	// A job that outlives the drain timeout: the rollback fails.
	w = newWorld(t)
	w.startMissing, w.jobsOnResume = true, 1
	w.run(&events)
	w.now = w.now.Add(5 * time.Hour)
	out, err = w.controller(&events).Run(nil)
	e = w.entries["gpu01"]
	if err != nil || !slices.Equal(out.Failed, []string{"gpu01"}) || w.changeRuns != 1 || !w.drained || !strings.Contains(e.Why, "jobs still run there after") || len(w.violations) > 0 {
		t.Fatalf("past the drain timeout: %v, outcome %+v, %d change runs, Why %q, violations %v\n%s", err, out, w.changeRuns, e.Why, w.violations, strings.Join(events, "\n"))
	}
}

func TestRolloutNeverEmpties(t *testing.T) {
	w := newWorld(t)
	var events []string
	w.jobs = 0
	c := w.controller(&events)
	w.jobs = 1 // a job starts between the proposal and the drain
	out, err := c.Run([]Change{toBalanced})
	if err != nil || !slices.Equal(out.Waiting, []string{"gpu01"}) || !w.drained {
		t.Fatalf("%v, %+v, drained %v", err, out, w.drained)
	}
	w.now = w.now.Add(30 * time.Minute)
	if out, _ := c.Run(nil); !slices.Equal(out.Waiting, []string{"gpu01"}) {
		t.Fatalf("after 30 min: %+v", out)
	}
	w.now = w.now.Add(31 * time.Minute)
	out, _ = c.Run(nil)
	if !slices.Equal(out.Abandoned, []string{"gpu01"}) || w.drained || len(w.entries) != 0 || w.layout != "all-1g" || w.changeRuns != 0 {
		t.Fatalf("after the drain timeout: %+v, drained %v, entries %v, layout %s, change runs %d\n%s", out, w.drained, w.entries, w.layout, w.changeRuns, strings.Join(events, "\n"))
	}
}

// TestRolloutLeavesOthersDrains: a node an admin drained is not
// drained over, and one the admin resumes while it empties is left as
// the admin set it.
func TestRolloutLeavesOthersDrains(t *testing.T) {
	w := newWorld(t)
	var events []string
	w.drained, w.reason = true, "bad fan"
	c := w.controller(&events)
	if out, _ := c.Run([]Change{toBalanced}); !slices.Equal(out.Skipped, []string{"gpu01"}) || w.reason != "bad fan" || len(w.entries) != 0 {
		t.Fatalf("admin's drain: %+v, reason %q, entries %v", out, w.reason, w.entries)
	}
	w.drained, w.reason, w.jobs = false, "", 1
	c.Run([]Change{toBalanced})
	w.drained, w.reason = false, "" // the admin resumes it
	if out, _ := c.Run(nil); !slices.Equal(out.Abandoned, []string{"gpu01"}) || w.drained || len(w.entries) != 0 || w.changeRuns != 0 {
		t.Fatalf("admin's resume: %+v, drained %v, entries %v, runs %d", out, w.drained, w.entries, w.changeRuns)
	}
}

// TestRolloutLeavesOthersDrainsMidChange: a node drained by someone else
// ("bad fan", or slurmctld's "Kill task failed") at the apply or rollback
// step keeps that drain and its reason. Before any change run the change
// is dropped; after one, the layout may be half made, so the change
// waits, the command not run, until the node is resumed. A failed
// change's last drain does not overwrite theirs either.
func TestRolloutLeavesOthersDrainsMidChange(t *testing.T) {
	var events []string
	check := func(name string, w *world, out Outcome, step Step, runs int) {
		t.Helper()
		e, kept := w.entries["gpu01"]
		if w.changeRuns != runs || !w.drained || w.reason != "bad fan" || len(w.violations) > 0 || (step == "") == kept || kept && e.Step != step {
			t.Errorf("%s: outcome %+v, %d change runs (want %d), drained %v (%q), entry %v %+v (want step %q), violations %v\n%s",
				name, out, w.changeRuns, runs, w.drained, w.reason, kept, e, step, w.violations, strings.Join(events, "\n"))
		}
	}
	// At the apply step, before the command ran: dropped.
	w := newWorld(t)
	w.drained, w.reason = true, "bad fan"
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepApply, Started: w.now, Since: w.now}
	out, _ := w.controller(&events).Run(nil)
	check("apply, no run yet", w, out, "", 0)
	if !slices.Equal(out.Abandoned, []string{"gpu01"}) {
		t.Errorf("apply, no run yet: %+v, want abandoned", out)
	}
	// At the apply step after a killed run: kept, waiting; hours later
	// still so; once resumed by the admin, drained again and changed.
	w = newWorld(t)
	w.drained, w.reason = true, "bad fan"
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepApply, Started: w.now, Since: w.now, Attempts: 1,
		SlurmdBefore: w.slurmdStart.UTC().Format(time.RFC3339)}
	out, _ = w.controller(&events).Run(nil)
	check("apply after a killed run", w, out, StepApply, 0)
	w.now = w.now.Add(10 * time.Hour)
	out, _ = w.controller(&events).Run(nil)
	check("apply after a killed run, 10 h on", w, out, StepApply, 0)
	if !slices.Equal(out.Waiting, []string{"gpu01"}) {
		t.Errorf("apply after a killed run: %+v, want waiting", out)
	}
	w.drained, w.reason = false, ""
	if out, _ := w.controller(&events).Run(nil); !slices.Equal(out.Done, []string{"gpu01"}) || w.layout != "all-balanced" || len(w.violations) > 0 {
		t.Errorf("after the admin's resume: %+v, layout %s, violations %v\n%s", out, w.layout, w.violations, strings.Join(events, "\n"))
	}
	// At the rollback step, waiting for a job that started after the
	// command resumed the node: the admin drains it meanwhile.
	w = newWorld(t)
	w.startMissing, w.jobsOnResume = true, 1
	w.run(&events)
	w.reason, w.jobs, w.jobsOnResume, w.startMissing = "bad fan", 0, 0, false
	out, _ = w.controller(&events).Run(nil)
	check("rollback", w, out, StepRollback, 1)
	// A rollback that fails on a node someone else drained meanwhile:
	// failed, their reason kept, until the node is resumed.
	w = newWorld(t)
	w.slurmdBroken = true
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepRollback, Started: w.now, Since: w.now, Attempts: 2, Why: "to all-balanced: broken"}
	w.drained, w.reason = true, Reason("all-1g")
	c := w.controller(&events)
	c.Slurm = drainsAtFail{w, new(int)}
	out, _ = c.Run(nil)
	check("rollback fails", w, out, StepFailed, 0)
	if !slices.Equal(out.Failed, []string{"gpu01"}) {
		t.Errorf("rollback fails: %+v, want failed", out)
	}
	w.drained, w.reason = false, ""
	if out, _ := w.controller(&events).Run(nil); len(w.entries) != 0 || len(out.Failed) != 0 {
		t.Errorf("after the admin's resume: %+v, entries %v", out, w.entries)
	}
}

// drainsAtFail is the world with an admin who drains the node for a bad
// fan just before the second look at it: the failed rollback's.
type drainsAtFail struct {
	*world
	looks *int
}

func (d drainsAtFail) Node(name string) (slurmhost.Node, error) {
	if *d.looks++; *d.looks == 2 {
		d.drained, d.reason = true, "bad fan"
	}
	return d.world.Node(name)
}

// TestRolloutOneNodesErrorHoldsNoOther: a change in the journal whose
// node slurmctld will not show (removed from slurm.conf, say) is an
// error of the run, but the journal's other changes go on, and no new
// change starts.
func TestRolloutOneNodesErrorHoldsNoOther(t *testing.T) {
	w := newWorld(t)
	w.unreachable = "gpu00"
	gone := toBalanced
	gone.Node = "gpu00"
	w.entries["gpu00"] = Entry{Change: gone, Step: StepWait, Started: w.now, Since: w.now}
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepDrain, Started: w.now, Since: w.now}
	other := toBalanced
	other.Node = "gpu02"
	var events []string
	out, err := w.controller(&events).Run([]Change{other})
	if err == nil || !strings.Contains(err.Error(), "node gpu00, step wait: scontrol show node gpu00: Invalid node name") {
		t.Errorf("error %v, want gpu00's", err)
	}
	if !slices.Equal(out.Done, []string{"gpu01"}) || w.layout != "all-balanced" || !slices.Equal(out.Skipped, []string{"gpu02"}) {
		t.Errorf("outcome %+v, layout %s\n%s", out, w.layout, strings.Join(events, "\n"))
	}
	if _, kept := w.entries["gpu00"]; !kept || !strings.Contains(strings.Join(events, "\n"), "gpu00 wait: error scontrol show node gpu00") {
		t.Errorf("gpu00's entry kept %v; events:\n%s", kept, strings.Join(events, "\n"))
	}
}

func TestRolloutRefusesChangeWithoutWayBack(t *testing.T) {
	w := newWorld(t)
	var events []string
	ch := toBalanced
	ch.WasConfig = ""
	if out, _ := w.controller(&events).Run([]Change{ch}); !slices.Equal(out.Skipped, []string{"gpu01"}) || w.ticks != 0 {
		t.Fatalf("%+v, %d actions", out, w.ticks)
	}
	ch = toBalanced
	ch.WasGres = counts["all-balanced"] // slurmctld holds other counts
	if out, _ := w.controller(&events).Run([]Change{ch}); !slices.Equal(out.Skipped, []string{"gpu01"}) || w.ticks != 0 {
		t.Fatalf("%+v, %d actions", out, w.ticks)
	}
}

// TestRolloutRefusesConfigNamesAShellReads: ssh joins the change
// command's words into one line for the node's shell, so a config name
// with a blank or a shell character never reaches the node.
func TestRolloutRefusesConfigNamesAShellReads(t *testing.T) {
	for _, bad := range []string{"all balanced", "x;reboot", "$(id)", "-rf", ""} {
		for _, field := range []string{"Config", "WasConfig"} {
			w := newWorld(t)
			var events []string
			ch := toBalanced
			if field == "Config" {
				ch.Config = bad
			} else {
				ch.WasConfig = bad
			}
			if out, _ := w.controller(&events).Run([]Change{ch}); !slices.Equal(out.Skipped, []string{"gpu01"}) || w.ticks != 0 || w.changeRuns != 0 {
				t.Errorf("%s %q: %+v, %d actions\n%s", field, bad, out, w.ticks, strings.Join(events, "\n"))
			}
		}
	}
	w := newWorld(t)
	var events []string
	ch := toBalanced
	ch.Config = "all-1g.10gb+2g_x"
	counts[ch.Config] = counts["all-balanced"]
	defer delete(counts, ch.Config)
	if out, _ := w.controller(&events).Run([]Change{ch}); !slices.Equal(out.Done, []string{"gpu01"}) {
		t.Errorf("a name of letters, digits and . _ + -: %+v\n%s", out, strings.Join(events, "\n"))
	}
}

// TestRolloutSaysWhatItDid: a node someone else drained at the resume
// step is said to be left so, not resumed; a new change whose node
// scontrol will not show has an event of its own.
func TestRolloutSaysWhatItDid(t *testing.T) {
	w := newWorld(t)
	w.drained, w.reason = true, "bad fan"
	w.layout, w.gres = "all-balanced", "all-balanced"
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepResume, Started: w.now, Since: w.now, Outcome: "done"}
	var events []string
	out, _ := w.run(&events)
	got := strings.Join(events, "\n")
	if !slices.Equal(out.Done, []string{"gpu01"}) || !w.drained || !strings.Contains(got, "gpu01 resume: left done; its state is IDLE+DRAIN, Reason=bad fan") {
		t.Errorf("outcome %+v, drained %v, events:\n%s", out, w.drained, got)
	}
	// Resumed by the change command, and not yet pinged by a slurmctld
	// just restarted (seen on 22.05 to 26.05): resumed, no one's drain.
	w = newWorld(t)
	w.quiet = true
	w.layout, w.gres = "all-balanced", "all-balanced"
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepResume, Started: w.now, Since: w.now, Outcome: "done"}
	events = nil
	if out, _ := w.run(&events); !slices.Equal(out.Done, []string{"gpu01"}) || !strings.Contains(strings.Join(events, "\n"), "gpu01 resume: resumed done") {
		t.Errorf("a node not yet heard from: %+v\n%s", out, strings.Join(events, "\n"))
	}
	w = newWorld(t)
	w.unreachable = "gpu01"
	events = nil
	if _, err := w.controller(&events).Run([]Change{toBalanced}); err == nil || !strings.Contains(strings.Join(events, "\n"), "gpu01 drain: error scontrol show node gpu01") {
		t.Errorf("error %v, events:\n%s", err, strings.Join(events, "\n"))
	}
}

// TestRegisteredNeedsAStartSinceTheStep: a step that began when
// slurmctld knew no slurmd start (None) takes the step's own start as
// the before, so a slurmd that was up all along is not the change's.
func TestRegisteredNeedsAStartSinceTheStep(t *testing.T) {
	since := time.Date(2026, 11, 28, 10, 0, 0, 0, time.Local)
	gres := counts["all-balanced"]
	for _, c := range []struct {
		before, start string
		want          bool
	}{
		{"2026-11-28T09:00:00", "2026-11-28T10:00:05", true},
		{"2026-11-28T09:00:00", "2026-11-28T09:00:00", false},
		{"None", "2026-11-28T10:00:05", true},
		{"None", "2026-11-28T09:59:00", false}, // up since before the step
		{"None", "None", false},
		{"", "2026-11-28T09:59:00", false},
	} {
		e := &Entry{Since: since, SlurmdBefore: c.before}
		st := slurmhost.Node{Gres: gres, State: "IDLE+DRAIN", SlurmdStart: c.start}
		if got := registered(e, st, gres); got != c.want {
			t.Errorf("slurmd before %q, now %q: registered = %v, want %v", c.before, c.start, got, c.want)
		}
	}
}

func TestSameCounts(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"gpu:3g.40gb:1(S:0),gpu:1g.10gb:2(S:0)", "gpu:1g.10gb:2,gpu:3g.40gb:1", true},
		{"gpu:1g.10gb:1,gpu:1g.10gb:1", "gpu:1g.10gb:2", true},
		{"gpu:1g.10gb:2", "gpu:1g.10gb:3", false},
		{"gpu:1g.10gb:2", "gpu:2g.20gb:2", false},
		{"(null)", "(null)", false},
	} {
		if got := sameCounts(c.a, c.b); got != c.want {
			t.Errorf("sameCounts(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// TestRolloutHoldDoesNotSpendTheTimeout: a rollback held for hours by
// someone else's drain, then resumed by them with a job starting there:
// the wait for that job starts when the node is drained again, so the
// step waits, and rolls back once the job ends, rather than failing at
// once for the hours of the hold.
func TestRolloutHoldDoesNotSpendTheTimeout(t *testing.T) {
	w := newWorld(t)
	var events []string
	w.drained, w.reason = true, "bad fan"
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepRollback, Started: w.now, Since: w.now, Attempts: 1,
		SlurmdBefore: w.slurmdStart.UTC().Format(time.RFC3339), Why: "to all-balanced: broken"}
	if out, _ := w.controller(&events).Run(nil); !slices.Equal(out.Waiting, []string{"gpu01"}) {
		t.Fatalf("held: %+v", out)
	}
	w.now = w.now.Add(2 * time.Hour)
	w.drained, w.reason, w.jobs = false, "", 1
	out, _ := w.controller(&events).Run(nil)
	if e := w.entries["gpu01"]; !slices.Equal(out.Waiting, []string{"gpu01"}) || e.Step != StepRollback || !w.drained || w.changeRuns != 0 {
		t.Fatalf("resumed with a job after a 2 h hold: %+v, step %s, drained %v, %d runs\n%s", out, e.Step, w.drained, w.changeRuns, strings.Join(events, "\n"))
	}
	w.jobs = 0
	if out, _ := w.controller(&events).Run(nil); !slices.Equal(out.RolledBack, []string{"gpu01"}) || w.changeRuns != 1 || len(w.violations) > 0 {
		t.Errorf("the job ended: %+v, %d runs, violations %v\n%s", out, w.changeRuns, w.violations, strings.Join(events, "\n"))
	}
}

// TestRolloutApplyLeftIfResumed: at the apply step before the command
// first ran, a node someone resumed is theirs, as at the wait step: the
// change is dropped, the node not drained again.
func TestRolloutApplyLeftIfResumed(t *testing.T) {
	w := newWorld(t)
	var events []string
	w.entries["gpu01"] = Entry{Change: toBalanced, Step: StepApply, Started: w.now, Since: w.now}
	out, _ := w.controller(&events).Run(nil)
	if !slices.Equal(out.Abandoned, []string{"gpu01"}) || w.drained || w.changeRuns != 0 || len(w.entries) != 0 {
		t.Errorf("%+v, drained %v, %d runs, entries %v\n%s", out, w.drained, w.changeRuns, w.entries, strings.Join(events, "\n"))
	}
}

// TestRolloutFailureInTheRunStopsTheNext: a change that fails in a run
// stops the changes after it in that run, as one failed in the journal
// does.
func TestRolloutFailureInTheRunStopsTheNext(t *testing.T) {
	f := &failingFleet{states: map[string]*slurmhost.Node{}, entries: map[string]Entry{}}
	var changes []Change
	for _, n := range []string{"gpu01", "gpu02"} {
		f.states[n] = &slurmhost.Node{Gres: counts["all-1g"], State: "IDLE", SlurmdStart: "2026-11-01T00:00:00"}
		ch := toBalanced
		ch.Node = n
		changes = append(changes, ch)
	}
	c := &Controller{Store: f, Slurm: f, Changer: f, Now: time.Now, Limits: Limits{MaxNodes: 2, DrainTimeout: time.Hour, MaxAttempts: 1}}
	out, err := c.Run(changes)
	if err != nil || !slices.Equal(out.Failed, []string{"gpu01"}) || !slices.Equal(out.Skipped, []string{"gpu02"}) || !slices.Equal(f.runs, []string{"gpu01", "gpu01"}) {
		t.Errorf("%v, %+v, change runs %v: want gpu01 failed, gpu02 skipped", err, out, f.runs)
	}
}

// failingFleet is nodes whose change command always fails, and a
// journal in memory.
type failingFleet struct {
	states  map[string]*slurmhost.Node
	entries map[string]Entry
	runs    []string
}

func (f *failingFleet) Node(name string) (slurmhost.Node, error) { return *f.states[name], nil }
func (f *failingFleet) Drain(name, reason string) error {
	f.states[name].State, f.states[name].Reason = "IDLE+DRAIN", reason
	return nil
}
func (f *failingFleet) Resume(name string) error {
	f.states[name].State, f.states[name].Reason = "IDLE", ""
	return nil
}
func (f *failingFleet) Change(node, config string) error {
	f.runs = append(f.runs, node)
	return fmt.Errorf("exit status 1")
}
func (f *failingFleet) Entries() ([]Entry, error) {
	return slices.SortedFunc(maps.Values(f.entries), func(a, b Entry) int { return strings.Compare(a.Node, b.Node) }), nil
}
func (f *failingFleet) Save(e *Entry) error                 { f.entries[e.Node] = *e; return nil }
func (f *failingFleet) Remove(node string) error            { delete(f.entries, node); return nil }
func (f *failingFleet) Record(e *Entry, at time.Time) error { return nil }
