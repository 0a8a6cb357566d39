package claim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Info is what a claim file says about its claimant, for people and for
// other claimants' messages; the lock alone decides.
type Info struct {
	Job          Job    // the process whose end ends the claim
	SchedulerJob string // LSB_JOBID, PBS_JOBID or SLURM_JOB_ID, if set
	Command      string // free or exec
}

func (in Info) bytes(uuid string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "device %s\nuid %d\npid %d\njob_pid %d\njob_start %d\n", uuid, os.Getuid(), os.Getpid(), in.Job.PID, in.Job.Start)
	if in.SchedulerJob != "" {
		fmt.Fprintf(&b, "scheduler_job %s\n", in.SchedulerJob)
	}
	fmt.Fprintf(&b, "command %s\nclaimed %s\n", in.Command, time.Now().UTC().Format(time.RFC3339))
	return []byte(b.String())
}

// Claim is a set of claimed devices. Its files hold the locks: the claim
// lasts while any process has them open.
type Claim struct {
	UUIDs []string
	Files []*os.File
}

// Close closes this process's descriptors of the claim; the claim ends
// unless another process (a holder, an exec'd command) has them too.
func (c *Claim) Close() {
	for _, f := range c.Files {
		f.Close()
	}
}

// retryFor bounds how long Take tries again while claims it found held
// are ending (their holders let go within a moment of their job's end),
// or other claimants are still choosing devices it wants.
const retryFor = 2 * time.Second

// patience bounds how long a claimant waits for others to decide (see
// Dir.claim): they take microseconds, or a few scheduler time slices on
// a machine that a burst of calls keeps busy.
const patience = 50 * time.Millisecond

// Take claims count of uuids that no live claim holds, those without claim
// files first. With fewer free it claims nothing and returns the holders by
// UUID; it tries again, for at most wait and retryFor, while that may change.
func (d *Dir) Take(uuids []string, count int, info Info, wait time.Duration) (*Claim, map[string]Holder, error) {
	deadline := time.Now().Add(min(wait, retryFor))
	for attempt := 0; ; attempt++ {
		c, held, retry, err := d.takeOnce(uuids, count, info, attempt, deadline)
		if err != nil || c != nil {
			return c, nil, err
		}
		if !retry || time.Now().After(deadline) {
			return nil, held, nil
		}
		// Those who chose the same devices at once all give them up:
		// they try again after a random while, so that one comes first.
		time.Sleep(time.Duration(rand.Int64N(int64(50*time.Microsecond) << min(attempt, 6))))
	}
}

// takeOnce is one attempt of Take, choosing in uuids' order (at random after
// the first attempt) and testing claim files only as needed; retry says
// whether, with too few free, that may change in a moment.
func (d *Dir) takeOnce(uuids []string, count int, info Info, attempt int, deadline time.Time) (*Claim, map[string]Holder, bool, error) {
	names, err := d.list(uuids, nil)
	if err != nil {
		return nil, nil, false, err
	}
	var free, withFiles []string
	for _, uuid := range uuids {
		if len(names[uuid]) == 0 {
			free = append(free, uuid)
		} else {
			withFiles = append(withFiles, uuid)
		}
	}
	held := map[string]Holder{}
	retry := false // some device may be free in a moment
	for _, uuid := range withFiles {
		if len(free) >= count {
			break
		}
		f, err := d.test(uuid, names[uuid], true)
		if err != nil {
			return nil, nil, false, err
		}
		switch f.stage {
		case claimed:
			held[uuid] = f.holder
		case choosing:
			held[uuid] = f.holder
			retry = true
		default:
			free = append(free, uuid)
		}
	}
	if len(free) < count {
		gone := map[Job]bool{} // a job's claims are many, its process one
		for _, h := range held {
			g, seen := gone[h.job()]
			if !seen {
				g = h.jobGone()
				gone[h.job()] = g
			}
			retry = retry || g
		}
		return nil, held, retry, nil
	}
	if attempt > 0 {
		rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	}
	free = free[:count]
	// In the order of preference, whichever way they were chosen.
	rank := make(map[string]int, len(uuids))
	for i, uuid := range uuids {
		rank[uuid] = i
	}
	sort.Slice(free, func(a, b int) bool { return rank[free[a]] < rank[free[b]] })
	c, others, err := d.claim(free, info, deadline)
	if err != nil || c != nil {
		return c, nil, false, err
	}
	for uuid, h := range others {
		held[uuid] = h
	}
	return nil, held, true, nil
}

// claim makes claim files for uuids and keeps them all if no one else claims
// any. It gives all up, returning the holders, on finding a claim made, a
// choosing rival whose name sorts first, or at deadline (patience at most).
func (d *Dir) claim(uuids []string, info Info, deadline time.Time) (*Claim, map[string]Holder, error) {
	if p := time.Now().Add(patience); p.Before(deadline) {
		deadline = p
	}
	c := &Claim{}
	mine := map[string]bool{}
	name := map[string]string{} // UUID -> the name of its claim file
	for _, uuid := range uuids {
		f, err := d.create(uuid, info.bytes(uuid))
		if err != nil {
			d.giveUp(c)
			return nil, nil, err
		}
		c.UUIDs = append(c.UUIDs, uuid)
		c.Files = append(c.Files, f)
		name[uuid] = filepath.Base(f.Name())
		mine[name[uuid]] = true
	}
	for {
		names, err := d.list(uuids, mine)
		others := map[string]Holder{}
		lose := false
		for _, uuid := range uuids {
			var f found
			if err == nil {
				f, err = d.test(uuid, names[uuid], false)
			}
			if f.stage != unclaimed {
				others[uuid] = f.holder
				lose = lose || f.stage == claimed || f.first < name[uuid]
			}
		}
		if err != nil {
			d.giveUp(c)
			return nil, nil, err
		}
		if len(others) == 0 {
			break
		}
		if lose || time.Now().After(deadline) {
			d.giveUp(c)
			return nil, others, nil
		}
		time.Sleep(20 * time.Microsecond)
	}
	for _, f := range c.Files {
		if err := settle(f); err != nil {
			d.giveUp(c)
			return nil, nil, fmt.Errorf("claims directory %s: %w", d.path, err)
		}
	}
	return c, nil, nil
}
