package gresgen_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/capmap"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestOutsideProgram builds a program of another module
// (testdata/outside) that calls capmap, gresgen and slurmconf, as a site's
// own tool would, in a Go workspace beside this module and with no
// network, and checks that it prints the demo node's records.
func TestOutsideProgram(t *testing.T) {
	root := fixture.Root(t)
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{"main.go": "main.go", "go.mod.txt": "go.mod"} {
		data, err := os.ReadFile(filepath.Join(root, "gresgen/testdata/outside", from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, to), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	work := "go 1.26\n\nuse (\n\t" + root + "\n\t./outside\n)\n"
	if err := os.WriteFile(filepath.Join(dir, "go.work"), []byte(work), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "outside-bin")
	build := exec.Command("go", "build", "-o", bin, ".") // the go that runs this test, on PATH
	build.Dir = outside
	build.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOFLAGS=", "GOPROXY=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a program outside the module: %v\n%s", err, out)
	}
	snap, demoRoot := filepath.Join(root, "testdata/demo/snapshot.json"), filepath.Join(root, "testdata/demo/root")
	got, err := exec.Command(bin, snap, demoRoot).CombinedOutput()
	if err != nil {
		t.Fatalf("outside: %v\n%s", err, got)
	}

	node, err := gresgen.ReadSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := capmap.Resolve(node, func() (*capmap.Map, error) { return capmap.Load(demoRoot) }); err != nil {
		t.Fatal(err)
	}
	recs, err := gresgen.Records(node, gresgen.Options{NodeName: "demo", NoCores: true})
	if err != nil {
		t.Fatal(err)
	}
	want := slurmconf.FormatGresConf(nil, recs)
	if string(got) != want || !strings.Contains(want, "/dev/nvidia-caps/nvidia-cap") {
		t.Errorf("outside printed:\n%s\nwant the demo node's MIG records:\n%s", got, want)
	}
}
