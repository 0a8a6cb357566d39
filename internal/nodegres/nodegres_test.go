package nodegres

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/nodeload"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// records of whole GPUs need no host files: no cap minors, no Cores=.
var records = Records{Slurm: slurmconf.Version{Major: 24, Minor: 11, Micro: -1}, Gres: gresgen.Options{NoCores: true}}

type run struct {
	b   *Builder
	lib *nvmlfake.ShutdownCounter
}

// newRun builds for a node of the GPUs given, read through a fake NVML,
// with its files under an empty tree.
func newRun(t *testing.T, gpus ...nvmlfake.GPU) *run {
	t.Helper()
	fake, err := nvmlfake.New(&nvmlfake.Fixture{GPUs: gpus})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{lib: &nvmlfake.ShutdownCounter{Interface: fake}}
	root := hostfs.FS(t.TempDir())
	r.b = &Builder{
		Loader: &nodeload.Loader{Host: nodeload.NewHost(root), NVML: nodeload.NewNVML(func() nvml.Interface { return r.lib }),
			Hostname: func() (string, error) { return "gpu01.example", nil }, Timeout: time.Minute},
		Root:      root,
		Getenv:    func(string) string { return "" },
		WrittenBy: "slurm-mig test",
	}
	return r
}

var h100 = nvmlfake.GPU{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:07:00.0"}

// A run that prints keeps NVML to the end (the process exits moments
// later); one that writes a file hands it back before it waits on the
// lock and the disk, and writes the device state beside the file.
func TestWriteHandsNVMLBackPrintKeepsIt(t *testing.T) {
	r := newRun(t, h100)
	built, _, err := r.b.Render("", records, "gres.conf", false)
	if err != nil {
		t.Fatal(err)
	}
	data := built.Config.GresConf("test", false)
	res, err := r.b.Write(Output{File: "-"}, data, built)
	if err != nil {
		t.Fatal(err)
	}
	if r.lib.Shutdowns != 0 || string(res.Data) != string(data) || res.Report != nil {
		t.Errorf("printing: %d Shutdowns, returned %q and report %v", r.lib.Shutdowns, res.Data, res.Report)
	}

	dir := t.TempDir()
	out := Output{File: filepath.Join(dir, "gres.conf"), State: filepath.Join(dir, "devices.json")}
	if res, err = r.b.Write(out, data, built); err != nil {
		t.Fatal(err)
	}
	if r.lib.Shutdowns != 1 {
		t.Errorf("writing a file: %d Shutdowns, want 1", r.lib.Shutdowns)
	}
	if got, err := os.ReadFile(out.File); err != nil || !bytes.Equal(got, data) {
		t.Errorf("%s: %q, %v", out.File, got, err)
	}
	if _, err := os.Stat(out.State); err != nil {
		t.Errorf("device state: %v", err)
	}
	var printed bytes.Buffer
	if err := cmdline.PrintReport(&printed, res.Report, false); err != nil || res.Data != nil {
		t.Fatalf("report: %v; data %q beside it", err, res.Data)
	}
	if want := out.File + ": changed (1 device)\n" + out.State + ": changed (device state for slurm-mig env)\n"; printed.String() != want {
		t.Errorf("report %q, want %q", printed.String(), want)
	}
}

// node -o replaces the whole file: a line or key it does not write, or a
// file it cannot read, is refused with the fix naming the file, which
// the command line words (node --update sets Gres= among other keys).
func TestWriteNodeLineRefuses(t *testing.T) {
	r := newRun(t, h100)
	built, _, err := r.b.Render("", records, "node line", false)
	if err != nil {
		t.Fatal(err)
	}
	line, err := r.b.NodeLine(built, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		data, want string
		fix        advice.Fix
	}{
		{"NodeName=gpu01 CPUs=4 Gres=gpu:1\n", ":1: a CPUs= on the line of NodeName=gpu01", advice.NodeLineForeignLine},
		{"NodeName=gpu01\x00\n", ": binary data (NUL byte); not a Slurm config", advice.NodeLineUnreadable},
	} {
		path := filepath.Join(dir, "node.conf")
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := r.b.WriteNodeLine(Output{File: path, NoState: true}, built, line)
		var a *advice.Error
		if !errors.As(err, &a) || a.Fix != tc.fix || !slices.Equal(a.Args, []any{path}) || err.Error() != path+tc.want {
			t.Errorf("%q: %v (%+v); want %s%s with fix %v naming the file", tc.data, err, a, path, tc.want, tc.fix)
		}
		if got, _ := os.ReadFile(path); string(got) != tc.data {
			t.Errorf("%q: the file now holds %q", tc.data, got)
		}
	}
}

// After an NVML failure a node has no GPU; its empty config would take
// the node's GPUs away from Slurm: refused unless asked for.
func TestRenderRefusesEmpty(t *testing.T) {
	r := newRun(t)
	if _, _, err := r.b.Render("", records, "node line", false); err == nil || !strings.Contains(err.Error(), "refusing to write an empty node line") {
		t.Errorf("err = %v", err)
	}
	if _, warnings, err := r.b.Render("", records, "node line", true); err != nil || len(warnings) != 1 {
		t.Errorf("allowed: err %v, warnings %q", err, warnings)
	}
}

// Under a --root other than / the files are another machine's: this
// host's slurmd is not asked for its version.
func TestProbeSlurmOnlyAtSlash(t *testing.T) {
	r := newRun(t, h100)
	r.b.probeSlurm()
	if r.b.installed != nil {
		t.Errorf("probed this host's Slurm for a tree under %s", r.b.Root)
	}
}

// A device state that cannot be written, at its default place too, fails
// gen -o with nothing written: a node without its state fails every GPU
// task in env, while the hooks that ran gen would report success. The
// state here cannot be made (a MIG device without its cap minors), so the
// real default place is never touched.
func TestWriteFailsWithoutState(t *testing.T) {
	r := newRun(t, h100)
	built, _, err := r.b.Render("", records, "gres.conf", false)
	if err != nil {
		t.Fatal(err)
	}
	built.Node.GPUs[0].MigEnabled = true
	built.Node.GPUs[0].MigDevices = []model.MigDevice{{GPUInstanceID: 1, UUID: "MIG-a"}}
	conf := filepath.Join(t.TempDir(), "gres.conf")
	res, err := r.b.Write(Output{File: conf}, built.Config.GresConf("test", false), built)
	var a *advice.Error
	if !errors.As(err, &a) || a.Fix != advice.StateNotWritten {
		t.Errorf("err %v, want one with the fix for a node without a TaskProlog (advice.StateNotWritten)", err)
	}
	if _, err := os.Stat(conf); err == nil {
		t.Errorf("%s was written", conf)
	}
	if res != nil {
		t.Errorf("returned %+v", res)
	}
	// --no-state skips it.
	if _, err := r.b.Write(Output{File: conf, NoState: true}, built.Config.GresConf("test", false), built); err != nil {
		t.Errorf("--no-state: %v", err)
	}
}
