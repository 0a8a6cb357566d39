package slurmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testtools"
	"github.com/slurm-mig/slurm-mig/jobenv"
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

// Require skips t when one of the Slurm commands is not on PATH, or fails
// it in CI.
func Require(t testing.TB, commands ...string) {
	t.Helper()
	for _, c := range commands {
		testtools.Require(t, testtools.SlurmPackages, c)
	}
}

// RequireRoot skips t when not run as root, or fails it in CI.
func RequireRoot(t testing.TB) {
	t.Helper()
	testtools.RequireRoot(t, "mknod of device files, slurmd and slurmctld run as SlurmUser=root")
}

// Announce prints one line of the suite's findings. `make test` runs this
// package with -v and filters the per-test lines, so the line shows in
// CI's output; a plain `go test` hides it with the rest of a passing
// package's output.
func Announce(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "slurmtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Every slurm-mig the tests run writes its device state and claims
	// here: gen -o and node -o write the state at $SLURM_MIG_STATE, else at
	// /run/slurm-mig/devices.json, and these tests run as root, where
	// that is the device state of a live GPU node's jobs. (Slurm's
	// commands get no SLURM_* variable of ours: slurmEnv.)
	os.Setenv(jobenv.StatePathEnv, filepath.Join(dir, "devices.json"))
	os.Setenv("SLURM_MIG_CLAIMS", filepath.Join(dir, "claims"))
	slurmMig = filepath.Join(dir, "slurm-mig")
	// go test puts its own go first on PATH.
	build := exec.Command("go", "build", "-o", slurmMig, "./cmd/slurm-mig")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building slurm-mig: %v\n%s", err, out)
		return 1
	}

	if err := readRelease(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if n := clusterScenarios.Load(); n > 0 || parsedConfigs.Load() > 0 || configlessNodes.Load() > 0 {
		Announce("slurmtest: Slurm %s (slurmd -V)", release)
		Announce("slurmtest: cluster scenarios: %d (IDLE, Gres= as generated, srun per type); slurmd -G configs: %d; stale slurm.conf drained: %d; configless nodes from merge: %d",
			n, parsedConfigs.Load(), staleDrains.Load(), configlessNodes.Load())
	}
	return code
}
