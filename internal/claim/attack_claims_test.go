package claim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// Item 3: another user's locks on a claim file, taken once its claim has
// ended, do not keep the device claimed.
func TestAttackLockEndedClaim(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, _, err := d.Take([]string{"MIG-a"}, 1, Info{Job: Job{PID: os.Getpid()}, Command: "test"}, time.Second)
	if err != nil || c == nil {
		t.Fatal(err)
	}
	a.start(t, nobody, "lock-claims", dir)
	if !held(t, d, "MIG-a") {
		t.Fatal("MIG-a not held while its claim is")
	}
	c.Close() // the job ends
	time.Sleep(100 * time.Millisecond)
	c, h, err := d.Take([]string{"MIG-a"}, 1, Info{Command: "test"}, time.Second)
	if err != nil || c == nil {
		t.Fatalf("after the claim ended, with another user's locks on its file: claim %v, held %+v, %v; want the device back", c, h, err)
	}
	c.Close()
}

// Item 3: another user locking every file of the claims directory as
// soon as it appears makes no claim fail.
func TestAttackLockNewClaims(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a.start(t, nobody, "lock-claims", dir)
	uuids := []string{"MIG-a", "MIG-b", "MIG-c", "MIG-d"}
	failed := 0
	for range 200 {
		c, _, err := d.Take(uuids, 1, Info{Job: Job{PID: os.Getpid()}, Command: "test"}, time.Second)
		if err != nil || c == nil {
			failed++
			continue
		}
		// Kept for the attacker to lock, as the files of ended claims are.
		c.Close()
	}
	if failed > 0 {
		t.Errorf("%d of 200 claims failed while another user locked new claim files", failed)
	}
}

// Item 3: a user's own write-locked file is their own claim, said to be
// theirs; a file of theirs nobody holds is nothing.
func TestAttackOwnFile(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a.start(t, nobody, "claim", dir, "MIG-a", "4242")
	c, h, err := d.Take([]string{"MIG-a"}, 1, Info{Command: "test"}, time.Second)
	if err != nil || c != nil || h["MIG-a"].UID != nobody || h["MIG-a"].SchedulerJob != "4242" {
		t.Errorf("MIG-a claimed by uid %d: %v, held %+v, %v", nobody, c, h, err)
	}
	// The claim files are not the attacker's to write.
	names, _ := readNames(dir)
	for _, name := range names {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("claim file %s: %v %v, want 0644", name, st.Mode(), err)
		}
	}
}

// Item 4: another user's flock on the claims directory itself stalls no
// claim.
func TestAttackDirLock(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a.start(t, nobody, "lock-dir", dir)
	start := time.Now()
	c, _, err := d.Take([]string{"MIG-a"}, 1, Info{Job: Job{PID: os.Getpid()}, Command: "test"}, 2*time.Second)
	if err != nil || c == nil || time.Since(start) > time.Second {
		t.Fatalf("with another user's flock on the claims directory: %v, %v after %s; want a claim at once", c, err, time.Since(start))
	}
	c.Close()
}

// Item 4: another user's claimant that never finishes choosing a device
// delays a call that wants it by no more than the call's wait, and the
// refusal names them.
func TestAttackStuckChoosing(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a.start(t, nobody, "choose", dir, "MIG-a")
	start := time.Now()
	c, h, err := d.Take([]string{"MIG-a"}, 1, Info{Job: Job{PID: os.Getpid()}, Command: "test"}, 300*time.Millisecond)
	took := time.Since(start)
	if err != nil || c != nil || h["MIG-a"].UID != nobody || h["MIG-a"].SchedulerJob != "stuck" || took < 300*time.Millisecond || took > time.Second {
		t.Errorf("MIG-a chosen for ever by uid %d: %v, held %+v, %v after %s; want a refusal naming them after 300ms", nobody, c, h, err, took)
	}
	// A device nobody is choosing is claimed at once beside it.
	start = time.Now()
	c, _, err = d.Take([]string{"MIG-a", "MIG-b"}, 1, Info{Job: Job{PID: os.Getpid()}, Command: "test"}, 300*time.Millisecond)
	if err != nil || c == nil || c.UUIDs[0] != "MIG-b" || time.Since(start) > 100*time.Millisecond {
		t.Errorf("MIG-b beside it: %+v, %v after %s", c, err, time.Since(start))
	}
}

// Item 4: 65,537 files of another user, some named as claims of a device,
// make no claim fail, and the device they name comes back as well.
func TestAttackFlood(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a.run(t, nobody, "flood", dir, "MIG-a", "65537")
	var warnings []string
	var hints []string
	d.Warn = func(w error) {
		warnings = append(warnings, w.Error())
		if h := advice.Hinter(nil); errors.As(w, &h) {
			hints = append(hints, h.Hint())
		}
	}
	start := time.Now()
	c, h, err := d.Take([]string{"MIG-a", "MIG-b"}, 2, Info{Job: Job{PID: os.Getpid()}, Command: "test"}, time.Second)
	if err != nil || c == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("with 65,537 files of another user in the claims directory: %v, held %+v, %v after %s; want both devices", c, h, err, time.Since(start))
	}
	t.Logf("claimed past 65,537 files in %s", time.Since(start))
	c.Close()
	if len(warnings) == 0 || !strings.HasSuffix(warnings[0], "nobody (uid 65534) has 2049 files named as claims of MIG-a that no claim holds; they slow every claim down") ||
		len(hints) == 0 || hints[0] != ": remove them" {
		t.Errorf("warnings %q, hints %q; want one naming uid %d, its hint to remove them", warnings, hints, nobody)
	}
}

// Item 9: a held claim that cannot be read for a reason other than its
// mode (here an ACL) is not taken for a free device: it counts as its
// owner's claim.
func TestAttackUnreadableClaim(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, _, err := d.Take([]string{"MIG-a"}, 1, Info{Job: Job{PID: os.Getpid()}, Command: "test"}, time.Second)
	if err != nil || c == nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := denyACL(c.Files[0].Name(), nobody); err != nil {
		t.Skipf("no ACLs here: %v", err)
	}
	if got := a.run(t, nobody, "take", dir, "MIG-a"); got != "refused: held by uid 0" {
		t.Errorf("another user, who may not read the claim file of a held device: %q, want it held", got)
	}
}

// Item 9, the other way round: files of another user named as claims
// that a caller may not read (an ACL), or not open without waiting (a
// lease), count as that user's claims; they make no call fail or wait.
func TestAttackUnreadableFiles(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	const victim = 4242
	a.start(t, nobody, "unreadable", dir, "MIG-a", "MIG-b", strconv.Itoa(victim))
	for _, uuid := range []string{"MIG-a", "MIG-b"} {
		start := time.Now()
		if got := a.run(t, victim, "take", dir, uuid); got != "refused: held by uid 65534" || time.Since(start) > 2*time.Second {
			t.Errorf("%s with another user's file it may not read or open without waiting: %q after %s, want it held by them", uuid, got, time.Since(start))
		}
	}
}

// denyACL gives path an access ACL that leaves uid no permission, and
// everyone else what its mode gives.
func denyACL(path string, uid int) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	perm := uint16(st.Mode().Perm())
	var b bytes.Buffer
	entry := func(tag, perm uint16, id uint32) {
		binary.Write(&b, binary.LittleEndian, tag)
		binary.Write(&b, binary.LittleEndian, perm)
		binary.Write(&b, binary.LittleEndian, id)
	}
	binary.Write(&b, binary.LittleEndian, uint32(2)) // POSIX_ACL_XATTR_VERSION
	entry(0x01, perm>>6&7, 0xffffffff)               // ACL_USER_OBJ
	entry(0x02, 0, uint32(uid))                      // ACL_USER
	entry(0x04, perm>>3&7, 0xffffffff)               // ACL_GROUP_OBJ
	entry(0x10, 7, 0xffffffff)                       // ACL_MASK
	entry(0x20, perm&7, 0xffffffff)                  // ACL_OTHER
	return unix.Setxattr(path, "system.posix_acl_access", b.Bytes(), 0)
}

// Item 9: with no descriptor to spare for testing a held claim, a call
// fails; it never hands the device out.
func TestAttackNoDescriptors(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, _, err := d.Take([]string{"MIG-a"}, 1, Info{Job: Job{PID: os.Getpid()}, Command: "test"}, time.Second)
	if err != nil || c == nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, uid := range []int{0, nobody} {
		if got := a.run(t, uid, "take-emfile", dir, "MIG-a"); !strings.HasPrefix(got, "error: ") || !strings.Contains(got, "too many open files") {
			t.Errorf("uid %d out of descriptors: %q, want an error saying so", uid, got)
		}
	}
}

// A holder without a pidfd polls /proc for its job's end. Where /proc
// cannot tell (no descriptor left), the job counts as running: a holder
// that took it for ended would give its devices away while the job may
// still use them.
func TestJobAliveWithoutDescriptors(t *testing.T) {
	a := newAttackers(t)
	if got := a.run(t, 0, "alive-emfile"); got != "alive" {
		t.Errorf("a running job, with no descriptor to spare: %q, want alive", got)
	}
}

// The guarantee the attacks must not break: under many claimants of two
// users at once, killed with SIGKILL at random and started again, no
// device is ever in use by two of them. Each claimant marks a device in
// use with an flock of its own (a "usage" file, opened before its claim
// files, so that the kernel drops it first when the claimant is killed).
func TestClaimStress(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	usage := a.dir(t, "usage", 0o755, 0)
	const devices = 4
	for i := range devices {
		if err := os.WriteFile(filepath.Join(usage, strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	until := time.Now().Add(3 * time.Second)
	type worker struct {
		cmd *exec.Cmd
		out *bytes.Buffer
	}
	var outs []*bytes.Buffer
	spawn := func(i int) worker {
		uid := 0
		if i%2 == 1 {
			uid = nobody
		}
		cmd := a.command(uid, "stress", dir, usage, strconv.Itoa(devices), strconv.FormatInt(until.UnixNano(), 10))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, &out)
		return worker{cmd, &out}
	}
	workers := make([]worker, 6)
	for i := range workers {
		workers[i] = spawn(i)
	}
	kills := 0
	for time.Now().Before(until) {
		time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond)
		i := rand.IntN(len(workers))
		workers[i].cmd.Process.Kill()
		workers[i].cmd.Wait()
		kills++
		workers[i] = spawn(i)
	}
	for _, w := range workers {
		w.cmd.Wait()
	}
	claims := 0
	for _, out := range outs {
		for _, line := range strings.Split(out.String(), "\n") {
			switch {
			case strings.HasPrefix(line, "claims "):
				n, _ := strconv.Atoi(strings.TrimPrefix(line, "claims "))
				claims += n
			case line != "":
				t.Errorf("claimant: %s", line)
			}
		}
	}
	t.Logf("%d kills; %d claims by the claimants that ran to the end", kills, claims)
	if claims == 0 {
		t.Error("no claim made")
	}
}

// A claim made by a version before this one (a file named with 16 hex
// digits, flocked by its holder) holds its device while its job runs, as
// it did, and not after, whoever keeps its flock; a claim made now is
// flocked too, so that such a version, still running while the binary is
// replaced, sees it.
func TestLegacyClaims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claims")
	d, err := OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sleep := exec.Command("sleep", "600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	start, err := startTime(sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	job := Job{PID: sleep.Process.Pid, Start: start}
	legacy, err := os.OpenFile(filepath.Join(path, "MIG-a.0123456789abcdef"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	if err := unix.Flock(int(legacy.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	legacy.Write(Info{Job: job, SchedulerJob: "77", Command: "free"}.bytes("MIG-a"))

	c, h, err := d.Take([]string{"MIG-a"}, 1, Info{Command: "test"}, time.Second)
	if err != nil || c != nil || h["MIG-a"].SchedulerJob != "77" {
		t.Fatalf("a legacy claim whose job runs: %+v, held %+v, %v; want it held", c, h, err)
	}
	sleep.Process.Kill()
	sleep.Wait()
	c, h, err = d.Take([]string{"MIG-a"}, 1, Info{Command: "test"}, time.Second)
	if err != nil || c == nil {
		t.Fatalf("a legacy claim whose job has ended, its file still flocked: %+v, held %+v, %v; want the device", c, h, err)
	}
	defer c.Close()
	other, err := os.Open(c.Files[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != unix.EWOULDBLOCK {
		t.Errorf("flock of a claim made now: %v, want EWOULDBLOCK (held, for earlier versions)", err)
	}
}

// TestAttackFloodBounded (issue 34): more files of another user named
// as claims of the one device a call wants, no lock on any, than a call
// tests. The call tests floodCap of them, counts the device as that
// user's (it cannot tell whether an untested file holds a claim), and
// names them; root's call removes a bounded part of them a look, and
// the device is free once they are gone.
func TestAttackFloodBounded(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const n = floodCap + 1000
	a.run(t, nobody, "floodclaims", dir, fileKey("MIG-a"), strconv.Itoa(n))
	var warnings []string
	d.Warn = func(w error) { warnings = append(warnings, w.Error()) }
	info := Info{Job: Job{PID: os.Getpid()}, Command: "test"}
	start := time.Now()
	c, h, err := d.Take([]string{"MIG-a"}, 1, info, time.Second)
	if err != nil || c != nil || h["MIG-a"].UID != nobody {
		t.Fatalf("with %d files of uid %d named as claims: %v, %v, held %+v; want it counted as theirs", n, nobody, c, err, h)
	}
	t.Logf("refused past %d files in %s: %d tested, %d tried for removal", n, time.Since(start), d.probed, d.swept)
	if d.probed > 4*floodCap || d.swept > 4*sweepMost {
		t.Errorf("%d files tested and %d tried for removal by one call; want at most %d and %d", d.probed, d.swept, 4*floodCap, 4*sweepMost)
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], "too many to test; the device counts as theirs") {
		t.Errorf("warnings %q", warnings)
	}

	// Root's calls remove them, sweepMost a look, once they are a second
	// old; then the device is free.
	names, err := readNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	for _, name := range names {
		os.Chtimes(filepath.Join(dir, name), old, old)
	}
	for calls := 0; ; calls++ {
		d.probed, d.swept = 0, 0
		c, _, err := d.Take([]string{"MIG-a"}, 1, info, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if d.swept > 4*sweepMost {
			t.Fatalf("one call removed %d files; want at most %d", d.swept, 4*sweepMost)
		}
		if c != nil {
			c.Close()
			t.Logf("free after %d calls of root's", calls+1)
			break
		}
		if calls > n/sweepMost+2 {
			t.Fatalf("still not free after %d calls", calls)
		}
	}
}
