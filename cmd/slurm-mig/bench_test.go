package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// BenchmarkGenFromSnapshot times the whole process, as config management
// runs it: exec the built binary, gen --from a snapshot, exit. Sizes are
// MIG devices (32 GPUs x 7 is the largest node NVML can have today).
func BenchmarkGenFromSnapshot(b *testing.B) {
	dir := b.TempDir()
	bin := buildBinary(b, dir)
	for _, size := range []struct{ gpus, migs int }{{8, 1}, {8, 7}, {32, 7}} {
		b.Run(fmt.Sprintf("devices=%d", size.gpus*size.migs), func(b *testing.B) {
			snap := filepath.Join(dir, fmt.Sprintf("snap-%d.json", size.gpus*size.migs))
			f, err := os.Create(snap)
			if err != nil {
				b.Fatal(err)
			}
			if err := model.WriteSnapshot(f, synth.Snapshot(size.gpus, size.migs)); err != nil {
				b.Fatal(err)
			}
			f.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(bin, "--root", dir, "gen", "--from", snap, "--no-cores")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
		})
	}
}

// buildBinary builds slurm-mig into dir, for benchmarks of whole processes.
func buildBinary(b *testing.B, dir string) string {
	bin := filepath.Join(dir, "slurm-mig")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
