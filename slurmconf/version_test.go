package slurmconf

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{
		"slurm-wlm 20.11.4\n": "20.11.4", // Debian's: bullseye (slurmtest/testdata/*/slurmd-V.txt)
		"slurm-wlm 22.05.8\n": "22.05.8", // bookworm
		"slurm-wlm 24.11.5\n": "24.11.5", // trixie
		"slurm-wlm 26.05.5\n": "26.05.5", // sid
		"slurm 24.11.5":       "24.11.5", // upstream's
		"21.08":               "21.08",
		"26.05.0-0rc1":        "26.05.0",
		"  23.02.7  ":         "23.02.7",
	} {
		v, err := ParseVersion(in)
		if err != nil || v.String() != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %s", in, v, err, want)
		}
	}
	for _, in := range []string{"", "slurm", "20", "x.11", "20.x", "20.13", "0.1", "20.11.x", "-1.5"} {
		if v, err := ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error", in, v)
		}
	}
}

func TestVersionBefore(t *testing.T) {
	v2011 := Version{20, 11, 4}
	for _, c := range []struct {
		v, r Version
		want bool
	}{
		{v2011, SharedFilesSince, true},
		{v2011, MultipleFilesSince, false},
		{Version{21, 8, 0}, SharedFilesSince, false},
		{Version{21, 8, 8}, SharedFilesSince, false},
		{Version{20, 2, 7}, MultipleFilesSince, true},
		{Version{}, SharedFilesSince, false}, // unknown: nothing refused
	} {
		if got := c.v.Before(c.r); got != c.want {
			t.Errorf("%v.Before(%v) = %v, want %v", c.v, c.r, got, c.want)
		}
	}
}

// migRecords are two MIG devices of one GPU, in each file style: the
// MultipleFiles= records share /dev/nvidia2.
func migRecords(node string) (multiple, ci []GresRecord) {
	multiple = []GresRecord{
		{NodeName: node, Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"}},
		{NodeName: node, Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap31"}},
	}
	ci = []GresRecord{
		{NodeName: node, Name: "gpu", Type: "a100_1g.10gb", File: "/dev/nvidia-caps/nvidia-cap22"},
		{NodeName: node, Name: "gpu", Type: "a100_1g.10gb", File: "/dev/nvidia-caps/nvidia-cap31"},
	}
	return multiple, ci
}

func TestCheckGresSharedFiles(t *testing.T) {
	multiple, ci := migRecords("n1")
	v2011, v2108, v2411 := Version{20, 11, 4}, Version{21, 8, 0}, Version{24, 11, 5}

	err := CheckGres(v2011, multiple)
	if err == nil || err.Error() != `Slurm 20.11.4 would refuse this gres.conf: two MultipleFiles= records of node n1 (a100_1g.10gb) share /dev/nvidia2, which Slurm allows from 21.08 on` ||
		!err.(*RefusedError).SharedFiles || err.(*RefusedError).File != "/dev/nvidia2" {
		t.Errorf("20.11 on MIG devices sharing their GPU's file: %v", err)
	}
	for _, v := range []Version{v2108, v2411, {}} {
		if err := CheckGres(v, multiple); err != nil {
			t.Errorf("%v on MultipleFiles= sharing a file: %v, want accepted", v, err)
		}
	}
	for _, v := range []Version{v2011, v2411} {
		if err := CheckGres(v, ci); err != nil {
			t.Errorf("%v on File= of CI caps: %v, want accepted", v, err)
		}
	}
	// One MIG device per GPU shares nothing: 20.11 takes it.
	if err := CheckGres(v2011, multiple[:1]); err != nil {
		t.Errorf("20.11 on one MIG device: %v", err)
	}
	// Records of two nodes never clash.
	other, _ := migRecords("n2")
	if err := CheckGres(v2011, append(multiple[:1:1], other[1])); err != nil {
		t.Errorf("20.11 on one MIG device on each of two nodes: %v", err)
	}
	// ... unless the node names overlap as hostlists.
	ranged, _ := migRecords("n[1-2]")
	if err := CheckGres(v2011, append(multiple[:1:1], ranged[1])); err == nil || !strings.Contains(err.Error(), "of node n1") {
		t.Errorf("20.11 on n1 and n[1-2] sharing /dev/nvidia2: %v", err)
	}
	// A record for every node joins each node's.
	global, _ := migRecords("")
	if err := CheckGres(v2011, append(multiple[:1:1], global[1])); err == nil {
		t.Error("20.11 on a node's record and a global one sharing /dev/nvidia2: accepted")
	}
	if err := CheckGres(v2011, global); err == nil || strings.Contains(err.Error(), "of node") {
		t.Errorf("20.11 on two global records sharing /dev/nvidia2: %v", err)
	}
	// A File= in two records: every release refuses it.
	dup := []GresRecord{{NodeName: "n1", Name: "gpu", File: "/dev/nvidia[0-1]"}, {NodeName: "n1", Name: "gpu", File: "/dev/nvidia1"}}
	for _, v := range []Version{v2011, v2411} {
		if err := CheckGres(v, dup); err == nil || err.Error() != "Slurm "+v.String()+` would refuse this gres.conf ("duplicate device file name"): /dev/nvidia1 is in two records of node n1` || err.(*RefusedError).SharedFiles {
			t.Errorf("%v on File=/dev/nvidia1 twice: %v", v, err)
		}
	}
	// Other GRES names are checked apart.
	mps := []GresRecord{{NodeName: "n1", Name: "gpu", File: "/dev/nvidia0"}, {NodeName: "n1", Name: "mps", File: "/dev/nvidia0", Count: 100}}
	if err := CheckGres(v2011, mps); err != nil {
		t.Errorf("gpu and mps on one file: %v", err)
	}
}

func TestCheckGresMultipleFilesKey(t *testing.T) {
	multiple, _ := migRecords("n1")
	err := CheckGres(Version{20, 2, 7}, multiple[:1])
	if err == nil || !strings.Contains(err.Error(), "Slurm 20.02.7 would refuse this gres.conf: it knows no MultipleFiles= (that came in 20.11)") {
		t.Errorf("20.02 on MultipleFiles=: %v", err)
	}
	if r, _ := err.(*RefusedError); r == nil || r.Fix != filesCI {
		t.Errorf("20.02 on MultipleFiles=: fix %+v, want %s", r, filesCI)
	}
}

func TestCheckGresFlags(t *testing.T) {
	rec := func(flags string) []GresRecord {
		return []GresRecord{{NodeName: "n1", Name: "gpu", File: "/dev/nvidia0", Flags: flags}}
	}
	for _, c := range []struct {
		v     Version
		flags string
		want  string // "" accepted
	}{
		{Version{20, 11, 4}, "CountOnly", ""},
		{Version{20, 11, 4}, "nvidia_gpu_env", "Slurm 20.11.4 does not know Flags=nvidia_gpu_env (that came in 21.08)"},
		{Version{22, 5, 8}, "nvidia_gpu_env,one_sharing", ""},
		{Version{22, 5, 8}, "nvidia_gpu_env,explicit", "does not know Flags=explicit (that came in 23.02)"},
		{Version{24, 11, 5}, "NVIDIA_GPU_ENV,Explicit", ""},
		{Version{24, 11, 5}, "nvidia_gpu_env,env_uuid", "Slurm 24.11.5 does not know Flags=env_uuid (that came in 26.05)"},
		{Version{26, 5, 5}, "nvidia_gpu_env,env_uuid", ""},
		{Version{}, "env_uuid", ""},
	} {
		err := CheckGres(c.v, rec(c.flags))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v with Flags=%s: %v, want %q", c.v, c.flags, err, c.want)
		}
	}
}

func TestRelease(t *testing.T) {
	v2411 := func() (Version, string, error) { return Version{Major: 24, Minor: 11}, "slurmd -V", nil }
	var warned []string
	warn := func(s string) { warned = append(warned, s) }
	for _, tc := range []struct {
		flag      string
		probe     Probe
		want      Version
		from      string
		wantWarns int
	}{
		{"20.11", v2411, Version{Major: 20, Minor: 11}, "--slurm-version", 0},
		{"", v2411, Version{Major: 24, Minor: 11}, "slurmd -V", 0},
		{"", nil, Version{}, "", 0},
		{"", func() (Version, string, error) { return Version{Major: 22, Minor: 5}, "scontrol -V", nil }, Version{Major: 22, Minor: 5}, "scontrol -V", 0},
		{"", func() (Version, string, error) { return Version{}, "", ErrNoSlurm }, Version{}, "", 0},
		{"", func() (Version, string, error) { return Version{}, "slurmd -V", errors.New("slurmd -V: exit status 1") }, Version{}, "", 1},
	} {
		warned = nil
		v, from, err := Release(tc.flag, tc.probe, warn)
		if err != nil || v.Major != tc.want.Major || v.Minor != tc.want.Minor || from != tc.from || len(warned) != tc.wantWarns {
			t.Errorf("Release(%q): %v %q %v, warnings %q; want %v %q", tc.flag, v, from, err, warned, tc.want, tc.from)
		}
	}
	if _, _, err := Release("2x", nil, warn); err == nil {
		t.Error(`Release("2x"): no error`)
	}
}

// A refusal is one line that says nothing was written and gives the fix;
// which command said the release only where it was not --slurm-version.
func TestExplainRefusal(t *testing.T) {
	multiple, _ := migRecords("gpu01")
	refused := CheckGres(Version{20, 11, 4}, multiple)
	for from, want := range map[string]string{
		"--slurm-version": "Slurm 20.11.4 would refuse this gres.conf: two MultipleFiles= records of node gpu01 (a100_1g.10gb) share /dev/nvidia2, which Slurm allows from 21.08 on; nothing was written; --files ci writes what every Slurm reads",
		"slurmd -V":       "Slurm 20.11.4 would refuse this gres.conf: two MultipleFiles= records of node gpu01 (a100_1g.10gb) share /dev/nvidia2, which Slurm allows from 21.08 on; nothing was written; --files ci writes what every Slurm reads (slurmd -V said 20.11.4; --slurm-version X.Y names the Slurm that reads it)",
	} {
		if got := ExplainRefusal(refused, from); got.Error() != want {
			t.Errorf("ExplainRefusal(%s):\n%v\nwant\n%s", from, got, want)
		}
	}
	flags := CheckGres(Version{20, 11, 4}, []GresRecord{{Name: "gpu", File: "/dev/nvidia0", Flags: "explicit"}})
	want := "Slurm 20.11.4 does not know Flags=explicit (that came in 23.02) and would drop the line's other *_env flags with it; nothing was written"
	if got := ExplainRefusal(flags, "--slurm-version"); got.Error() != want {
		t.Errorf("ExplainRefusal of a flag:\n%v\nwant\n%s", got, want)
	}
	other := errors.New("other")
	if got := ExplainRefusal(other, "slurmd -V"); got != other {
		t.Errorf("ExplainRefusal of another error: %v", got)
	}
}

// A `slurmd -V` that hangs, and whose child holds its stdout, is given up
// at the timeout with its whole process group: killing slurmd alone left
// the grandchild holding the pipe, and the probe waited for as long as the
// grandchild lived.
func TestInstalledVersionKillsAHungProbe(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	bin, pids := t.TempDir(), t.TempDir()
	fake := "#!/bin/sh\n" +
		sleep + " 600 &\necho $! >" + filepath.Join(pids, "grandchild") + "\n" +
		"echo $$ >" + filepath.Join(pids, "child") + "\nwait\n"
	if err := os.WriteFile(filepath.Join(bin, "slurmd"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	// Whatever happens, no sleep outlives the test.
	t.Cleanup(func() {
		for _, name := range []string{"child", "grandchild"} {
			if pid := readPid(pids, name); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	type answer struct {
		asked string
		err   error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		_, asked, err := installedVersion(300 * time.Millisecond)
		done <- answer{asked, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe of a hung slurmd -V did not return in 10s; its timeout is 300ms")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the probe took %v; its timeout is 300ms", took)
	}
	if want := "slurmd -V: no answer in 300ms"; a.asked != "slurmd -V" || a.err == nil || a.err.Error() != want {
		t.Errorf("asked %q, err %v; want %s", a.asked, a.err, want)
	}
	for _, name := range []string{"child", "grandchild"} {
		pid := readPid(pids, name)
		if pid <= 0 {
			t.Errorf("the fake slurmd wrote no %s pid", name)
			continue
		}
		// Reaped or not, a killed process is gone or a zombie.
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
			t.Errorf("the hung slurmd -V's %s (pid %d) is still running", name, pid)
		}
	}
}

// readPid reads a pid the fake slurmd wrote to dir/name; 0 when none.
func readPid(dir, name string) int {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
