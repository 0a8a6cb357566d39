package gresgen

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/slurm-mig/slurm-mig/capmap"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/nodeload/nvmlread"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// BenchmarkDiscoverRender runs what `slurm-mig gen` does after NVML Init:
// discovery through the fake NVML, cap minors from the real driver-580
// mig-minors (it lists 32 GPUs), records, text. Sizes are MIG devices.
func BenchmarkDiscoverRender(b *testing.B) {
	minors := fixture.Read(b, fixture.RealMigMinors)
	root := b.TempDir()
	dir := filepath.Join(root, "proc/driver/nvidia-caps")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mig-minors"), minors, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct{ gpus, migs int }{{8, 1}, {8, 7}, {32, 7}} {
		b.Run(fmt.Sprintf("devices=%d", size.gpus*size.migs), func(b *testing.B) {
			fixture := synth.Fixture(size.gpus, size.migs)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				// Building the fake, and collecting it, is the fake's cost,
				// not discovery's.
				b.StopTimer()
				lib, err := nvmlfake.New(fixture)
				if err != nil {
					b.Fatal(err)
				}
				lib.Init()
				runtime.GC()
				b.StartTimer()
				node, _, err := nvmlread.Read(lib, "bench01", hostfs.FS(root))
				if err != nil {
					b.Fatal(err)
				}
				if err := capmap.Resolve(node, func() (*capmap.Map, error) { return capmap.Load(root) }); err != nil {
					b.Fatal(err)
				}
				recs, err := Records(node, Options{NodeName: "bench01"})
				if err != nil {
					b.Fatal(err)
				}
				if err := slurmconf.WriteGresConf(io.Discard, []string{"bench"}, recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
