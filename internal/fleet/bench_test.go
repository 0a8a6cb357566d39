package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// BenchmarkMerge reads the gen fragments of 100, 1,000 and 10,000 nodes
// of a synthetic fleet (internal/testkit/synth: four layouts, 8 to 32 lines a
// node), one file a node, and renders the cluster gres.conf and the
// slurm.conf lines: what `slurm-mig merge DIR` does after start-up.
func BenchmarkMerge(b *testing.B) {
	for _, nodes := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			dir := writeFleet(b, nodes)
			b.ResetTimer()
			for b.Loop() {
				files, err := Fragments([]string{dir}, "")
				if err != nil {
					b.Fatal(err)
				}
				f, err := Read(files)
				if err != nil {
					b.Fatal(err)
				}
				if f.Nodes() != nodes || len(f.Layouts) != synth.FleetLayouts {
					b.Fatalf("%d nodes in %d layouts, want %d in %d", f.Nodes(), len(f.Layouts), nodes, synth.FleetLayouts)
				}
				f.GresConf("bench")
				f.NodeLines()
			}
		})
	}
}

// writeFleet writes the fragments of a synthetic fleet into a temporary
// directory, one file a node, as gen writes them.
func writeFleet(tb testing.TB, nodes int) string {
	tb.Helper()
	dir := tb.TempDir()
	var b strings.Builder
	for i := range nodes {
		b.Reset()
		if err := synth.WriteFleetFragment(&b, i, "/dev"); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, synth.ClusterNode(i)+".conf"), []byte(b.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}
