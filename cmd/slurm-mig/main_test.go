package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/slurm-mig/slurm-mig/internal/fixture"
	"github.com/slurm-mig/slurm-mig/internal/nvmlfake"
	"github.com/slurm-mig/slurm-mig/jobenv"
	"github.com/slurm-mig/slurm-mig/topology"
)

// Exit statuses the tests expect (run's doc).
const (
	exitOK    = 0
	exitError = 2
)

var update = flag.Bool("update", false, "rewrite the golden output in testdata/script/*.txtar (then read the diff)")

func TestMain(m *testing.M) {
	testscript.Main(stateInTemp{m}, map[string]func(){
		"slurm-mig": func() {
			os.Exit(run(os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr, newNVML: testNVML, hostname: testHostname}))
		},
	})
}

// stateInTemp runs the tests with the device state that gen -o writes
// ($SLURM_MIG_STATE) and the claims of free and exec ($SLURM_MIG_CLAIMS)
// redirected into a temporary directory, so that no test writes
// /run/slurm-mig on the machine that runs it, whatever a test forgets to
// pass. The binaries the tests run inherit both.
type stateInTemp struct{ m *testing.M }

func (s stateInTemp) Run() int {
	dir, err := os.MkdirTemp("", "slurm-mig-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777) // TestPrivileges writes it as nobody
	os.Setenv(jobenv.StatePathEnv, filepath.Join(dir, "devices.json"))
	os.Setenv(claimsEnv, filepath.Join(dir, "claims"))
	return s.m.Run()
}

// claimsEnv names the claims directory of free and exec (--claims).
const claimsEnv = "SLURM_MIG_CLAIMS"

// testNVML is the library the scripts' slurm-mig sees. SLURM_MIG_FAKE_NVML
// names an nvmlfake fixture; without it the real go-nvml library is asked
// to load a library that does not exist, so the real "NVML missing" path
// runs and no test ever touches a GPU of the machine running it.
func testNVML() nvml.Interface {
	if path := os.Getenv("SLURM_MIG_FAKE_NVML"); path != "" {
		lib, err := nvmlfake.Load(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test setup:", err)
			os.Exit(3)
		}
		return lib
	}
	return nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))
}

// testHostname stands in for os.Hostname: scripts set TEST_HOSTNAME, and
// an empty one makes the lookup fail.
func testHostname() (string, error) {
	if h := os.Getenv("TEST_HOSTNAME"); h != "" {
		return h, nil
	}
	return "", fmt.Errorf("hostname lookup failed (TEST_HOSTNAME unset)")
}

func TestScripts(t *testing.T) {
	real := fixture.Path(t, "real/h100-driver-580")
	demo := fixture.Path(t, "demo")
	scripts := filepath.Join(fixture.Root(t), "scripts")
	testscript.Run(t, testscript.Params{
		Dir:           fixture.Path(t, "script"),
		UpdateScripts: *update,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mksysfs": mksysfs,
		},
		Setup: func(e *testscript.Env) error {
			e.Setenv("REAL", real)
			e.Setenv("DEMO", demo)
			e.Setenv("SCRIPTS", scripts)
			e.Setenv("TEST_HOSTNAME", "node01.cluster.test")
			e.Setenv(jobenv.StatePathEnv, filepath.Join(e.WorkDir, "state/devices.json"))
			e.Setenv(claimsEnv, filepath.Join(e.WorkDir, "claims"))
			return nil
		},
	})
}

// mksysfs ROOT SOCKETS CORES THREADS [OFFLINE] writes a CPU topology under
// ROOT/sys and a /proc/meminfo, numbered as Intel servers number CPUs:
// thread 0 of every core first, socket by socket, then thread 1 (cpu0 and
// cpu<SOCKETS*CORES> are siblings). OFFLINE is a cpulist left out of
// "online".
func mksysfs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 || len(args) > 5 {
		ts.Fatalf("usage: mksysfs ROOT SOCKETS CORES THREADS [OFFLINE]")
	}
	var sockets, cores, threads int
	for i, p := range []*int{&sockets, &cores, &threads} {
		if _, err := fmt.Sscan(args[i+1], p); err != nil || *p < 1 {
			ts.Fatalf("mksysfs: bad count %q", args[i+1])
		}
	}
	offline := map[int]bool{}
	if len(args) == 5 {
		ids, err := topology.ParseCPUList(args[4])
		ts.Check(err)
		for _, id := range ids {
			offline[id] = true
		}
	}
	root := ts.MkAbs(args[0])
	write := func(path, data string) {
		ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
		ts.Check(os.WriteFile(path, []byte(data), 0o644))
	}
	cpuDir := filepath.Join(root, "sys/devices/system/cpu")
	perThread := sockets * cores
	var online []int
	for t := 0; t < threads; t++ {
		for s := 0; s < sockets; s++ {
			for c := 0; c < cores; c++ {
				id := t*perThread + s*cores + c
				var siblings []int
				for st := 0; st < threads; st++ {
					siblings = append(siblings, st*perThread+s*cores+c)
				}
				dir := filepath.Join(cpuDir, fmt.Sprintf("cpu%d/topology", id))
				write(filepath.Join(dir, "physical_package_id"), fmt.Sprintf("%d\n", s))
				write(filepath.Join(dir, "core_id"), fmt.Sprintf("%d\n", c))
				write(filepath.Join(dir, "die_id"), "0\n")
				write(filepath.Join(dir, "thread_siblings_list"), topology.FormatList(siblings)+"\n")
				if !offline[id] {
					online = append(online, id)
				}
			}
		}
	}
	sort.Ints(online)
	write(filepath.Join(cpuDir, "online"), topology.FormatList(online)+"\n")
	write(filepath.Join(root, "proc/meminfo"), "MemTotal:       527952396 kB\nMemFree:        500000000 kB\n")
}
