package claim

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/claim/holder"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// Request is what free and exec ask for.
type Request struct {
	Count   int
	Profile string // only MIG devices of this profile (1g.10gb); all when empty
	// Visible is CUDA_VISIBLE_DEVICES as the job was started with it, and
	// VisibleSet whether it was set at all (unset: every GPU).
	Visible    string
	VisibleSet bool
	Dir        string        // the claims directory
	Job        Job           // whose end ends the claim
	Command    string        // free or exec, for the claim files
	Timeout    time.Duration // the most to wait for devices others are still choosing, or whose claims are ending
}

// Devices claims req.Count idle MIG devices of node among those the job
// may use. warn is told what of CUDA_VISIBLE_DEVICES was ignored, and
// what slows claims down (Dir.Warn).
func Devices(node *model.Node, req Request, warn func(error)) (*Claim, error) {
	if req.Count < 1 || req.Count > MaxDevices {
		return nil, fmt.Errorf("%d MIG devices asked for: want 1 to %d", req.Count, MaxDevices)
	}
	devs, warnings, err := Candidates(node, req)
	for _, w := range warnings {
		warn(errors.New(w))
	}
	if err != nil {
		return nil, err
	}
	dir, err := OpenDir(req.Dir)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	dir.Warn = warn
	return take(dir, devs, req)
}

// MaxDevices bounds how many MIG devices one call claims: no node has
// more, and a holder takes that many files at once.
const MaxDevices = holder.MaxFiles

// schedulerJob is the job id the scheduler exported, for claim files.
func schedulerJob() string {
	for _, v := range []string{"LSB_JOBID", "PBS_JOBID", "SLURM_JOB_ID", "JOB_ID"} {
		if id := os.Getenv(v); id != "" {
			return id
		}
	}
	return ""
}

// Device is a MIG device a job may claim.
type Device struct {
	GPU *model.GPU
	Mig *model.MigDevice
}

// Candidates returns, in GPU index and (GI, CI) order, the MIG devices that
// CUDA_VISIBLE_DEVICES names, or whose GPUs it names (all if unset), read as
// CUDA reads it; the warnings say what CUDA would ignore.
func Candidates(node *model.Node, req Request) (devs []Device, warnings []string, err error) {
	if len(node.GPUs) == 0 {
		return nil, nil, fmt.Errorf("no GPU on this node")
	}
	gpus, migs, warnings, err := visible(node, req)
	if err != nil {
		return nil, warnings, err
	}
	var all []Device
	for i := range node.GPUs {
		g := &node.GPUs[i]
		for j := range g.MigDevices {
			m := &g.MigDevices[j]
			if gpus[g] || migs[m] {
				all = append(all, Device{g, m})
			}
		}
	}
	if len(all) == 0 {
		return nil, warnings, noMigDevices(node, gpus, req)
	}
	for _, d := range all {
		if req.Profile == "" || d.Mig.Profile == req.Profile {
			devs = append(devs, d)
		}
	}
	switch {
	case len(devs) == 0:
		return nil, warnings, fmt.Errorf("no MIG device of profile %s among the %d MIG devices this job may use (%s)", req.Profile, len(all), profiles(all))
	case req.Count > len(devs):
		return nil, warnings, advice.Wrap(fmt.Errorf("this job may use only %d MIG devices%s", len(devs), ofProfile(req.Profile)), advice.Count, req.Count)
	}
	return devs, warnings, nil
}

// visible reads CUDA_VISIBLE_DEVICES into the GPUs and MIG devices it
// names.
func visible(node *model.Node, req Request) (map[*model.GPU]bool, map[*model.MigDevice]bool, []string, error) {
	gpus := map[*model.GPU]bool{}
	migs := map[*model.MigDevice]bool{}
	if !req.VisibleSet {
		for i := range node.GPUs {
			gpus[&node.GPUs[i]] = true
		}
		return gpus, migs, nil, nil
	}
	if strings.TrimSpace(req.Visible) == "" {
		return nil, nil, nil, fmt.Errorf("CUDA_VISIBLE_DEVICES is set but empty: this job may use no GPU")
	}
	var warnings []string
	entries := strings.Split(req.Visible, ",")
	for i, e := range entries {
		e = strings.TrimSpace(e)
		g, m, why := lookup(node, e)
		if why != "" {
			if i == 0 {
				return nil, nil, nil, fmt.Errorf("CUDA_VISIBLE_DEVICES=%q: %s, so this job may use no GPU (CUDA reads the list up to the first entry it cannot use)", req.Visible, why)
			}
			warnings = append(warnings, fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q: %s; like CUDA, slurm-mig ignores it and what follows", req.Visible, why))
			break
		}
		if g != nil {
			gpus[g] = true
		} else {
			migs[m] = true
		}
	}
	return gpus, migs, warnings, nil
}

// lookup finds what one entry of CUDA_VISIBLE_DEVICES names, or says why
// it names nothing.
func lookup(node *model.Node, e string) (*model.GPU, *model.MigDevice, string) {
	switch {
	case e == "":
		return nil, nil, "an empty entry"
	case strings.HasPrefix(e, "GPU-") || strings.HasPrefix(e, "MIG-"):
		var gpu *model.GPU
		var mig *model.MigDevice
		n := 0
		for i := range node.GPUs {
			g := &node.GPUs[i]
			if strings.HasPrefix(e, "GPU-") && strings.HasPrefix(g.UUID, e) {
				gpu, n = g, n+1
			}
			for j := range g.MigDevices {
				if m := &g.MigDevices[j]; strings.HasPrefix(e, "MIG-") && strings.HasPrefix(m.UUID, e) {
					mig, n = m, n+1
				}
			}
		}
		switch n {
		case 0:
			return nil, nil, fmt.Sprintf("%s is no GPU or MIG device of this node", e)
		case 1:
			return gpu, mig, ""
		}
		return nil, nil, fmt.Sprintf("%s is the start of %d UUIDs", e, n)
	}
	index, err := strconv.Atoi(e)
	if err != nil || index < 0 {
		return nil, nil, fmt.Sprintf("%q is neither a GPU index nor a GPU- or MIG- UUID", e)
	}
	for i := range node.GPUs {
		if node.GPUs[i].Index == index {
			return &node.GPUs[i], nil, ""
		}
	}
	return nil, nil, fmt.Sprintf("this node has no GPU %d", index)
}

// noMigDevices explains why the job may use no MIG device at all.
func noMigDevices(node *model.Node, gpus map[*model.GPU]bool, req Request) error {
	var mine, elsewhere []string
	for i := range node.GPUs {
		g := &node.GPUs[i]
		switch {
		case gpus[g] && g.MigEnabled:
			mine = append(mine, g.Label()+" is in MIG mode but has no MIG devices")
		case gpus[g]:
			mine = append(mine, g.Label()+" has MIG off (use it whole)")
		case len(g.MigDevices) > 0:
			elsewhere = append(elsewhere, strconv.Itoa(g.Index))
		}
	}
	msg := "no MIG device to claim: " + strings.Join(mine, "; ")
	if req.VisibleSet {
		msg = fmt.Sprintf("no MIG device to claim on the GPUs this job may use (CUDA_VISIBLE_DEVICES=%s): %s", req.Visible, strings.Join(mine, "; "))
	}
	switch {
	case len(elsewhere) == 1:
		msg += fmt.Sprintf("; GPU %s has MIG devices, but this job may not use it", elsewhere[0])
	case len(elsewhere) > 1:
		msg += fmt.Sprintf("; GPUs %s have MIG devices, but this job may not use them", strings.Join(elsewhere, ", "))
	}
	return fmt.Errorf("%s", msg)
}

func profiles(devs []Device) string {
	count := map[string]int{}
	var names []string
	for _, d := range devs {
		if count[d.Mig.Profile] == 0 {
			names = append(names, d.Mig.Profile)
		}
		count[d.Mig.Profile]++
	}
	for i, p := range names {
		names[i] = fmt.Sprintf("%d × %s", count[p], p)
	}
	return strings.Join(names, ", ")
}

func ofProfile(p string) string {
	if p == "" {
		return ""
	}
	return " of profile " + p
}

// NoneIdleError says that too few of the MIG devices a job may use are
// idle, and who keeps them busy. It is not trouble: trying later may
// succeed.
type NoneIdleError struct{ msg string }

func (e *NoneIdleError) Error() string { return e.msg }

// ExitCode of a refusal is 1: not trouble, trying later may succeed.
func (e *NoneIdleError) ExitCode() int { return 1 }

// take claims req.Count idle devices among devs: idle means no compute
// process on it (as discovery read them) and no live claim.
func take(dir *Dir, devs []Device, req Request) (*Claim, error) {
	var uuids []string
	var running []Device
	for _, d := range devs {
		if len(d.Mig.Processes) > 0 {
			running = append(running, d)
		} else {
			uuids = append(uuids, d.Mig.UUID)
		}
	}
	info := Info{Job: req.Job, SchedulerJob: schedulerJob(), Command: req.Command}
	c, held, err := dir.Take(uuids, req.Count, info, req.Timeout)
	if err != nil || c != nil {
		return c, err
	}
	return nil, &NoneIdleError{shortage(devs, len(uuids)-len(held), held, running, req)}
}

// shortage is the one line that says why nothing was claimed.
func shortage(devs []Device, idle int, held map[string]Holder, running []Device, req Request) string {
	var why []string
	if len(held) > 0 {
		why = append(why, fmt.Sprintf("%d claimed (%s)", len(held), claimants(held)))
	}
	if len(running) > 0 {
		why = append(why, fmt.Sprintf("%d in use by compute processes (%s)", len(running), processes(running)))
	}
	if idle == 0 && len(devs) == 1 {
		return fmt.Sprintf("no idle MIG device: the one MIG device%s this job may use is busy: %s", ofProfile(req.Profile), strings.Join(why, ", "))
	}
	if idle == 0 {
		return fmt.Sprintf("no idle MIG device: all %d MIG devices%s this job may use are busy: %s",
			len(devs), ofProfile(req.Profile), strings.Join(why, ", "))
	}
	return fmt.Sprintf("only %d of the %d MIG devices%s this job may use are idle, %d wanted; busy: %s",
		idle, len(devs), ofProfile(req.Profile), req.Count, strings.Join(why, ", "))
}

// claimants counts claims by user, with their jobs where the claim files
// name them.
func claimants(held map[string]Holder) string {
	type who struct {
		n    int
		jobs []string
	}
	byUID := map[int]*who{}
	for _, h := range held {
		w := byUID[h.UID]
		if w == nil {
			w = &who{}
			byUID[h.UID] = w
		}
		w.n++
		job := quoted(h.SchedulerJob)
		if job == "" && h.JobPID > 0 {
			job = "pid " + strconv.Itoa(h.JobPID)
		}
		if job != "" && !slices.Contains(w.jobs, job) {
			w.jobs = append(w.jobs, job)
		}
	}
	uids := make([]int, 0, len(byUID))
	for uid := range byUID {
		uids = append(uids, uid)
	}
	sort.Ints(uids)
	var parts []string
	for _, uid := range uids {
		w := byUID[uid]
		sort.Strings(w.jobs)
		part := fmt.Sprintf("%s: %d", userName(uid), w.n)
		if len(w.jobs) > 0 {
			if len(w.jobs) > 4 {
				w.jobs = append(w.jobs[:4], "...")
			}
			part += " by job " + strings.Join(w.jobs, ", ")
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// processes names the compute processes on busy devices, with their
// users where /proc tells.
func processes(devs []Device) string {
	var parts []string
	for _, d := range devs {
		for _, p := range d.Mig.Processes {
			if len(parts) > 6 {
				break // enough to show: the rest are "..."
			}
			part := fmt.Sprintf("pid %d", p.PID)
			if uid, err := processUID(int(p.PID)); err == nil { // else gone, or /proc is hidepid
				part += " of " + userName(uid)
			}
			parts = append(parts, part)
		}
	}
	if len(parts) > 6 {
		parts = append(parts[:6], "...")
	}
	return strings.Join(parts, ", ")
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return quoted(u.Username)
	}
	return "uid " + strconv.Itoa(uid)
}

// who names a user by name and uid, for messages about what they did.
func who(uid int) string {
	if name := userName(uid); name != "uid "+strconv.Itoa(uid) {
		return fmt.Sprintf("%s (uid %d)", name, uid)
	}
	return "uid " + strconv.Itoa(uid)
}

// quoted is a string another user chose (a claim's job id, a file name) as
// it may be printed to this user: as is if one plain word, else Go-quoted,
// so none of their escapes reaches the terminal or passes for our own text.
func quoted(s string) string {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("._-[]:@+/=", r)) {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
