package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/atomicfile"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/safepath"
)

// JournalVersion is the version of a journal entry's file format.
const JournalVersion = 1

// maxEntry bounds the read of one entry: an entry is a few hundred bytes.
const maxEntry = 64 << 10

// nodeName is what a node's name may be to name a journal file: Slurm's
// node names are host names, and nothing here may climb out of the dir.
var nodeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Journal is the directory that holds one file per node being changed,
// NODE.json, and the output of the node's last change command, NODE.out.
// A run holds the directory's lock for its whole length.
type Journal struct {
	Dir string
	dir *os.File // open and locked while a run holds it
}

// OpenJournal opens dir by safepath's walk, making it (mode 0700) if
// missing, and takes its lock without waiting (a second run is an error,
// for the timer to try again). Root acts on its files: nobody else may write it.
func OpenJournal(dir string) (*Journal, error) {
	_, err := os.Lstat(dir)
	made := errors.Is(err, fs.ErrNotExist)
	f, err := safepath.Dir(dir, safepath.Options{UID: -1, TrustDirs: true, Mkdir: true, Private: true})
	var open *safepath.OpenToOthersError
	if errors.As(err, &open) {
		err = advice.Hinted(err, "; chmod 0700 it")
	}
	if err == nil && made {
		if err = unix.Fchmod(int(f.Fd()), 0o700); err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("journal %s: another run (or the change command it started) holds its lock", dir)
		}
		return nil, fmt.Errorf("journal %s: lock: %w", dir, err)
	}
	return &Journal{Dir: dir, dir: f}, nil
}

// Lock is the locked directory, which a change command inherits so that
// the journal stays locked while it runs, even past a killed run.
func (j *Journal) Lock() *os.File { return j.dir }

// Close releases the lock.
func (j *Journal) Close() error { return j.dir.Close() }

func (j *Journal) path(node, ext string) string { return filepath.Join(j.Dir, node+ext) }

// Entries reads every entry, sorted by node.
func (j *Journal) Entries() ([]Entry, error) {
	names, err := filepath.Glob(filepath.Join(j.Dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, name := range names {
		data, err := fileio.ReadFile(name, maxEntry, "a journal entry")
		if err != nil {
			return nil, err
		}
		e, err := parseEntry(name, data)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Node < out[b].Node })
	return out, nil
}

// parseEntry reads one entry file, named file.
func parseEntry(file string, data []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("%s: %v", file, err)
	}
	if e.Version != JournalVersion {
		return e, fmt.Errorf("%s: journal version %d, want %d", file, e.Version, JournalVersion)
	}
	if want := strings.TrimSuffix(filepath.Base(file), ".json"); e.Node != want || !nodeName.MatchString(e.Node) {
		return e, fmt.Errorf("%s: names node %q", file, e.Node)
	}
	switch e.Step {
	case StepDrain, StepWait, StepApply, StepRollback, StepResume, StepFailed:
	default:
		return e, fmt.Errorf("%s: unknown step %q", file, e.Step)
	}
	return e, nil
}

// Save writes e's file atomically: a kill leaves the old step or the new.
func (j *Journal) Save(e *Entry) error {
	if !nodeName.MatchString(e.Node) {
		return fmt.Errorf("journal %s: node name %q cannot name a file", j.Dir, e.Node)
	}
	e.Version = JournalVersion
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	_, err = atomicfile.Write(j.path(e.Node, ".json"), append(data, '\n'), atomicfile.Options{})
	return err
}

// Remove deletes node's entry: its change is over.
func (j *Journal) Remove(node string) error {
	if err := os.Remove(j.path(node, ".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return j.dir.Sync()
}

// OutputPath is where the output of node's last change command is kept.
func (j *Journal) OutputPath(node string) string { return j.path(node, ".out") }

// changesLog is the journal's record of finished changes, a line each:
// "TIME NODE CONFIG OUTCOME".
const changesLog = "changes.log"

// maxChangesLog bounds the record. Past it, the record keeps its newest
// lines within half of it and each node's last line, which the dwell reads.
const maxChangesLog = 1 << 20

// Record appends a finished change to the record, unless its line is
// there already: a run killed between Record and Remove repeats it.
func (j *Journal) Record(e *Entry, at time.Time) error {
	path := filepath.Join(j.Dir, changesLog)
	config := e.Config
	if strings.ContainsFunc(config, func(r rune) bool { return unicode.IsSpace(r) || r == '"' }) {
		config = strconv.Quote(config) // mig-parted allows any name
	}
	line := fmt.Sprintf("%s %s %s %s\n", at.UTC().Format(time.RFC3339), e.Node, config, strings.ReplaceAll(e.Outcome, " ", "_"))
	data, err := fileio.ReadFile(path, 2*maxChangesLog, "the journal's record of changes")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if bytes.HasPrefix(data, []byte(line)) || bytes.Contains(data, []byte("\n"+line)) {
		return nil
	}
	// A last line cut short by a crash goes, or the line appended now
	// would join it into one that no reading takes.
	whole := data[:bytes.LastIndexByte(data, '\n')+1]
	if len(whole)+len(line) > maxChangesLog {
		kept, err := compactChanges(path, whole)
		if err != nil {
			return err
		}
		_, err = atomicfile.Write(path, append(kept, line...), atomicfile.Options{})
		return err
	}
	if len(whole) < len(data) {
		if err := os.Truncate(path, int64(len(whole))); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	_, err = f.WriteString(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// compactChanges keeps, of the record data (named file), its newest lines
// within half of maxChangesLog and, within three quarters, each node's last.
func compactChanges(file string, data []byte) ([]byte, error) {
	if _, err := parseChanges(file, data); err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	keep := make([]bool, len(lines))
	seen := map[string]bool{}
	size := 0
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) < 2 {
			continue
		}
		last := !seen[f[1]]
		seen[f[1]] = true
		if n := size + len(lines[i]); n <= maxChangesLog/2 || last && n <= maxChangesLog*3/4 {
			keep[i], size = true, n
		}
	}
	out := make([]byte, 0, size)
	for i, l := range lines {
		if keep[i] {
			out = append(out, l...)
		}
	}
	return out, nil
}

// LastChange is a node's newest line of the record of changes: when its
// change ended, and how (done, rolled_back, abandoned).
type LastChange struct {
	At      time.Time
	Outcome string
}

// LastChanges reads when and how each node last finished a change.
func (j *Journal) LastChanges() (map[string]LastChange, error) {
	path := filepath.Join(j.Dir, changesLog)
	data, err := fileio.ReadFile(path, 2*maxChangesLog, "the journal's record of changes")
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]LastChange{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseChanges(path, data)
}

// parseChanges reads the record of changes, named file. A last line
// with no newline is an append cut short by a crash, and is left out.
func parseChanges(file string, data []byte) (map[string]LastChange, error) {
	out := map[string]LastChange{}
	lines := strings.Split(string(data), "\n")
	for i, line := range lines[:len(lines)-1] {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		// The time, the node and the outcome are read; a quoted config
		// may hold blanks.
		t, err := time.Parse(time.RFC3339, f[0])
		if err != nil || len(f) < 4 {
			return nil, fmt.Errorf("%s:%d: want TIME NODE CONFIG OUTCOME", file, i+1)
		}
		if t.After(out[f[1]].At) {
			out[f[1]] = LastChange{At: t, Outcome: f[len(f)-1]}
		}
	}
	return out, nil
}

// Changing is the nodes in change and the config each goes to.
func Changing(entries []Entry) map[string]string {
	out := map[string]string{}
	for _, e := range entries {
		out[e.Node] = e.Config
	}
	return out
}
