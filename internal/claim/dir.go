// Package claim hands MIG devices to jobs on nodes whose scheduler knows
// only whole GPUs, so that concurrent jobs never get the same device.
//
// A claim is a file in a claims directory that its claimant created and
// holds an OFD write lock on (fcntl(2) F_OFD_SETLK). The lock is the
// claim: the kernel drops it when the last process holding the file open
// ends, however it ends (SIGKILL included), so there is no lease and
// nothing to clean up for a claim to end. A write lock needs a descriptor
// open for writing, which only the file's owner (and root) can have: no
// other user can hold, keep or fake a claim of theirs. What the file says
// (uid, job, time) is only informational; a stale or corrupt file, whose
// lock nobody holds, never counts.
//
// One file per claim, named <device>.<random>, rather than one file per
// device: in a directory all users write (mode 1777) only a file's owner
// may remove it, so a shared per-device file could be removed by the user
// who created it, while another user holds its lock, and then re-created
// and locked again: two jobs on one device. A claimant here only ever
// locks a file it has just created itself, which nobody else can remove.
//
// There is no lock on the directory, which any user could take and keep.
// A claimant makes and locks its files first, then looks for others'
// claims of the same devices, and gives its own up where it finds any,
// claims made or claimants still choosing: of two that choose a device at
// once, the one that looks last sees the other's file (see Dir.claim).
// Both may give up, and try again a random moment later; never both keep
// it. Holding a claim needs nothing but its file's descriptor.
package claim

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/safepath"
)

// DefaultDir is where claims live unless --claims says otherwise: under
// /run, so that a reboot forgets them.
const DefaultDir = "/run/slurm-mig/claims"

// Dir is an open claims directory.
type Dir struct {
	path string
	f    *os.File // the directory; every claim file is opened relative to it
	uid  int
	// Warn, if set, is told what slows claims down but stops none: a
	// user's flood of files named as claims.
	Warn func(error)
	// probed and swept count the claim files tested (probe) and tried
	// for removal (sweep): the work a flood could make a call do, which
	// tests bound.
	probed, swept int
}

// OpenDir opens, making it if missing, the claims directory at path. It
// refuses a directory another user controls, one anyone may write that is
// not sticky, and a path through such a directory or another user's symlink,
// since others could replace its files; all is done through descriptors.
func OpenDir(path string) (*Dir, error) {
	uid := os.Geteuid()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("claims directory %s: %w", path, err)
	}
	if abs == "/" {
		return nil, fmt.Errorf("claims directory %s: not a directory of its own; refusing it", path)
	}
	pdir, err := safepath.Dir(filepath.Dir(abs), safepath.Options{UID: uid, TrustDirs: true, Mkdir: uid == 0})
	if errors.Is(err, unix.ENOENT) {
		return nil, advice.Hinted(fmt.Errorf("claims directory %s does not exist and cannot be created (%v)", path, unix.ENOENT), createDir)
	}
	if err != nil {
		return nil, fmt.Errorf("claims directory %s: %w", path, err)
	}
	fd, err := openClaimsDir(int(pdir.Fd()), filepath.Base(abs), uid)
	pdir.Close()
	var cannot *cannotCreateError
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("claims directory %s: not a directory (a symlink?); refusing it", path)
	case errors.As(err, &cannot):
		return nil, advice.Hinted(fmt.Errorf("claims directory %s does not exist and cannot be created (%v)", path, cannot.err), createDir)
	case err != nil:
		return nil, fmt.Errorf("claims directory %s: %w", path, err)
	}
	d := &Dir{path: path, f: os.NewFile(uintptr(fd), path), uid: uid}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		d.Close()
		return nil, fmt.Errorf("claims directory %s: %w", path, err)
	}
	mode := st.Mode & 0o7777
	switch {
	case st.Uid != 0 && int(st.Uid) != d.uid:
		d.Close()
		return nil, advice.Hinted(fmt.Errorf("claims directory %s belongs to uid %d, not root: that user could remove every claim in it", path, st.Uid), "; make it root's, mode 1777")
	case mode&0o022 != 0 && mode&unix.S_ISVTX == 0:
		d.Close()
		return nil, advice.Hinted(fmt.Errorf("claims directory %s is writable by others but not sticky (mode %04o): anyone could remove others' claims", path, mode), "; chmod 1777 it")
	}
	return d, nil
}

// createDir is the hint of a claims directory that is missing and cannot be made.
const createDir = ": create it as root, mode 1777 (scripts/tmpfiles.d/slurm-mig.conf does that at boot)"

// cannotCreateError is why a missing claims directory could not be made.
type cannotCreateError struct{ err error }

func (e *cannotCreateError) Error() string { return "cannot create: " + e.err.Error() }
func (e *cannotCreateError) Unwrap() error { return e.err }

// openClaimsDir opens the claims directory name in parent, making it
// where it is missing: mode 0700 at first, then 1777 (whatever the umask)
// by its descriptor, once it is known to be the directory just made and
// not a symlink put in its place.
func openClaimsDir(parent int, name string, uid int) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, 0)
	if !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	made := unix.Mkdirat(parent, name, 0o700)
	if made != nil && !errors.Is(made, unix.EEXIST) { // EEXIST: made by another claimant just now
		return -1, &cannotCreateError{made}
	}
	if fd, err = unix.Openat(parent, name, flags, 0); err != nil || made != nil {
		return fd, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	// Only root and this user may change the parent (safepath's walk
	// made sure), so
	// the directory of this user here is the one just made.
	if int(st.Uid) == uid {
		if err := unix.Fchmod(fd, 0o777|unix.S_ISVTX); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// fileKey is the part of a claim file's name that names the device: the
// UUID, with anything but letters, digits and '-' (the '/' of old-style
// MIG-GPU-<uuid>/<gi>/<ci> UUIDs) made '_'.
func fileKey(uuid string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
			return r
		}
		return '_'
	}, uuid)
}

// A claim file is named <key>.<suffix>, the suffix random hex digits: 32
// of them for the files this version makes, whose claims are OFD locks;
// 16 for those of versions before it, whose claims were flocks (legacy).
const (
	suffixLen       = 32
	legacySuffixLen = 16
)

// claimName splits a name of the claims directory into the device's key
// and whether it is of the legacy form; ok is false for any other name.
func claimName(name string) (key string, legacy, ok bool) {
	key, suffix, found := strings.Cut(name, ".")
	if !found || (len(suffix) != suffixLen && len(suffix) != legacySuffixLen) {
		return "", false, false
	}
	for _, r := range suffix {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return "", false, false
		}
	}
	return key, len(suffix) == legacySuffixLen, true
}

// A claim file's OFD write lock from byte claimFrom to the end is its claim,
// held from creation until the claim ends; byte stageByte is write-locked
// while its claimant is choosing and read-locked once the claim is made.
// Read locks alone never count: anyone who may read the file can take them.
const (
	stageByte = 0
	claimFrom = 1
)

// ofdLock sets an OFD lock of type typ (F_WRLCK, F_RDLCK) on length
// bytes of fd from start (0: to the end), without waiting.
func ofdLock(fd int, start, length int64, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: start, Len: length}
	return fileio.RetryEINTR(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk) })
}

// writeLocked reports whether another open file than fd's holds a write
// lock on length bytes of it from start (0: to the end).
func writeLocked(fd int, start, length int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: start, Len: length}
	err := fileio.RetryEINTR(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) })
	return lk.Type == unix.F_WRLCK, err
}

// stage is what probe finds of a claim file.
type stage int

const (
	unclaimed stage = iota // no claim: nobody holds it, or it is no claim file of the device
	choosing               // its claimant is still choosing: it may give the device up in a moment
	claimed                // a claim
)

// Holder is what is known about a live claim: its file's owner (the
// kernel's word) and what the claimant wrote in it (its word).
type Holder struct {
	UID          int
	JobPID       int    // 0 when the file does not say
	SchedulerJob string // the scheduler's job id, when the claimant had one
	jobStart     uint64
}

func (h *Holder) job() Job { return Job{PID: h.JobPID, Start: h.jobStart} }

// jobGone reports whether the claim's job has ended, so that its holder
// is about to let go (it notices within a moment).
func (h *Holder) jobGone() bool {
	if h.JobPID <= 0 || h.jobStart == 0 {
		return false
	}
	alive, err := h.job().alive()
	return err == nil && !alive
}

// probe tests the claim file name of the device uuid: whether a claim holds
// it, and whose. It fails closed: what keeps it from telling is an error, and
// a file it may not read despite its mode counts as claimed. A non-regular
// file, or one that does not name the device, is no claim.
func (d *Dir) probe(uuid, name string) (stage, Holder, error) {
	d.probed++
	var h Holder
	fd, none, err := d.openClaim(name, &h)
	switch {
	case err != nil || none:
		return unclaimed, h, err
	case fd < 0:
		return claimed, h, nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return unclaimed, h, d.probeError(name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return unclaimed, h, nil
	}
	h.UID = int(st.Uid)
	_, legacy, _ := claimName(name)
	s, byFlock := unclaimed, false
	held, err := writeLocked(fd, claimFrom, 0)
	switch {
	case err != nil:
	case held:
		s = claimed
		if held, err = writeLocked(fd, stageByte, 1); held {
			s = choosing
		}
	case legacy:
		s, err = legacyStage(fd)
		byFlock = s != unclaimed
	}
	if err != nil {
		return unclaimed, h, d.probeError(name, err)
	}
	if s == unclaimed {
		return unclaimed, h, nil
	}
	device, err := h.readInfo(fd)
	if err != nil {
		return unclaimed, h, d.probeError(name, err)
	}
	if device != uuid {
		return unclaimed, h, nil
	}
	if byFlock {
		// Anyone who may read a file may flock it: a legacy claim counts
		// only while the job it names runs, as its holder's did.
		if h.JobPID <= 0 || h.jobStart == 0 {
			return unclaimed, h, nil
		}
		alive, err := h.job().alive()
		if err != nil {
			return unclaimed, h, d.probeError(name, err)
		}
		if !alive {
			return unclaimed, h, nil
		}
	}
	return s, h, nil
}

// openClaim opens the claim file name for probe. Where it returns no
// descriptor (-1) and no error, the file is no claim to test (it has
// gone, it is a symlink or a socket, or it is not yet one that others may
// see), or it counts as claimed by its owner (h.UID) without being read
// (unclaimed says which).
func (d *Dir) openClaim(name string, h *Holder) (int, bool, error) {
	for try := 0; ; try++ {
		fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		switch {
		case err == nil:
			return fd, false, nil
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENXIO):
			return -1, true, nil
		case !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EWOULDBLOCK):
			return -1, false, d.probeError(name, err)
		}
		var st unix.Stat_t
		switch err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case errors.Is(err, unix.ENOENT):
			return -1, true, nil
		case err != nil:
			return -1, false, d.probeError(name, err)
		}
		h.UID = int(st.Uid)
		// A file others may not read yet is still 0600, not yet a claim
		// (see create); one whose mode changed since the open is tried once
		// more. One unreadable despite its mode (an ACL, a lease) counts as
		// its owner's claim: failing would let any user make every call fail.
		switch {
		case st.Mode&0o004 == 0 && errors.Is(err, unix.EACCES):
			return -1, true, nil
		case try > 0 || errors.Is(err, unix.EWOULDBLOCK):
			return -1, false, nil
		}
	}
}

// legacyStage tests a claim file of a version before this one: its
// claim was an flock.
func legacyStage(fd int) (stage, error) {
	switch err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err {
	case nil:
		unix.Flock(fd, unix.LOCK_UN)
		return unclaimed, nil
	case unix.EWOULDBLOCK:
		return claimed, nil
	default:
		return unclaimed, err
	}
}

func (d *Dir) probeError(name string, err error) error {
	return fmt.Errorf("claims directory %s: testing the claim file %s: %w (so whether its device is free is not known)", d.path, quoted(name), err)
}

// readInfo reads what the claimant wrote, and returns the device it
// names; anything odd is ignored.
func (h *Holder) readInfo(fd int) (device string, err error) {
	buf := make([]byte, 1024)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "device":
			device = v
		case "job_pid":
			h.JobPID, _ = strconv.Atoi(v)
		case "job_start":
			h.jobStart, _ = strconv.ParseUint(v, 10, 64)
		case "scheduler_job":
			if len(v) <= 64 {
				h.SchedulerJob = v
			}
		}
	}
	return device, nil
}

// errLost: another process took the new claim file before its creator
// could lock it: a sweep of the same user or root (see sweep).
var errLost = errors.New("claim file taken by a sweep")

// create makes a claim file for the device uuid, named with a fresh random
// suffix and mode 0600 so nobody else can open it first; it locks the file
// whole (claiming, and choosing by byte 0), writes info, and only then makes
// it 0644. Dir.claim looks for others' claims after that.
func (d *Dir) create(uuid string, info []byte) (*os.File, error) {
	for tries := 0; ; tries++ {
		var suffix [suffixLen / 2]byte
		if _, err := rand.Read(suffix[:]); err != nil {
			return nil, err
		}
		name := fileKey(uuid) + "." + hex.EncodeToString(suffix[:])
		fd, err := unix.Openat(d.fd(), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) && tries < 3 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("claims directory %s: creating a claim: %w", d.path, err)
		}
		f := os.NewFile(uintptr(fd), filepath.Join(d.path, name))
		err = ofdLock(fd, 0, 0, unix.F_WRLCK)
		if err == unix.EAGAIN {
			err = errLost
		}
		if err == nil {
			// Versions before this one test flocks: they see this claim
			// too, should one still run while the binary is replaced.
			err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		}
		var st unix.Stat_t
		if err == nil {
			err = unix.Fstat(fd, &st)
		}
		if err == nil && st.Nlink == 0 {
			err = errLost // removed by a sweep before it was locked
		}
		if err == nil {
			_, err = f.Write(info)
		}
		if err == nil {
			err = unix.Fchmod(fd, 0o644)
		}
		if err == nil {
			return f, nil
		}
		unix.Unlinkat(d.fd(), name, 0)
		f.Close()
		if err == errLost && tries < 3 {
			continue
		}
		return nil, fmt.Errorf("claims directory %s: creating a claim: %w", d.path, err)
	}
}

// settle makes a claim of the file of a claimant that has chosen.
func settle(f *os.File) error {
	if err := ofdLock(int(f.Fd()), stageByte, 1, unix.F_RDLCK); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return nil
}

// giveUp removes the claim files of a claimant that has not chosen (it
// still holds their locks, so they are its own), and closes them.
func (d *Dir) giveUp(c *Claim) {
	for _, f := range c.Files {
		unix.Unlinkat(d.fd(), filepath.Base(f.Name()), 0)
		f.Close()
	}
}

// sweepAge is how old a claim file must be for sweep: one made just now
// may be a claimant's that has not locked it yet, which would then have to
// make another (see create), again and again in a burst of claims.
const sweepAge = time.Second

// sweep removes the claim file name if no claim holds it, and this user
// may: it is theirs, or they are root. It first takes the file's whole
// OFD write lock (and for a legacy file its flock): while it has them,
// no claim can hold the file, and a claimant that made it just now and
// has not locked it yet finds it taken, and makes another (see create).
// Removing a file without that could remove a claim made meanwhile.
func (d *Dir) sweep(name string) {
	d.swept++
	fd, err := unix.Openat(d.fd(), name, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st, now unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return // not a claim file: those have one name
	}
	if time.Since(time.Unix(st.Mtim.Unix())) < sweepAge {
		return
	}
	if ofdLock(fd, 0, 0, unix.F_WRLCK) != nil {
		return
	}
	if _, legacy, _ := claimName(name); legacy && unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	if unix.Fstatat(d.fd(), name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && now.Dev == st.Dev && now.Ino == st.Ino {
		unix.Unlinkat(d.fd(), name, 0)
	}
}

// found is what look finds of a device's claim files.
type found struct {
	files  int    // claim files of the device, claims or not
	stage  stage  // the furthest stage among them
	holder Holder // of a file at that stage
	first  string // of the files of claimants still choosing, the first name (see Dir.claim)
}

// floodWarn is how many files named as claims of one device, that no
// claim holds, one user may have before test names them. A user's own
// calls remove theirs as they pass, so more are a flood: each file is
// tested, so a flood slows every call down, but stops none.
const floodWarn = 64

// list reads the directory for the claim files of uuids, except those
// named in mine, and returns their names by UUID. It reads a chunk at a
// time, and keeps only names of claims of uuids: other files, however
// many, cost only their reading.
func (d *Dir) list(uuids []string, mine map[string]bool) (map[string][]string, error) {
	byKey := make(map[string]string, len(uuids))
	for _, uuid := range uuids {
		byKey[fileKey(uuid)] = uuid
	}
	names := map[string][]string{}
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("claims directory %s: %w", d.path, err)
	}
	for {
		chunk, err := d.f.Readdirnames(1024)
		for _, name := range chunk {
			if key, _, ok := claimName(name); ok && byKey[key] != "" && !mine[name] {
				names[byKey[key]] = append(names[byKey[key]], name)
			}
		}
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, fmt.Errorf("claims directory %s: %w", d.path, err)
		}
	}
}

// floodCap bounds the files of one device and one user, held by no claim,
// that a call tests; past it the device counts as that user's unless a
// tested file held a claim, since an untested file might be one. sweepMost
// bounds the files a call removes (see sweep).
const (
	floodCap  = 4096
	sweepMost = 256
)

// test tests the claim files names of the device uuid: whether a claim
// holds it (or a claimant is choosing it), and whose. Files that no claim
// holds are removed where this user may (see sweep), sweepMost at most;
// a user with more than floodCap of them makes the device count as held
// by them (see floodCap); with warn, a user with more than floodWarn of
// them is named to Warn.
func (d *Dir) test(uuid string, names []string, warn bool) (found, error) {
	f := found{files: len(names)}
	idle := map[int]int{} // files no claim holds, by owner
	swept := 0
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone, or no file to test
		}
		owner := int(st.Uid)
		if idle[owner] >= floodCap {
			// The device counts as this user's (see floodCap): whatever
			// the files left say, it is not free.
			idle[owner]++
			break
		}
		s, h, err := d.probe(uuid, name)
		if err != nil {
			return found{}, err
		}
		if s == unclaimed {
			idle[owner]++
			if (d.uid == 0 || owner == d.uid) && swept < sweepMost {
				swept++
				d.sweep(name)
			}
			continue
		}
		if s > f.stage {
			f.stage, f.holder = s, h
		}
		if s == choosing && (f.first == "" || name < f.first) {
			f.first = name
		}
		if s == claimed {
			break
		}
	}
	for uid, n := range idle {
		if n > floodCap && f.stage != claimed {
			f.stage, f.holder = claimed, Holder{UID: uid}
		}
		switch {
		case !warn || d.Warn == nil:
		case n > floodCap:
			d.Warn(fmt.Errorf("claims directory %s: %s has more than %d files named as claims of %s, too many to test; the device counts as theirs until they are removed", d.path, who(uid), floodCap, uuid))
		case n > floodWarn:
			d.Warn(advice.Hinted(fmt.Errorf("claims directory %s: %s has %d files named as claims of %s that no claim holds; they slow every claim down", d.path, who(uid), n, uuid), ": remove them"))
		}
	}
	return f, nil
}

func (d *Dir) fd() int { return int(d.f.Fd()) }
