package grescheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// BenchmarkCheckCluster checks every node of the cluster in
// $SLURM_MIG_BENCH_CLUSTER (gres.conf and slurm.conf, as
// scripts/bench-check.sh makes them).
func BenchmarkCheckCluster(b *testing.B) {
	dir := os.Getenv("SLURM_MIG_BENCH_CLUSTER")
	if dir == "" {
		b.Skip("SLURM_MIG_BENCH_CLUSTER names no cluster")
	}
	in := Inputs{GresConf: filepath.Join(dir, "gres.conf"), SlurmConf: filepath.Join(dir, "slurm.conf"), Version: slurmconf.Version{Major: 22, Minor: 5, Micro: 8}}
	for i := 0; i < b.N; i++ {
		if _, err := Check(in); err != nil {
			b.Fatal(err)
		}
	}
}
