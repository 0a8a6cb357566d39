package slurmconf_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// BenchmarkDiffCluster compares one node's generated records with a
// cluster-wide gres.conf, the file read and parsed every time, as
// `slurm-mig diff` does. The node's lines are the last in the file.
func BenchmarkDiffCluster(b *testing.B) {
	for _, nodes := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "gres.conf")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := synth.WriteClusterGresConf(f, nodes); err != nil {
				b.Fatal(err)
			}
			f.Close()
			node := synth.ClusterNode(nodes - 1)
			recs, err := gresgen.Records(synth.Snapshot(4, 7), gresgen.Options{NodeName: node})
			if err != nil {
				b.Fatal(err)
			}
			generated, err := slurmconf.SplitUnits(recs)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				conf, err := slurmconf.ReadGresConf(path, node)
				if err != nil {
					b.Fatal(err)
				}
				current, err := slurmconf.SplitUnits(conf.GresRecords())
				if err != nil {
					b.Fatal(err)
				}
				if d := slurmconf.DiffUnits(current, generated); !d.Same() {
					b.Fatalf("the synthetic cluster file disagrees with its node: %+v", d)
				}
			}
		})
	}
}
