// Package rollout applies layout changes to Slurm nodes: drain the node
// with a reason of its own, wait until no job runs there, run the site's
// change command, check what slurmctld then holds, and resume the node.
// Each node's step is saved in a journal before the step acts, and every
// step may run again, so a run killed at any point is finished, or
// undone, by the next one. docs/rebalance.md says why each step is so.
package rollout

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Change is one node's move from one mig-parted config to another.
type Change struct {
	Node   string `json:"node"`
	Config string `json:"config"`
	// Gres is the gpu counts the node has under Config, as plan gives
	// them: what slurmctld must hold before the node resumes.
	Gres string `json:"gres"`
	// WasConfig and WasGres are the node's config and counts now: the
	// way back if the change fails.
	WasConfig string `json:"was_config"`
	WasGres   string `json:"was_gres"`
}

// Step is where a node's change stands.
type Step string

const (
	StepDrain    Step = "drain"    // to be drained
	StepWait     Step = "wait"     // drained; waiting until no job runs there
	StepApply    Step = "apply"    // the change command runs for Config
	StepRollback Step = "rollback" // the change failed; the command runs for WasConfig
	StepResume   Step = "resume"   // the node has its layout; to be resumed
	StepFailed   Step = "failed"   // the change and its rollback failed: left drained for an admin
)

// Entry is one node's journal file.
type Entry struct {
	Version int `json:"version"`
	Change
	Step Step `json:"step"`
	// Started is when the change was taken, Since when Step began.
	Started time.Time `json:"started"`
	Since   time.Time `json:"since"`
	// Attempts counts the change command's runs in this step, a killed
	// run included.
	Attempts int `json:"attempts"`
	// SlurmdBefore is the node's SlurmdStartTime when the step's first
	// run began: a later one is the command's registration. RFC 3339 in
	// UTC; an earlier version wrote scontrol's local time, with no zone.
	SlurmdBefore string `json:"slurmd_before,omitempty"`
	// Why says what failed, once something has.
	Why string `json:"why,omitempty"`
	// Outcome is what the resume step reports, done or rolled back, or
	// OutcomeAbandoned.
	Outcome string `json:"outcome,omitempty"`
}

// OutcomeAbandoned is the record of a change given up because jobs still
// ran on the node at the drain timeout.
const OutcomeAbandoned = "abandoned"

// Reason is the Reason= a node is drained with for a change to config:
// it names slurm-mig and the target, and it is repartition.sh's own, so
// the script's drain of a node already drained keeps it.
func Reason(config string) string { return "slurm-mig repartition to " + config }

// failedReason is the Reason= of a node whose change and rollback failed.
func failedReason(config string) string { return Reason(config) + " failed: see the journal" }

// Slurm is what a rollout asks of slurmctld.
type Slurm interface {
	Node(name string) (slurmhost.Node, error)
	Drain(name, reason string) error
	Resume(name string) error
}

// Changer runs the site's change command on a drained, empty node: it
// applies config and leaves the node registered with its counts (or
// resumed: a resume of a resumed node does nothing).
type Changer interface {
	Change(node, config string) error
}

// Store keeps the entries (Journal, or a test's).
type Store interface {
	Entries() ([]Entry, error)
	Save(e *Entry) error
	Remove(node string) error
	// Record notes a finished change (done or rolled back) as finished
	// at: the policy's dwell counts from it. The same e and at again (a
	// run killed before Remove) add nothing.
	Record(e *Entry, at time.Time) error
}

// Limits bound a rollout.
type Limits struct {
	// MaxNodes is how many nodes may be in change at once, 1 or more.
	MaxNodes int
	// DrainTimeout is how long a drained node may take to empty before
	// its change is abandoned and it resumes.
	DrainTimeout time.Duration
	// MaxAttempts is how many runs the change command gets in one step.
	MaxAttempts int
}

// Event is one step taken, for a log line or a JSON object.
type Event struct {
	Time   time.Time `json:"time"`
	Node   string    `json:"node"`
	Step   Step      `json:"step"`
	What   string    `json:"what"`
	Detail string    `json:"detail,omitempty"`
}

// Outcome is what a run left, node names by what became of them.
type Outcome struct {
	Done       []string `json:"done"`
	RolledBack []string `json:"rolled_back"`
	Abandoned  []string `json:"abandoned"`
	Failed     []string `json:"failed"`
	Waiting    []string `json:"waiting"`
	Skipped    []string `json:"skipped"`
}

// Troubled says whether the run needs an admin's eye: a change rolled
// back, or failed.
func (o Outcome) Troubled() bool { return len(o.RolledBack)+len(o.Failed) > 0 }

// Controller runs one pass of the rollout: it advances every change in
// the journal, then takes new ones up to the limit.
type Controller struct {
	Store   Store
	Slurm   Slurm
	Changer Changer
	Limits  Limits
	Now     func() time.Time
	// Report is told each step as it is taken.
	Report func(Event)
}

// Run advances every change in the journal, then starts those of changes
// within the limit unless one failed (an admin looks first) or erred. An
// error is journal or slurmctld I/O; the journal still says where all stand.
func (c *Controller) Run(changes []Change) (Outcome, error) {
	// Lists, [] in JSON when empty, as the proposal's are.
	out := Outcome{Done: []string{}, RolledBack: []string{}, Abandoned: []string{}, Failed: []string{}, Waiting: []string{}, Skipped: []string{}}
	entries, err := c.Store.Entries()
	if err != nil {
		return out, err
	}
	inFlight, failed := map[string]bool{}, 0
	var errs []error
	for i := range entries {
		e := &entries[i]
		inFlight[e.Node] = true
		if err := c.advance(e, &out); err != nil {
			c.say(e.Node, e.Step, "error", err.Error())
			errs = append(errs, fmt.Errorf("node %s, step %s: %w", e.Node, e.Step, err))
			continue
		}
		if e.Step == StepFailed {
			failed++
		}
	}
	busy := len(out.Waiting) + failed
	for _, ch := range changes {
		if inFlight[ch.Node] {
			continue
		}
		why := ""
		switch {
		case len(errs) > 0:
			why = "a change could not go on: no new change starts"
		case len(out.Failed) > 0: // from the journal, or a change of this run
			why = "a failed change waits for an admin: no new change starts"
		case busy >= c.Limits.MaxNodes:
			why = fmt.Sprintf("%d nodes in change already, the most at once", busy)
		}
		if why != "" {
			c.say(ch.Node, StepDrain, "skipped", why)
			out.Skipped = append(out.Skipped, ch.Node)
			continue
		}
		started, err := c.start(ch, &out)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", ch.Node, err))
		}
		if started {
			busy++
		}
	}
	switch len(errs) {
	case 0:
		return out, nil
	case 1:
		return out, errs[0]
	}
	return out, fmt.Errorf("%d changes could not go on (each is logged above); the first: %w", len(errs), errs[0])
}

// start takes a new change: the node must be in service with the counts
// the proposal saw, and have a config to go back to.
func (c *Controller) start(ch Change, out *Outcome) (bool, error) {
	st, err := c.Slurm.Node(ch.Node)
	if err != nil {
		c.say(ch.Node, StepDrain, "error", err.Error())
		return false, err
	}
	why := ""
	switch {
	case ch.WasConfig == "":
		why = "its layout now is no config of the file: no way back"
	case !configName.MatchString(ch.Config) || !configName.MatchString(ch.WasConfig):
		why = fmt.Sprintf("config %q or %q has a character that a shell on the node would read (ssh passes the change command's words to one): name it with letters, digits and . _ + -", ch.Config, ch.WasConfig)
	case slurmconf.OutOfService(st.State):
		why = "its state is " + st.State
	case !sameCounts(st.Gres, ch.WasGres):
		why = fmt.Sprintf("slurmctld holds Gres=%s, not the %s the proposal saw", st.Gres, ch.WasGres)
	}
	if why != "" {
		c.say(ch.Node, StepDrain, "skipped", why)
		out.Skipped = append(out.Skipped, ch.Node)
		return false, nil
	}
	now := c.Now()
	e := Entry{Change: ch, Step: StepDrain, Started: now, Since: now}
	if err := c.Store.Save(&e); err != nil {
		c.say(ch.Node, StepDrain, "error", err.Error())
		return false, err
	}
	if err := c.advance(&e, out); err != nil {
		c.say(e.Node, e.Step, "error", err.Error())
		return true, err
	}
	return true, nil
}

// configName is what a config's name may be to reach the node: ssh joins
// the change command's words into one line for the node's shell.
var configName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// advance takes e as far as it goes now: to its end, or to a wait.
func (c *Controller) advance(e *Entry, out *Outcome) error {
	for {
		switch e.Step {
		case StepDrain:
			st, err := c.Slurm.Node(e.Node)
			if err != nil {
				return err
			}
			if !c.ours(e, st) {
				if slurmconf.OutOfService(st.State) {
					// Taken out of service by someone else before our
					// drain: theirs, not to be overwritten.
					c.say(e.Node, e.Step, "left", "its state is "+st.State+", Reason="+st.Reason)
					out.Skipped = append(out.Skipped, e.Node)
					return c.Store.Remove(e.Node)
				}
				if err := c.Slurm.Drain(e.Node, Reason(e.Config)); err != nil {
					return err
				}
			}
			c.say(e.Node, e.Step, "drained", Reason(e.Config))
			if err := c.next(e, StepWait); err != nil {
				return err
			}
		case StepWait:
			st, err := c.Slurm.Node(e.Node)
			if err != nil {
				return err
			}
			if !c.ours(e, st) {
				c.say(e.Node, e.Step, "left", "no longer drained for slurm-mig: its state is "+st.State+", Reason="+st.Reason)
				out.Abandoned = append(out.Abandoned, e.Node)
				return c.Store.Remove(e.Node)
			}
			if slurmconf.HasStateWord(st.State, "DOWN") {
				// Its slurmd is gone: not put back in service, nor changed,
				// until slurmctld has it back, whatever the drain timeout.
				c.say(e.Node, e.Step, "waiting", "the node is "+st.State+": the change goes on once slurmctld has it back")
				out.Waiting = append(out.Waiting, e.Node)
				return nil
			}
			if empty(st.State) {
				c.say(e.Node, e.Step, "empty", "no job runs there")
				if err := c.next(e, StepApply); err != nil {
					return err
				}
				continue
			}
			if waited := c.Now().Sub(e.Since); waited > c.Limits.DrainTimeout {
				c.say(e.Node, e.Step, "abandoned", fmt.Sprintf("jobs still run there after %s", waited.Round(time.Second)))
				// Recorded first, once however often this runs again: the
				// proposal then takes the node again only once it is empty.
				e.Outcome = OutcomeAbandoned
				if err := c.Store.Record(e, e.Since); err != nil {
					return err
				}
				if err := c.Slurm.Resume(e.Node); err != nil {
					return err
				}
				out.Abandoned = append(out.Abandoned, e.Node)
				return c.Store.Remove(e.Node)
			}
			c.say(e.Node, e.Step, "waiting", "jobs still run there ("+st.State+")")
			out.Waiting = append(out.Waiting, e.Node)
			return nil
		case StepApply, StepRollback:
			config, gres := e.Config, e.Gres
			if e.Step == StepRollback {
				config, gres = e.WasConfig, e.WasGres
			}
			st, err := c.Slurm.Node(e.Node)
			if err != nil {
				return err
			}
			drained := slurmconf.HasStateWord(st.State, "DRAIN")
			switch {
			case e.Step == StepRollback && drained && strings.HasPrefix(st.Reason, failedReason(e.Config)):
				// fail drains the node before it saves the failed step:
				// a run killed between the two left this.
				if err := c.next(e, StepFailed); err != nil {
					return err
				}
				continue
			case e.Step == StepApply && e.Attempts == 0 && (!drained || !c.ours(e, st)):
				// Resumed, or drained by someone else, before anything
				// changed: as in the wait step, the node is theirs.
				c.say(e.Node, e.Step, "left", "no longer drained for slurm-mig: its state is "+st.State+", Reason="+st.Reason)
				out.Abandoned = append(out.Abandoned, e.Node)
				return c.Store.Remove(e.Node)
			case drained && !c.ours(e, st):
				// The layout may be half made, so the change is kept; but
				// their drain is neither overwritten nor lifted, and the
				// command does not run until they resume the node.
				c.say(e.Node, e.Step, "waiting", "drained for another reason, Reason="+st.Reason+": the change goes on once the node is resumed")
				out.Waiting = append(out.Waiting, e.Node)
				return nil
			}
			// A killed run may have left the change made, and the
			// command may have resumed the node: it is not run again
			// on a node where jobs may run now.
			if e.Attempts > 0 && registered(e, st, gres) {
				c.say(e.Node, e.Step, "applied", "found made by an earlier run: Gres="+st.Gres)
				if err := c.finish(e, config); err != nil {
					return err
				}
				continue
			}
			// The command resumes the node when done, so a failed check or a
			// kill after it leaves the node where jobs may start: drain it
			// again, and run the command only once no job runs there.
			if !drained {
				if err := c.Slurm.Drain(e.Node, Reason(config)); err != nil {
					return err
				}
				c.say(e.Node, e.Step, "drained", Reason(config)+" (it was in service)")
				// The wait for its jobs, and its timeout, start now: the
				// node may have been held, resumed, for hours.
				e.Since = c.Now()
				if err := c.Store.Save(e); err != nil {
					return err
				}
				if st, err = c.Slurm.Node(e.Node); err != nil {
					return err
				}
			}
			if busy(st.State) {
				if waited := c.Now().Sub(e.Since); waited > c.Limits.DrainTimeout {
					if err := c.fail(e, fmt.Sprintf("jobs still run there after %s", waited.Round(time.Second))); err != nil {
						return err
					}
					continue
				}
				c.say(e.Node, e.Step, "waiting", "jobs still run there ("+st.State+")")
				out.Waiting = append(out.Waiting, e.Node)
				return nil
			}
			if e.Attempts >= c.Limits.MaxAttempts {
				if err := c.fail(e, fmt.Sprintf("the change command to %s did not finish in %d runs", config, e.Attempts)); err != nil {
					return err
				}
				continue
			}
			if e.Attempts == 0 {
				e.SlurmdBefore = st.SlurmdStart
				if t, ok := st.SlurmdStarted(); ok {
					e.SlurmdBefore = t.Format(time.RFC3339)
				}
			}
			e.Attempts++
			if err := c.Store.Save(e); err != nil {
				return err
			}
			c.say(e.Node, e.Step, "applying", config)
			err = c.Changer.Change(e.Node, config)
			if err == nil {
				// slurmctld not answering (the command may have just
				// restarted it) is this run's error, not the change's: the
				// step is kept, and the next run finds the change made.
				if st, err = c.Slurm.Node(e.Node); err != nil {
					return err
				}
				err = check(e, st, gres)
			}
			if err != nil {
				if err := c.fail(e, err.Error()); err != nil {
					return err
				}
				continue
			}
			c.say(e.Node, e.Step, "applied", "Gres="+gres)
			if err := c.finish(e, config); err != nil {
				return err
			}
		case StepResume:
			st, err := c.Slurm.Node(e.Node)
			if err != nil {
				return err
			}
			what, detail := "resumed", e.Outcome
			if c.ours(e, st) {
				if err := c.Slurm.Resume(e.Node); err != nil {
					return err
				}
			} else if slurmconf.HasStateWord(st.State, "DRAIN") {
				// Someone else's drain: a node just not heard from yet is no one's.
				what, detail = "left", e.Outcome+"; its state is "+st.State+", Reason="+st.Reason
			}
			// The resume step's start, not now: a run that repeats
			// the step records the same line, which the store keeps once.
			if err := c.Store.Record(e, e.Since); err != nil {
				return err
			}
			c.say(e.Node, e.Step, what, detail)
			if e.Outcome == "done" {
				out.Done = append(out.Done, e.Node)
			} else {
				out.RolledBack = append(out.RolledBack, e.Node)
			}
			return c.Store.Remove(e.Node)
		case StepFailed:
			st, err := c.Slurm.Node(e.Node)
			if err != nil {
				return err
			}
			if !slurmconf.HasStateWord(st.State, "DRAIN") {
				// An admin has resumed the node: theirs now.
				c.say(e.Node, e.Step, "cleared", "no longer drained: its state is "+st.State)
				return c.Store.Remove(e.Node)
			}
			if !c.ours(e, st) {
				// Drained for another reason: theirs, and kept; the
				// failure stands until the node is resumed.
				c.say(e.Node, e.Step, "failed", e.Why+" (left drained for Reason="+st.Reason+")")
				out.Failed = append(out.Failed, e.Node)
				return nil
			}
			if !strings.HasPrefix(st.Reason, failedReason(e.Config)) {
				// A run killed between the step and the drain.
				if err := c.Slurm.Drain(e.Node, failedReason(e.Config)); err != nil {
					return err
				}
			}
			c.say(e.Node, e.Step, "failed", e.Why)
			out.Failed = append(out.Failed, e.Node)
			return nil
		default:
			return fmt.Errorf("journal: node %s: unknown step %q", e.Node, e.Step)
		}
	}
}

// fail moves a failed apply to its rollback, and a failed rollback (or
// a change with no way back) to failed, where the node stays drained
// with a reason that says so.
func (c *Controller) fail(e *Entry, why string) error {
	if e.Step == StepApply {
		e.Why = "to " + e.Config + ": " + why
		c.say(e.Node, e.Step, "change failed", why)
		return c.next(e, StepRollback)
	}
	// A rollback run again after a kill says its own failure, once.
	e.Why, _, _ = strings.Cut(e.Why, "; back to ")
	e.Why += "; back to " + e.WasConfig + ": " + why
	c.say(e.Node, e.Step, "rollback failed", why)
	// The why is saved, then the node drained, then the step: a run
	// killed before the step is saved finds the failed drain (advance).
	// A drain of someone else's is left as it is.
	if err := c.Store.Save(e); err != nil {
		return err
	}
	st, err := c.Slurm.Node(e.Node)
	if err != nil {
		return err
	}
	if !slurmconf.HasStateWord(st.State, "DRAIN") || c.ours(e, st) {
		if err := c.Slurm.Drain(e.Node, failedReason(e.Config)); err != nil {
			return err
		}
	}
	return c.next(e, StepFailed)
}

// finish records the node's layout as made, so that the resume follows.
func (c *Controller) finish(e *Entry, config string) error {
	e.Outcome = "done"
	if config != e.Config {
		e.Outcome = "rolled back to " + config
	}
	return c.next(e, StepResume)
}

// next moves e to step and saves it.
func (c *Controller) next(e *Entry, step Step) error {
	e.Step, e.Since, e.Attempts = step, c.Now(), 0
	return c.Store.Save(e)
}

// check says whether slurmctld, showing st, holds gres for the node from a
// slurmd registered since the step began.
func check(e *Entry, st slurmhost.Node, gres string) error {
	if st.RegistrationRefused() {
		return fmt.Errorf("slurmctld refused the node's registration: %s, Reason=%s", st.State, st.Reason)
	}
	if st.SlurmdStart == "" {
		// Every release from 20.11 prints it; without it no
		// registration can be told from the one before the change.
		return fmt.Errorf("scontrol shows no SlurmdStartTime= for the node (Gres=%s, state %s): want %s from a slurmd started since the change began", st.Gres, st.State, gres)
	}
	if !registered(e, st, gres) {
		return fmt.Errorf("slurmctld holds Gres=%s, state %s, slurmd started %s (before the change: %s); want %s from a slurmd started since", st.Gres, st.State, st.SlurmdStart, e.SlurmdBefore, gres)
	}
	return nil
}

// registered says whether st has the counts gres from a slurmd up and
// started after e.SlurmdBefore, both on the node's clock, so skew cannot
// enter; a time that merely differs proves nothing (a restart shows None).
func registered(e *Entry, st slurmhost.Node, gres string) bool {
	// Not NOT_RESPONDING: slurmctld, just restarted, says so of a node
	// that has registered until its next ping (seen on 22.05).
	if !sameCounts(st.Gres, gres) || strings.Contains(st.State, "INVAL") {
		return false
	}
	now, ok := st.SlurmdStarted()
	if !ok {
		return false
	}
	before, err := time.Parse(time.RFC3339, e.SlurmdBefore)
	if err != nil {
		// A journal of an earlier version, written in local time.
		before, err = time.ParseInLocation(slurmconf.TimeLayout, e.SlurmdBefore, time.Local)
	}
	if err != nil {
		// slurmctld knew no start (None: restarted, or slurmd down): the
		// step's start stands in, on the controller's clock, passed by an
		// old slurmd only if the node's clock is ahead by more than its age.
		before = e.Since
	}
	return now.After(before)
}

// ours says whether the node is drained for e's change: for its target,
// or for the way back (the change command drains for the config it
// applies).
func (c *Controller) ours(e *Entry, st slurmhost.Node) bool {
	if !strings.Contains(st.State, "DRAIN") {
		return false
	}
	for _, config := range []string{e.Config, e.WasConfig} {
		r := Reason(config)
		if config != "" && (st.Reason == r || strings.HasPrefix(st.Reason, r+" ")) {
			return true
		}
	}
	return false
}

func (c *Controller) say(node string, step Step, what, detail string) {
	if c.Report != nil {
		c.Report(Event{Time: c.Now(), Node: node, Step: step, What: what, Detail: detail})
	}
}

// empty says whether a drained node runs no job: Slurm's DRAINED is
// IDLE+DRAIN, not MIXED, ALLOCATED or COMPLETING.
func empty(state string) bool {
	words := strings.Split(strings.TrimSuffix(state, "*"), "+")
	if words[0] != "IDLE" {
		return false
	}
	for _, w := range words[1:] {
		if w == "COMPLETING" {
			return false
		}
	}
	return true
}

// busy says whether jobs run on a node: Slurm's MIXED, ALLOCATED or
// COMPLETING. A node that is down or not responding is not busy: the
// change command is what brings it back.
func busy(state string) bool { return slurmconf.HasStateWord(state, "MIXED", "ALLOC", "COMPLETING") }

// sameCounts says whether two Gres= values give the same gpu counts per
// type, whatever their order and socket annotations.
func sameCounts(a, b string) bool {
	ca, errA := slurmconf.GresTypeCounts(a, "gpu")
	cb, errB := slurmconf.GresTypeCounts(b, "gpu")
	return errA == nil && errB == nil && len(ca) > 0 && slurmconf.SameGresCounts(ca, cb)
}
