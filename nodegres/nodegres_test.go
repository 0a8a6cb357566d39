package nodegres

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/drift"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/kongrun"
	"github.com/slurm-mig/slurm-mig/internal/nvmlfake"
	"github.com/slurm-mig/slurm-mig/nodeload"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// records of whole GPUs need no host files: no cap minors, no Cores=.
var records = Records{SlurmVersion: "24.11", Gres: gresgen.Options{NoCores: true}}

type run struct {
	b        *Builder
	lib      *nvmlfake.ShutdownCounter
	stdout   bytes.Buffer
	warnings []string
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
	warn := func(w string) { r.warnings = append(r.warnings, w) }
	r.b = &Builder{
		Loader: &nodeload.Loader{Host: nodeload.NewHost(root), NVML: nodeload.NewNVML(func() nvml.Interface { return r.lib }),
			Hostname: func() (string, error) { return "gpu01.example", nil }, Timeout: time.Minute, Warn: warn},
		Root:      root,
		Getenv:    func(string) string { return "" },
		WrittenBy: "slurm-mig test",
		Stdout:    &r.stdout,
		Warn:      warn,
	}
	r.b.Print = func(write func(w io.Writer) error) error { return kongrun.Print(&r.stdout, write) }
	return r
}

var h100 = nvmlfake.GPU{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:07:00.0"}

// A run that prints keeps NVML to the end (the process exits moments
// later); one that writes a file hands it back before it waits on the
// lock and the disk, and writes the device state beside the file.
func TestWriteHandsNVMLBackPrintKeepsIt(t *testing.T) {
	r := newRun(t, h100)
	built, err := r.b.Render("", records, "gres.conf", false)
	if err != nil {
		t.Fatal(err)
	}
	data := built.Config.GresConf("test", false)
	if err := r.b.Write(Output{File: "-"}, data, built); err != nil {
		t.Fatal(err)
	}
	if r.lib.Shutdowns != 0 || r.stdout.String() != string(data) {
		t.Errorf("printing: %d Shutdowns, printed %q", r.lib.Shutdowns, r.stdout.String())
	}

	dir := t.TempDir()
	out := Output{File: filepath.Join(dir, "gres.conf"), State: filepath.Join(dir, "devices.json")}
	r.stdout.Reset()
	if err := r.b.Write(out, data, built); err != nil {
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
	if want := out.File + ": changed (1 device)\n" + out.State + ": changed (device state for slurm-mig env)\n"; r.stdout.String() != want {
		t.Errorf("report %q, want %q", r.stdout.String(), want)
	}
}

func TestWriteRefusals(t *testing.T) {
	r := newRun(t, h100)
	built, err := r.b.Render("", records, "gres.conf", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []Output{{Backup: true}, {File: "-", JSON: true}} {
		err := r.b.Write(out, []byte("x\n"), built)
		if want := "--backup and --json go with -o FILE (or node --update)"; err == nil || err.Error() != want {
			t.Errorf("%+v: err %v, want %q", out, err, want)
		}
	}
	if r.stdout.Len() != 0 {
		t.Errorf("a refusal printed %q", r.stdout.String())
	}
}

// After an NVML failure a node has no GPU; its empty config would take
// the node's GPUs away from Slurm: refused unless asked for.
func TestRenderRefusesEmpty(t *testing.T) {
	r := newRun(t)
	if _, err := r.b.Render("", records, "node line", false); err == nil || !strings.Contains(err.Error(), "refusing to write an empty node line") {
		t.Errorf("err = %v", err)
	}
	if _, err := r.b.Render("", records, "node line", true); err != nil || len(r.warnings) != 1 {
		t.Errorf("allowed: err %v, warnings %q", err, r.warnings)
	}
}

func TestDiffRefusesTwoStdin(t *testing.T) {
	r := newRun(t, h100)
	_, err := r.b.Diff("", records, "", drift.Inputs{GresConf: slurmconf.Stdin, SlurmConf: slurmconf.Stdin})
	if err == nil || !strings.Contains(err.Error(), "cannot both read standard input") {
		t.Errorf("err = %v", err)
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
	built, err := r.b.Render("", records, "gres.conf", false)
	if err != nil {
		t.Fatal(err)
	}
	built.Node.GPUs[0].MigEnabled = true
	built.Node.GPUs[0].MigDevices = []discover.MigDevice{{GPUInstanceID: 1, UUID: "MIG-a"}}
	conf := filepath.Join(t.TempDir(), "gres.conf")
	err = r.b.Write(Output{File: conf}, built.Config.GresConf("test", false), built)
	if err == nil || !strings.Contains(err.Error(), "--no-state") {
		t.Errorf("err %v, want an error that names --no-state", err)
	}
	if _, err := os.Stat(conf); err == nil {
		t.Errorf("%s was written", conf)
	}
	if r.stdout.Len() != 0 || len(r.warnings) != 0 {
		t.Errorf("printed %q, warned %q", r.stdout.String(), r.warnings)
	}
	// --no-state skips it.
	if err := r.b.Write(Output{File: conf, NoState: true}, built.Config.GresConf("test", false), built); err != nil {
		t.Errorf("--no-state: %v", err)
	}
}
