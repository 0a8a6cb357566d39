package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/slurm-mig/slurm-mig/internal/nvmlfake"
)

var update = flag.Bool("update", false, "rewrite the golden output in testdata/script/*.txtar (then read the diff)")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"slurm-mig": func() {
			os.Exit(run(os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr, newNVML: testNVML, hostname: testHostname}))
		},
	})
}

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
	real, err := filepath.Abs("../../../shared/fixtures/real/h100-driver-580")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(real); err != nil {
		t.Fatalf("the real H100 fixtures are missing (%v): clone the repository beside shared/", err)
	}
	demo, err := filepath.Abs("../../testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "../../testdata/script",
		UpdateScripts: *update,
		Setup: func(e *testscript.Env) error {
			e.Setenv("REAL", real)
			e.Setenv("DEMO", demo)
			e.Setenv("TEST_HOSTNAME", "node01.cluster.test")
			return nil
		},
	})
}
