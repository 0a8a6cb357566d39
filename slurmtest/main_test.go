package slurmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// slurmMig is the slurm-mig binary built from ../cmd/slurm-mig: the tests
// run the program users run, not the packages behind it.
var slurmMig string

// What the tests proved, for the summary line.
var (
	parsedConfigs    atomic.Int64 // gres.conf + node line pairs slurmd -G read cleanly
	clusterScenarios atomic.Int64 // clusters that reached IDLE and ran srun per type
	staleDrains      atomic.Int64 // stale slurm.conf that drained the node as expected
	configlessNodes  atomic.Int64 // slurmd that fetched merge's files and registered with their own devices
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "slurmtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	slurmMig = filepath.Join(dir, "slurm-mig")
	// go test puts its own go first on PATH.
	build := exec.Command("go", "build", "-o", slurmMig, "./cmd/slurm-mig")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building slurm-mig: %v\n%s", err, out)
		return 1
	}

	code := m.Run()
	if n := clusterScenarios.Load(); n > 0 || parsedConfigs.Load() > 0 || configlessNodes.Load() > 0 {
		Announce("slurmtest: cluster scenarios: %d (IDLE, Gres= as generated, srun per type); slurmd -G configs: %d; stale slurm.conf drained: %d; configless nodes from merge: %d",
			n, parsedConfigs.Load(), staleDrains.Load(), configlessNodes.Load())
	}
	return code
}
