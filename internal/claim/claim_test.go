package claim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// With CLAIM_TEST_FINDJOB set, the test binary prints the job FindJob
// finds, so shells can run it as they would run slurm-mig.
func TestMain(m *testing.M) {
	if os.Getenv("CLAIM_TEST_FINDJOB") != "" {
		job, err := FindJob(0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(job.PID)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFindJob: however a job script's shell runs slurm-mig (command
// substitution, in a pipeline, in a background or explicit subshell),
// the job is that shell ($$), in bash and in dash.
func TestFindJob(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, shell := range []string{"bash", "dash"} {
		for _, script := range []string{
			`x=$(BIN); echo $$ $x`,
			`export X=$(BIN); echo $$ $X`,
			`x=$(BIN | head -1); echo $$ $x`,
			`x=$(BIN; true); echo $$ $x`,
			`{ BIN >out; } & wait; echo $$ $(cat out)`,
			`(BIN >out; true); echo $$ $(cat out)`,
			`BIN >out; echo $$ $(cat out)`,
		} {
			cmd := exec.Command(shell, "-c", strings.ReplaceAll(script, "BIN", self))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CLAIM_TEST_FINDJOB=1")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s -c %q: %v", shell, script, err)
			}
			f := strings.Fields(string(out))
			if len(f) != 2 || f[0] != f[1] {
				t.Errorf("%s -c %q: shell $$ and job: %q, want the same pid", shell, script, out)
			}
		}
	}
}

func TestOwnJob(t *testing.T) {
	if _, err := FindJob(1); err == nil {
		t.Error("--pid 1 accepted")
	}
	if _, err := FindJob(1 << 30); err == nil {
		t.Error("a pid that does not exist accepted")
	}
	job, err := FindJob(os.Getpid())
	if err != nil || !job.Alive() {
		t.Errorf("own pid: %v, %v", job, err)
	}
}

func TestOpenDir(t *testing.T) {
	base := t.TempDir()
	made := filepath.Join(base, "claims")
	d, err := OpenDir(made)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if st, err := os.Stat(made); err != nil || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("created %v, want sticky and 0777: %v", st.Mode(), err)
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	if _, err := OpenDir(open); err == nil || !strings.Contains(err.Error(), "not sticky") {
		t.Errorf("world-writable, not sticky: %v", err)
	}
	link := filepath.Join(base, "link")
	os.Symlink(made, link)
	if _, err := OpenDir(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlink: %v", err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := OpenDir(file); err == nil {
		t.Error("a plain file accepted as claims directory")
	}
}

// A claims directory refused says what would make it right as its hint,
// apart from the message (advice.Hinter); so does exec given no command.
func TestRefusalHints(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil || os.Chmod(open, 0o777) != nil {
		t.Fatal(err)
	}
	type hintCase struct {
		what      string
		err       error
		msg, hint string
	}
	cases := []hintCase{
		{"not sticky", second(OpenDir(open)), "claims directory " + open + " is writable by others but not sticky (mode 0777): anyone could remove others' claims", "; chmod 1777 it"},
		{"no command", second(LookPath(nil)), "exec: no command given", " (slurm-mig exec [flags] -- CMD [ARGS...])"},
	}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		if err := os.Mkdir(theirs, 0o755); err != nil || os.Chown(theirs, nobody, nobody) != nil {
			t.Fatal(err)
		}
		// procfs makes no directory, not even for root.
		const proc = "/proc/slurm-mig-no-claims"
		cases = append(cases,
			hintCase{"another user's", second(OpenDir(theirs)), fmt.Sprintf("claims directory %s belongs to uid %d, not root: that user could remove every claim in it", theirs, nobody), "; make it root's, mode 1777"},
			hintCase{"cannot be made", second(OpenDir(proc)), "claims directory " + proc + " does not exist and cannot be created (no such file or directory)", createDir})
	}
	for _, c := range cases {
		var h advice.Hinter
		if !errors.As(c.err, &h) || c.err.Error() != c.msg || h.Hint() != c.hint {
			t.Errorf("%s: %v; want %q with the hint %q", c.what, c.err, c.msg, c.hint)
		}
	}
}

// second is the error of a call that returns a value and an error.
func second[T any](_ T, err error) error { return err }

// TestTake: claims in one process conflict like claims of many (every
// claim is its own open file); closing gives devices back; stale and
// corrupt files, symlinks, FIFOs and directories named like claims never
// block a device.
func TestTake(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claims")
	d, err := OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	uuids := []string{"MIG-a", "MIG-b", "MIG-GPU-c/1/0"}
	info := Info{Job: Job{PID: os.Getpid()}, Command: "test"}

	stale := filepath.Join(path, "MIG-a."+strings.Repeat("0", 32))
	os.WriteFile(stale, []byte("\x00garbage"), 0o644)
	os.Chtimes(stale, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)) // not a claimant's just made
	os.Symlink("/etc/passwd", filepath.Join(path, "MIG-b."+strings.Repeat("1", 32)))
	exec.Command("mkfifo", filepath.Join(path, "MIG-GPU-c_1_0."+strings.Repeat("2", 16))).Run()
	os.Mkdir(filepath.Join(path, "MIG-GPU-c_1_0."+strings.Repeat("3", 32)), 0o755)

	c1, _, err := d.Take(uuids, 2, info, time.Second)
	if err != nil || c1 == nil || strings.Join(c1.UUIDs, " ") != "MIG-a MIG-b" {
		t.Fatalf("first claim: %+v, %v", c1, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("our stale claim file was not removed")
	}
	c2, held, err := d.Take(uuids, 2, info, time.Second)
	if err != nil || c2 != nil || len(held) != 2 || held["MIG-a"].UID != os.Getuid() || held["MIG-a"].JobPID != os.Getpid() {
		t.Fatalf("second claim of 2: %+v, held %+v, %v", c2, held, err)
	}
	c3, _, err := d.Take(uuids, 1, info, time.Second)
	if err != nil || c3 == nil || c3.UUIDs[0] != "MIG-GPU-c/1/0" {
		t.Fatalf("third claim: %+v, %v", c3, err)
	}
	data, _ := os.ReadFile(c3.Files[0].Name())
	if !strings.Contains(string(data), "device MIG-GPU-c/1/0\n") || !strings.Contains(string(data), "command test\n") {
		t.Errorf("claim file says %q", data)
	}
	c1.Close()
	c4, _, err := d.Take(uuids, 2, info, time.Second)
	if err != nil || c4 == nil || strings.Join(c4.UUIDs, " ") != "MIG-a MIG-b" {
		t.Fatalf("after closing the first claim: %+v, %v", c4, err)
	}
}

func TestCandidates(t *testing.T) {
	node := synth.LSFNode() // GPU 0 whole, GPUs 1-3 seven 1g.10gb each
	node.GPUs[3].MigDevices[6].Profile = "2g.20gb"
	mig := func(g, m int) string { return node.GPUs[g].MigDevices[m].UUID }
	for _, tc := range []struct {
		visible string
		set     bool
		profile string
		count   int
		want    int    // candidates
		first   string // UUID of the first
		err     string
		warn    string
	}{
		{set: false, want: 21, first: mig(1, 0)},
		{visible: "2", set: true, want: 7, first: mig(2, 0)},
		{visible: " 3 , 1", set: true, want: 14, first: mig(1, 0)},
		{visible: "GPU-00000000-0000-4000-8000-000000000003", set: true, want: 7, first: mig(3, 0)},
		{visible: "GPU-00000000-0000-4000-8000-00000000000", set: true, err: "is the start of 4 UUIDs"},
		{visible: mig(2, 4) + "," + mig(1, 6)[:20], set: true, want: 1, first: mig(2, 4), warn: "MIG-00000000-0000-40 is the start of 21 UUIDs; like CUDA, slurm-mig ignores it"},
		{visible: mig(2, 4) + "," + mig(1, 6), set: true, want: 2, first: mig(1, 6)},
		{visible: "3,9,1", set: true, want: 7, first: mig(3, 0), warn: "this node has no GPU 9"},
		{visible: "0", set: true, err: "GPU 0 (minor 0, 00000000:01:00.0) has MIG off (use it whole); GPUs 1, 2, 3 have MIG devices, but this job may not use them"},
		{visible: "", set: true, err: "set but empty"},
		{visible: "-1", set: true, err: `"-1" is neither a GPU index nor a GPU- or MIG- UUID`},
		{visible: "MIG-ffff", set: true, err: "MIG-ffff is no GPU or MIG device of this node"},
		{set: false, profile: "2g.20gb", want: 1, first: mig(3, 6)},
		{set: false, profile: "3g.40gb", err: "no MIG device of profile 3g.40gb among the 21 MIG devices this job may use (20 × 1g.10gb, 1 × 2g.20gb)"},
		{visible: "1", set: true, count: 8, err: "this job may use only 7 MIG devices"}, // cmd adds "--count 8, but "
	} {
		devs, warnings, err := Candidates(node, Request{Visible: tc.visible, VisibleSet: tc.set, Profile: tc.profile, Count: max(tc.count, 1)})
		name := fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q (set %v) --profile %q", tc.visible, tc.set, tc.profile)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case len(devs) != tc.want || devs[0].Mig.UUID != tc.first:
			t.Errorf("%s: %d candidates from %s, want %d from %s", name, len(devs), devs[0].Mig.UUID, tc.want, tc.first)
		}
		if got := strings.Join(warnings, "\n"); !strings.Contains(got, tc.warn) || (tc.warn == "" && got != "") {
			t.Errorf("%s: warnings %q, want %q", name, got, tc.warn)
		}
	}
	if _, _, err := Candidates(&model.Node{}, Request{Count: 1}); err == nil || err.Error() != "no GPU on this node" {
		t.Errorf("empty node: %v", err)
	}
}

// exec exits as shells do: 127 for a command not found, 126 for one
// found but not executable.
func TestLookPathExitCodes(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]int{script: 126, filepath.Join(dir, "missing"): 127, "slurm-mig-no-such-command": 127} {
		_, err := LookPath([]string{args})
		var ce *CommandError
		if !errors.As(err, &ce) || ce.ExitCode() != want {
			t.Errorf("LookPath(%q): %v, want exit %d", args, err, want)
		}
	}
}
