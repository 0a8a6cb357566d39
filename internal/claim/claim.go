package claim

import (
	"fmt"
	"os"
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
// are ending: their holders let go within a moment of their job's end.
const retryFor = 2 * time.Second

// Take claims count devices among uuids that no live claim holds: the
// first ones without any claim file, then the first ones whose files are
// all stale. When fewer are free it claims nothing and returns who holds
// the others, by UUID. timeout bounds the wait for the directory's lock.
func (d *Dir) Take(uuids []string, count int, info Info, timeout time.Duration) (*Claim, map[string]Holder, error) {
	deadline := time.Now().Add(retryFor)
	for {
		c, heldFile, err := d.takeOnce(uuids, count, info, timeout)
		if err != nil || c != nil {
			return c, nil, err
		}
		held, retry := d.holders(heldFile)
		if !retry || time.Now().After(deadline) {
			return nil, held, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// takeOnce is one attempt under the directory's lock. When too few
// devices are free it claims nothing, and returns a claim file found
// held for each device it found held.
func (d *Dir) takeOnce(uuids []string, count int, info Info, timeout time.Duration) (*Claim, map[string]string, error) {
	if err := d.lock(timeout); err != nil {
		return nil, nil, err
	}
	defer d.unlock()
	byKey, err := d.entries()
	if err != nil {
		return nil, nil, err
	}
	// A device without a claim file is free: claim files are made only
	// under this lock. Those come first, and cost no probe, so callers in
	// a burst do not probe each other's claims. A device with files is
	// free only if none of them is held (stale ones are removed on the way).
	var free, withFiles []string
	for _, uuid := range uuids {
		switch {
		case len(free) == count:
		case len(byKey[fileKey(uuid)]) == 0:
			free = append(free, uuid)
		default:
			withFiles = append(withFiles, uuid)
		}
	}
	heldFile := map[string]string{} // UUID -> a claim file whose lock is held
	for _, uuid := range withFiles {
		if len(free) == count {
			break
		}
		busy := false
		for _, name := range byKey[fileKey(uuid)] {
			if held, _ := d.probe(name, true); held {
				busy, heldFile[uuid] = true, name
				break
			}
		}
		if !busy {
			free = append(free, uuid)
		}
	}
	if len(free) < count {
		return nil, heldFile, nil
	}
	// In the order of preference, whichever way they were found.
	rank := make(map[string]int, len(uuids))
	for i, uuid := range uuids {
		rank[uuid] = i
	}
	sort.Slice(free, func(a, b int) bool { return rank[free[a]] < rank[free[b]] })
	c := &Claim{}
	for _, uuid := range free {
		f, err := d.create(fileKey(uuid), info.bytes(uuid))
		if err != nil {
			for _, f := range c.Files {
				os.Remove(f.Name())
			}
			c.Close()
			return nil, nil, err
		}
		c.UUIDs = append(c.UUIDs, uuid)
		c.Files = append(c.Files, f)
	}
	return c, nil, nil
}

// holders reads who holds the claim files found held, by UUID: on the
// way to a refusal, after the directory's lock, which others are waiting
// for. (Testing those files' locks needs no directory lock: their
// creators locked them long since, and nobody locks them again.) retry
// says some claim has ended meanwhile, or its job has (its holder lets go
// in a moment): worth another attempt.
func (d *Dir) holders(heldFile map[string]string) (map[string]Holder, bool) {
	held := map[string]Holder{}
	retry := false
	gone := map[Job]bool{} // a job's claims are many, its process one
	for uuid, name := range heldFile {
		ok, h := d.probe(name, false)
		if !ok {
			retry = true
			continue
		}
		held[uuid] = h
		job := Job{PID: h.JobPID, Start: h.jobStart}
		g, seen := gone[job]
		if !seen {
			g = h.jobGone()
			gone[job] = g
		}
		retry = retry || g
	}
	return held, retry
}
