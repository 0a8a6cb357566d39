package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/nvmlfake"
	"github.com/slurm-mig/slurm-mig/internal/testtools"
)

// TestNodeFullMatchesSlurmdC compares node --full on this machine's real
// sysfs with what Debian's slurmd -C says about the same machine.
func TestNodeFullMatchesSlurmdC(t *testing.T) {
	slurmd := testtools.Require(t, testtools.SlurmPackages, "slurmd")
	out, err := exec.Command(slurmd, "-C").Output()
	if err != nil {
		t.Fatalf("slurmd -C: %v", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	fields := strings.Fields(first)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "NodeName=") {
		t.Fatalf("slurmd -C printed %q", first)
	}
	want := strings.Join(fields[1:], " ") // the hardware, without NodeName=

	// The GPU is a fake one, read through NVML as on a GPU node, so that
	// the hardware is this machine's: a snapshot's would be the node it
	// describes.
	fake, err := nvmlfake.New(&nvmlfake.Fixture{GPUs: []nvmlfake.GPU{
		{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3"}}})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"node", "--full", "--no-node-name"}, &env{stdout: &stdout, stderr: &stderr,
		newNVML: func() nvml.Interface { return fake }, hostname: os.Hostname})
	if code != exitOK {
		t.Fatalf("node --full: exit %d: %s", code, stderr.String())
	}
	got := strings.TrimSuffix(strings.TrimSpace(stdout.String()), " Gres=gpu:h100:1")
	if got != want {
		t.Errorf("node --full: %s\nslurmd -C:   %s", got, want)
	}
}
