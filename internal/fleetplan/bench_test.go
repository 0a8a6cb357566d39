package fleetplan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// BenchmarkMake plans a synthetic fleet (synth.PlanSnapshot: eight H100s
// a node, with the real profile table) in process: reading the
// snapshots, planning each node and grouping the lines.
func BenchmarkMake(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		b.Run(fmt.Sprint(nodes), func(b *testing.B) {
			dir := b.TempDir()
			paths := make([]string, nodes)
			for i := range nodes {
				f, err := os.Create(filepath.Join(dir, synth.ClusterNode(i)+".json"))
				if err != nil {
					b.Fatal(err)
				}
				if err := snapshot.Write(f, synth.PlanSnapshot(i)); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				paths[i] = f.Name()
			}
			in := inputs(b, paths, nodes)
			b.ResetTimer()
			for range b.N {
				f, warnings, err := Make(in)
				if err != nil || len(warnings) != 0 {
					b.Fatal(err, warnings)
				}
				if len(f.NodeLines) != 4 {
					b.Fatalf("%d node lines, want one a layout (4)", len(f.NodeLines))
				}
			}
		})
	}
}

// inputs are Make's inputs for the synthetic fleet: its config, its
// assignment, and nodes named by their short hostnames.
func inputs(tb testing.TB, paths []string, nodes int) Inputs {
	tb.Helper()
	dir := tb.TempDir()
	config := filepath.Join(dir, "mig.yaml")
	assign := filepath.Join(dir, "assign.txt")
	var a strings.Builder
	if err := synth.WritePlanAssign(&a, nodes); err != nil {
		tb.Fatal(err)
	}
	for path, data := range map[string]string{config: synth.PlanConfig, assign: a.String()} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cfg, err := migplan.ReadConfig(config)
	if err != nil {
		tb.Fatal(err)
	}
	as, err := NewAssign(cfg, synth.PlanDefault)
	if err != nil {
		tb.Fatal(err)
	}
	if err := as.Read(assign); err != nil {
		tb.Fatal(err)
	}
	return Inputs{Snapshots: paths, Assign: as,
		Name: func(n *model.Node) (string, error) { short, _, _ := strings.Cut(n.Hostname, "."); return short, nil }}
}
