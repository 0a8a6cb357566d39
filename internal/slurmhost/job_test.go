package slurmhost

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// The answers of three releases for a job of two GPU types: the
// indices of both, on node vm; none on another node.
func TestParseJobGPUsReal(t *testing.T) {
	for _, rel := range []string{"22.05", "24.11", "26.05"} {
		data, err := os.ReadFile("testdata/show-job-" + rel + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseJobGPUs("3", "vm", string(data))
		if err != nil || !slices.Equal(got, []int{0, 4}) {
			t.Errorf("%s: %v, %v; want [0 4]", rel, got, err)
		}
		if got, err := ParseJobGPUs("3", "gpu01", string(data)); err != nil || len(got) != 0 {
			t.Errorf("%s, another node: %v, %v; want none", rel, got, err)
		}
	}
}

func TestParseJobGPUs(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want []int
		err  string
	}{
		// A job of two nodes, each its own group; ranges and lists;
		// shards and mps beside the GPUs are not GPUs.
		{out: "JobId=7 NodeList=gpu[01-02]   Nodes=gpu01 CPU_IDs=0-1 Mem=1 GRES=gpu:a100:2(IDX:0-1)   Nodes=gpu02 CPU_IDs=0 Mem=1 GRES=gpu:1g.10gb:1(IDX:5),gpu:a100:1(IDX:3),shard:a100:2(3/4,0/4)", want: []int{3, 5}},
		{out: "JobId=7 Nodes=gpu[01-03] CPU_IDs=0 Mem=1 GRES=gpu:3(IDX:0,2-3)", want: []int{0, 2, 3}},
		{out: "JobId=7 Nodes=gpu02 CPU_IDs=0 Mem=1 GRES=", want: nil},
		{out: "JobId=7 Nodes=gpu02 CPU_IDs=0 Mem=1 GRES=gpu:a100:1(IDX:x)", err: "scontrol show job -d 7: GRES=gpu:a100:1(IDX:x): IDX:x: not a list of indices"},
		{out: "JobId=7 Nodes=gpu[02 CPU_IDs=0", err: "scontrol show job -d 7: Nodes=gpu[02: "},
	} {
		got, err := ParseJobGPUs("7", "gpu02", tc.out)
		switch {
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: err = %v, want %s", tc.out, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%q: %v, %v; want %v", tc.out, got, err, tc.want)
		}
	}
}

// A Prolog that asks slurmctld is given up with scontrol, and says so.
func TestJobGPUsGivesUpAHungScontrol(t *testing.T) {
	hung := testtools.NewHung(t)
	hung.Command(t, "scontrol")
	done := make(chan error, 1)
	go func() {
		_, err := jobGPUs("42", "gpu01", 300*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		if want := "scontrol show job -d 42: no answer in 300ms"; err == nil || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no return in 10s; the timeout is 300ms")
	}
}

// slurmd runs a Prolog without PATH: scontrol is found where Slurm's
// packages install it.
func TestLookScontrolWithoutPath(t *testing.T) {
	t.Setenv("PATH", "")
	path, err := lookSlurm("scontrol")
	if _, statErr := os.Stat("/usr/bin/scontrol"); statErr == nil {
		if err != nil || path != "/usr/bin/scontrol" {
			t.Errorf("lookSlurm(scontrol) = %q, %v; want /usr/bin/scontrol", path, err)
		}
	} else if err == nil && !strings.HasSuffix(path, "/scontrol") {
		t.Errorf("lookSlurm(scontrol) = %q", path)
	}
}
