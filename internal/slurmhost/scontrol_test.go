package slurmhost

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// capturedLines are real answers of scontrol show node -o (testdata).
func capturedLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/show-node-22.05.txt")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func TestParseNodeCaptured(t *testing.T) {
	lines := capturedLines(t)
	var got []Node
	for _, l := range lines {
		n, err := ParseNode("vm", l+"\n")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	// The OS= value holds blanks and '#'; Reason= runs to the end of the
	// line, blanks, parentheses and brackets included.
	want := []Node{
		{Gres: "gpu:a100:1,gpu:a100_1g.10gb:7,gpu:a100_1c.3g.40gb:1,gpu:a100_2c.3g.40gb:1,gpu:a100_3g.40gb:1,gpu:a100_2g.20gb:2,gpu:a100_1g.10gb+me:1",
			State: "UNKNOWN+DRAIN+INVALID_REG", Reason: "gres/gpu count reported lower than configured (14 < 15) [root@2026-11-23T12:24:32]", SlurmdStart: "2026-11-23T12:24:32"},
		{Gres: "gpu:a100:1,gpu:a100_1g.10gb:8,gpu:a100_1c.3g.40gb:1,gpu:a100_2c.3g.40gb:1,gpu:a100_3g.40gb:1,gpu:a100_2g.20gb:2,gpu:a100_1g.10gb+me:1",
			State: "UNKNOWN", SlurmdStart: "None"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseNodeReasonBeforeOtherKeys(t *testing.T) {
	line := "NodeName=n1 Gres=gpu:h100:8(S:0-1) State=IDLE+DRAIN Reason=disk full (sda) [root@2026-01-01T00:00:00] Comment=x"
	n, err := ParseNode("n1", line)
	if err != nil {
		t.Fatal(err)
	}
	want := Node{Gres: "gpu:h100:8(S:0-1)", State: "IDLE+DRAIN", Reason: "disk full (sda) [root@2026-01-01T00:00:00]"}
	if n != want {
		t.Errorf("got %+v, want %+v", n, want)
	}
	if n, _ := ParseNode("n1", "NodeName=n1 Gres=(null) State=IDLE Reason=(null)"); n.Reason != "" || n.Gres != "(null)" {
		t.Errorf("(null) reason: %+v", n)
	}
}

// An admin's reason may hold key=value words: they are not the node's.
func TestParseNodeReasonHoldsKeys(t *testing.T) {
	line := "NodeName=n1 Gres=gpu:h100:8 State=IDLE+DRAIN SlurmdStartTime=2026-01-01T00:00:00 Reason=was State=IDLE Gres=gpu:h100:1 SlurmdStartTime=2030-01-01T00:00:00 [root@2026-01-01T00:00:00]"
	n, err := ParseNode("n1", line)
	if err != nil {
		t.Fatal(err)
	}
	if n.State != "IDLE+DRAIN" || n.Gres != "gpu:h100:8" || n.SlurmdStart != "2026-01-01T00:00:00" {
		t.Errorf("the reason's words taken for the node's: %+v", n)
	}
}

func TestParseNodeWithoutGres(t *testing.T) {
	_, err := ParseNode("n1", "Node n1 not found")
	if err == nil || err.Error() != "scontrol show node n1: no Gres= in its answer" {
		t.Errorf("err = %v", err)
	}
	// GresUsed= is not Gres=.
	if _, err := ParseNode("n1", "NodeName=n1 GresUsed=gpu:0 State=IDLE"); err == nil {
		t.Error("GresUsed= taken for Gres=")
	}
}

// The same two answers from 20.11, 24.11 and 26.05 (testdata/README.md):
// a node drained for one GPU too many in slurm.conf, and the node IDLE.
// 20.11 says UNKNOWN+DRAIN without INVALID_REG, and puts Comment= after
// Reason=.
func TestParseNodeCapturedReleases(t *testing.T) {
	gres := "gpu:a100:1,gpu:a100_1g.10gb:7,gpu:a100_1c.3g.40gb:1,gpu:a100_2c.3g.40gb:1,gpu:a100_3g.40gb:1,gpu:a100_2g.20gb:2,gpu:a100_1g.10gb+me:1"
	for release, drained := range map[string]string{"20.11": "UNKNOWN+DRAIN", "24.11": "UNKNOWN+DRAIN+INVALID_REG", "26.05": "UNKNOWN+DRAIN+INVALID_REG"} {
		data, err := os.ReadFile("testdata/show-node-" + release + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) != 2 {
			t.Fatalf("%s: %d lines, want 2", release, len(lines))
		}
		stale, err := ParseNode("vm", lines[0])
		if err != nil {
			t.Fatal(err)
		}
		if !stale.RegistrationRefused() {
			t.Errorf("%s: %+v: registration refused not seen", release, stale)
		}
		if stale.Gres != gres || stale.State != drained || !strings.HasPrefix(stale.Reason, "gres/gpu count reported lower than configured (14 < 15) [root@") || !strings.HasSuffix(stale.Reason, "]") {
			t.Errorf("%s, drained: %+v", release, stale)
		}
		idle, err := ParseNode("vm", lines[1])
		if err != nil {
			t.Fatal(err)
		}
		// Every release says when the node's slurmd started: rebalance
		// --apply reads it to see a registration.
		if _, err := time.ParseInLocation("2006-01-02T15:04:05", idle.SlurmdStart, time.Local); err != nil {
			t.Errorf("%s, idle: SlurmdStartTime: %v", release, err)
		}
		idle.SlurmdStart = ""
		if want := (Node{Gres: gres, State: "IDLE"}); idle != want || idle.RegistrationRefused() {
			t.Errorf("%s, idle: %+v, want %+v", release, idle, want)
		}
	}
}

func TestRegistrationRefused(t *testing.T) {
	for _, c := range []struct {
		n    Node
		want bool
	}{
		{Node{State: "UNKNOWN+DRAIN+INVALID_REG", Reason: "gres/gpu count reported lower than configured (14 < 15) [root@2026-11-23T12:24:32]", SlurmdStart: "2026-11-23T12:24:32"}, true},
		{Node{State: "UNKNOWN+DRAIN", Reason: "gres/gpu count reported lower than configured (14 < 15) [root@2026-11-23T13:20:09]"}, true}, // 20.11
		{Node{State: "IDLE+DRAIN", Reason: "gpu:a100 count too low (1 < 2)"}, true},
		{Node{State: "IDLE+DRAIN", Reason: "disk full [root@2026-01-01T00:00:00]"}, false},
		{Node{State: "IDLE", Reason: ""}, false},
		{Node{State: "INVAL"}, true},
	} {
		if got := c.n.RegistrationRefused(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.n, got, c.want)
		}
	}
}

// An scontrol that does not answer (a slurmctld that accepts and never
// replies, a hung munge) is given up, with its whole process group, and
// said so: diff --running must not wait for ever.
func TestShowNodeGivesUpAHungScontrol(t *testing.T) {
	hung := testtools.NewHung(t)
	hung.Command(t, "scontrol")
	var err error
	done := make(chan error, 1)
	go func() {
		_, err := showNode("gpu01", 300*time.Millisecond)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("scontrol show node that does not answer: no return in 10s; the timeout is 300ms")
	}
	if want := "scontrol show node gpu01: no answer in 300ms"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

// Without scontrol, slurmctld cannot be asked: the error is the lookup's,
// with the fix (advice.NoScontrol) that the command line words.
func TestShowNodeWithoutScontrol(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := ShowNode("gpu01")
	var a *advice.Error
	if !errors.As(err, &a) || a.Fix != advice.NoScontrol || !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("err = %v, want exec.ErrNotFound with advice.NoScontrol", err)
	}
}

// A failed scontrol is said in one readable line: its conclusion, then
// the steps that led to it, without the "scontrol: error: " of each line
// (the answer of Debian's scontrol 22.05.8 on a host with no slurm.conf).
func TestShowNodeFailureInOneLine(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\ncat >&2 <<'EOF'\n" +
		"scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n" +
		"scontrol: error: fetch_config: DNS SRV lookup failed\n" +
		"scontrol: error: _establish_config_source: failed to fetch config\n" +
		"scontrol: fatal: Could not establish a configuration source\n" +
		"EOF\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/bin:/usr/bin")
	_, err := ShowNode("gpu01")
	want := "scontrol show node gpu01: Could not establish a configuration source (resolve_ctls_from_dns_srv: res_nsearch error: Unknown host; fetch_config: DNS SRV lookup failed; _establish_config_source: failed to fetch config)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if got := scontrolMessage("slurm_load_node error: Invalid node name specified\n"); got != "slurm_load_node error: Invalid node name specified" {
		t.Errorf("one line: %q", got)
	}
}
