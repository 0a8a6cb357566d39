// Package claim hands MIG devices to jobs on nodes whose scheduler knows
// only whole GPUs, so that concurrent jobs never get the same device.
//
// A claim is a file <device>.<random> in a sticky claims directory that its
// claimant made and holds an OFD write lock on: the kernel drops the lock
// when the last process with the file open ends, and no other user can hold,
// remove or fake it. A claimant locks its files, then gives them up if it
// finds other claims of its devices: two may both give up, never both keep
// (why a file per claim and no directory lock: docs/claims.md).
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
// refuses one another user owns, one group or others may write that is not
// sticky, a symlink, and a path through another user's symlink or directory.
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

// openClaimsDir opens the claims directory name in parent, making it if
// missing: mode 0700, then 1777 (whatever the umask) by its descriptor, so
// that a symlink put in its place meanwhile is never the one changed.
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
	// Only root and this user may change the parent (safepath's walk made
	// sure), so the directory of this user here is the one just made.
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

// A claim is the OFD write lock on a claim file from claimFrom to its end;
// stageByte is write-locked while choosing, read-locked once made. Read
// locks never count alone, since anyone who may read the file can take them.
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

// probe reports whether a claim holds the file name of uuid, and whose;
// a file not regular or not naming uuid holds none. It fails closed: an
// error where it cannot tell, claimed where unreadable despite its mode.
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

// openClaim opens the claim file name for probe. With -1 and no error, true
// means no claim to test (gone, a symlink or socket, not yet readable by
// others); false, that it counts as its owner's (h.UID) claim, unread.
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
		// A file others may not read is not yet a claim (see create); one
		// whose mode changed since the open is tried again. One unreadable
		// despite its mode is its owner's, lest anyone make every call fail.
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

// create makes a claim file for uuid with a fresh random name, mode 0600 so
// nobody else opens it first; it locks it whole (claiming and choosing),
// writes info, and only then makes it 0644.
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

// sweep removes the claim file name if no claim holds it and it is this
// user's, or they are root. It locks the file whole first (and flocks a
// legacy one): removing it unlocked could remove a claim made meanwhile.
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

// floodWarn is how many unheld files named as claims of a device a user may
// have before test names them: their own calls sweep theirs, so more are a
// flood, which slows every call down but stops none.
const floodWarn = 64

// list returns the names of the claim files of uuids by UUID, less those in
// mine. It reads a chunk at a time and keeps only those names, so other
// files, however many, cost only their reading.
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

// floodCap bounds one user's unheld files of one device that a call tests;
// past it the device counts as theirs (unless claimed), since an untested
// file might be a claim. sweepMost bounds the files a call removes.
const (
	floodCap  = 4096
	sweepMost = 256
)

// test reports whether a claim holds the device uuid (or a claimant is
// choosing it), and whose, from its claim files names. It sweeps unheld
// files, sweepMost at most; with warn, Warn hears of users over floodWarn.
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
