package rollout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCommand(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	c := Command{Shell: `echo "$NODE $SELECT $MIG_CONFIG"; [ -e /proc/self/fd/3 ] && echo holds-fd-3; [ "$SELECT" != bad ] || { echo "mig-parted: no such config" >&2; exit 3; }`,
		MigConfig: "/etc/mig.yaml", Timeout: 10 * time.Second, Hold: j.Lock(), Output: j.OutputPath}
	if err := c.Change("gpu01", "all-balanced"); err != nil {
		t.Fatal(err)
	}
	err = c.Change("gpu01", "bad")
	if err == nil || !strings.Contains(err.Error(), "exit status 3: mig-parted: no such config") {
		t.Errorf("err = %v", err)
	}
	data, _ := os.ReadFile(j.OutputPath("gpu01"))
	out := string(data)
	for _, s := range []string{"NODE=gpu01 SELECT=all-balanced\ngpu01 all-balanced /etc/mig.yaml\nholds-fd-3\n", "NODE=gpu01 SELECT=bad\ngpu01 bad /etc/mig.yaml\nholds-fd-3\nmig-parted: no such config\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// A command past its time is killed with all it started: a child that
// keeps the output open does not keep the run waiting.
func TestCommandTimeout(t *testing.T) {
	dir := t.TempDir()
	c := Command{Shell: "sleep 60 & sleep 60", Timeout: 300 * time.Millisecond, Output: func(string) string { return filepath.Join(dir, "out") }}
	start := time.Now()
	err := c.Change("gpu01", "x")
	if err == nil || !strings.Contains(err.Error(), "no answer in 300ms") || time.Since(start) > 20*time.Second {
		t.Errorf("err = %v after %s", err, time.Since(start))
	}
}

// The journal's lock excludes a second run, and a change command that
// inherited it keeps it after the run that started it has closed it.
func TestJournalLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenJournal(dir); err == nil || !strings.Contains(err.Error(), "holds its lock") {
		t.Fatalf("second open: %v", err)
	}
	// The command closes fd 3, as ssh does when it starts: the shell that
	// waits for it still holds the lock.
	c := Command{Shell: "exec 3>&-; sleep 1", Timeout: 10 * time.Second, Hold: j.Lock(), Output: j.OutputPath}
	done := make(chan error, 1)
	go func() { done <- c.Change("gpu01", "x") }()
	time.Sleep(300 * time.Millisecond)
	j.Close() // the run is killed; its command goes on
	if j2, err := OpenJournal(dir); err == nil {
		j2.Close()
		t.Fatal("the lock went with the run while its command still ran")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	j2, err := OpenJournal(dir)
	if err != nil {
		t.Fatalf("the lock stayed after the command ended: %v", err)
	}
	j2.Close()
}

func TestJournalEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	e := Entry{Change: toBalanced, Step: StepWait}
	if err := j.Save(&e); err != nil {
		t.Fatal(err)
	}
	got, err := j.Entries()
	if err != nil || len(got) != 1 || got[0].Node != "gpu01" || got[0].Step != StepWait || got[0].Version != JournalVersion {
		t.Fatalf("%+v, %v", got, err)
	}
	for name, content := range map[string]string{
		"gpu02.json": `{"version": 1, "node": "gpu03", "step": "wait"}`,
		"gpu04.json": `{"version": 2, "node": "gpu04", "step": "wait"}`,
		"gpu05.json": `{"version": 1, "node": "gpu05", "step": "dance"}`,
		"gpu06.json": `{"version": 1,`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Entries(); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming it", content, err)
		}
		os.Remove(path)
	}
	if err := j.Save(&Entry{Change: Change{Node: "../etc/passwd"}}); err == nil {
		t.Error("a node name with a slash named a file")
	}
	if err := j.Remove("gpu01"); err != nil {
		t.Fatal(err)
	}
	if got, _ := j.Entries(); len(got) != 0 {
		t.Errorf("after Remove: %+v", got)
	}
}

func TestJournalRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if last, err := j.LastChanges(); err != nil || len(last) != 0 {
		t.Fatalf("no record: %v, %v", last, err)
	}
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	e := Entry{Change: toBalanced, Outcome: "done"}
	j.Record(&e, t0)
	e.Outcome = "rolled back to all-1g"
	j.Record(&e, t0.Add(time.Hour))
	e.Node = "gpu02"
	j.Record(&e, t0.Add(-time.Hour))
	// A run killed between Record and Remove records the change again.
	j.Record(&e, t0.Add(-time.Hour))
	if data, _ := os.ReadFile(filepath.Join(dir, changesLog)); strings.Count(string(data), "\n") != 3 {
		t.Errorf("changes.log:\n%s\nwant three lines", data)
	}
	last, err := j.LastChanges()
	if err != nil || !last["gpu01"].At.Equal(t0.Add(time.Hour)) || !last["gpu02"].At.Equal(t0.Add(-time.Hour)) {
		t.Errorf("%v, %v", last, err)
	}
	if err := os.WriteFile(filepath.Join(dir, changesLog), []byte("yesterday gpu01\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := j.LastChanges(); err == nil || !strings.Contains(err.Error(), changesLog+":1:") {
		t.Errorf("a bad line: %v", err)
	}
	// mig-parted allows a config name with blanks: it is quoted, and
	// the record stays readable. A last line cut short by a crash (no
	// newline) is left out.
	os.Remove(filepath.Join(dir, changesLog))
	e = Entry{Change: Change{Node: "gpu03", Config: `all "balanced" 2`}, Outcome: "done"}
	if err := j.Record(&e, t0); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, changesLog), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("2026-11-28T12:00:00Z gpu0")
	f.Close()
	data, _ := os.ReadFile(filepath.Join(dir, changesLog))
	if !strings.Contains(string(data), ` gpu03 "all \"balanced\" 2" done`) {
		t.Errorf("changes.log:\n%s\nwant the config quoted", data)
	}
	if last, err := j.LastChanges(); err != nil || len(last) != 1 || !last["gpu03"].At.Equal(t0) {
		t.Errorf("a quoted config and a torn last line: %v, %v", last, err)
	}
	// The next line does not join the torn one: it goes first.
	e.Node = "gpu04"
	if err := j.Record(&e, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if last, err := j.LastChanges(); err != nil || len(last) != 2 || !last["gpu04"].At.Equal(t0.Add(time.Minute)) {
		data, _ := os.ReadFile(filepath.Join(dir, changesLog))
		t.Errorf("a line recorded after a torn one: %v, %v\n%s", last, err, data)
	}
}

// TestJournalRecordCompacts: past its bound the record keeps its newest
// lines and every node's last one, which the dwell reads, and its mode.
func TestJournalRecordCompacts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString(t0.Format(time.RFC3339) + " gpu-once all-balanced done\n")
	at := t0
	for i := 0; b.Len() <= maxChangesLog; i++ {
		at = at.Add(time.Minute)
		fmt.Fprintf(&b, "%s gpu%02d all-1g.10gb done\n", at.Format(time.RFC3339), i%50)
	}
	path := filepath.Join(dir, changesLog)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := j.LastChanges()
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{Change: Change{Node: "gpu99", Config: "all-balanced"}, Outcome: "done"}
	if err := j.Record(&e, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	after, err := j.LastChanges()
	if err != nil {
		t.Fatal(err)
	}
	before["gpu99"] = LastChange{At: at.Add(time.Minute), Outcome: "done"}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("each node's last change (-before +after):\n%s", diff)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxChangesLog*3/4+100 || fi.Size() < maxChangesLog/2-100 {
		t.Errorf("changes.log is %d bytes after compaction; want about half to three quarters of %d", fi.Size(), maxChangesLog)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("changes.log mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(data), " gpu99 all-balanced done\n") {
		t.Errorf("the new line is not last:\n...%s", data[len(data)-200:])
	}
}

// TestJournalRefusesOthersHands: root acts on the journal's entries and
// writes its files, so a journal others may write, or a path through
// another user's directory, is refused; a new one is made 0700, and a
// link in place of a file of its own is not followed.
func TestJournalRefusesOthersHands(t *testing.T) {
	base := t.TempDir()
	made := filepath.Join(base, "new", "journal")
	j, err := OpenJournal(made)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(made); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("a new journal: %v, %v; want mode 0700", fi.Mode().Perm(), err)
	}
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("root's\n"), 0o644)
	os.Symlink(victim, j.OutputPath("gpu01"))
	os.Symlink(victim, filepath.Join(made, changesLog))
	c := Command{Shell: "echo applied", Timeout: 10 * time.Second, Hold: j.Lock(), Output: j.OutputPath}
	if err := c.Change("gpu01", "all-balanced"); err == nil {
		t.Error("the change command's output followed a link")
	}
	e := Entry{Change: Change{Node: "gpu01", Config: "all-balanced"}, Outcome: "done"}
	if err := j.Record(&e, time.Now()); err == nil {
		t.Error("changes.log followed a link")
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's\n" {
		t.Errorf("the link's target was written:\n%s", data)
	}
	j.Close()

	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	for _, mode := range []os.FileMode{0o777, os.ModeSticky | 0o777, 0o770} {
		os.Chmod(open, mode)
		if _, err := OpenJournal(open); err == nil || !strings.Contains(err.Error(), "writable by others") {
			t.Errorf("a journal of mode %v: %v", mode, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("the rest needs root, to give a directory to another user")
	}
	theirs := filepath.Join(base, "theirs")
	os.Mkdir(theirs, 0o755)
	os.Chown(theirs, 65534, 65534)
	if _, err := OpenJournal(filepath.Join(theirs, "journal")); err == nil {
		t.Error("a journal in another user's directory was opened")
	}
}
