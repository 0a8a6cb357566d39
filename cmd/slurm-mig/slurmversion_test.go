package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// TestSlurmProbeOnlyWhenRendering: gen asks this host's slurmd for its
// version; env, the TaskProlog run before every task, starts no process.
func TestSlurmProbeOnlyWhenRendering(t *testing.T) {
	bin, marker := t.TempDir(), filepath.Join(t.TempDir(), "asked")
	fake := "#!/bin/sh\necho asked >>" + marker + "\necho slurm 22.05.8\n"
	if err := os.WriteFile(filepath.Join(bin, "slurmd"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("SLURMD_NODENAME", "gpu-demo01")
	t.Setenv("SLURM_STEP_ID", "0")
	t.Setenv("SLURM_STEP_GPUS", "0")
	t.Setenv("CUDA_VISIBLE_DEVICES", "0")
	snapshot := fixture.Path(t, "real/h200x4/snapshot.json") // whole GPUs: nothing read under /
	run1 := func(args ...string) {
		var stdout, stderr bytes.Buffer
		code := run(args, &env{stdout: &stdout, stderr: &stderr, hostname: testHostname})
		t.Logf("%v: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
	}

	run1("env", "--from", snapshot, "--slurm-conf", filepath.Join(t.TempDir(), "none.conf"))
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("env ran slurmd -V")
	}
	run1("gen", "--from", snapshot)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("gen --root / did not ask slurmd -V: %v", err)
	}
}
