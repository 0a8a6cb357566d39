package nodeload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/nodeload/nvmlread"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
)

// loader reads lib with the host files of root.
func loader(t *testing.T, lib nvml.Interface, root string) *Loader {
	t.Helper()
	return &Loader{
		Host:     NewHost(hostfs.FS(root)),
		NVML:     NewNVML(func() nvml.Interface { return lib }),
		Hostname: func() (string, error) { return "n1.example", nil },
		Timeout:  time.Minute,
	}
}

// After a failed Init nothing else may be called: the real library would
// crash the process. A bare mock panics on any call but Init. A missing
// library carries the fix: a snapshot will do.
func TestInitFailureMakesNoOtherCall(t *testing.T) {
	for ret, want := range map[nvml.Return]string{
		nvml.ERROR_LIBRARY_NOT_FOUND: "nvml: initialising NVML: libnvidia-ml.so.1 not found; is the NVIDIA driver installed?",
		nvml.ERROR_DRIVER_NOT_LOADED: "nvml: initialising NVML: the NVIDIA kernel driver is not loaded",
		nvml.ERROR_NO_PERMISSION:     "nvml: initialising NVML: no permission to open the GPU device files (/dev/nvidiactl)",
		nvml.ERROR_UNKNOWN:           "nvml: initialising NVML: ERROR_UNKNOWN",
	} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		l := loader(t, lib, t.TempDir())
		_, _, err := l.Load("")
		if err == nil || err.Error() != want {
			t.Errorf("Init %v: err = %v, want %q", ret, err, want)
		}
		var nerr *nvmlread.NVMLError
		if !errors.As(err, &nerr) || nerr.Ret != ret {
			t.Errorf("Init %v: the error does not carry the return code", ret)
		}
		var a *advice.Error
		if got, want := errors.As(err, &a) && a.Fix == advice.Snapshot, ret == nvml.ERROR_LIBRARY_NOT_FOUND; got != want {
			t.Errorf("Init %v: the error carries advice.Snapshot: %v, want %v", ret, got, want)
		}
		l.NVML.Release() // no Shutdown after a failed Init: the mock would panic
		if n := len(lib.InitCalls()); n != 1 {
			t.Errorf("Init called %d times", n)
		}
	}
}

// The library is shut down only once a read has finished with it, and
// only once: a run that never read it (or only prints) leaves it to exit.
func TestReleaseAfterRead(t *testing.T) {
	fake, err := nvmlfake.New(&nvmlfake.Fixture{GPUs: []nvmlfake.GPU{{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3"}}})
	if err != nil {
		t.Fatal(err)
	}
	lib := &nvmlfake.ShutdownCounter{Interface: fake}
	l := loader(t, lib, t.TempDir())
	l.NVML.Start()
	l.NVML.Release()
	if lib.Shutdowns != 0 {
		t.Fatalf("Release before any read shut NVML down")
	}
	node, _, err := l.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if node.Hostname != "n1.example" || len(node.GPUs) != 1 {
		t.Errorf("read %+v", node)
	}
	l.NVML.Release()
	l.NVML.Release()
	if lib.Shutdowns != 1 {
		t.Errorf("Shutdown called %d times after a read, want 1", lib.Shutdowns)
	}
}

// A hung driver cannot hold the run: Load gives up at the deadline.
func TestTimeout(t *testing.T) {
	fake, err := nvmlfake.New(&nvmlfake.Fixture{Delays: map[string]string{"DeviceGetCount": "5s"}})
	if err != nil {
		t.Fatal(err)
	}
	l := loader(t, fake, t.TempDir())
	l.Timeout = 50 * time.Millisecond
	_, _, err = l.Load("")
	if want := "nvml: no answer within 50ms (a hung GPU or driver?); nothing was written"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// What the model goes without comes back as warnings: NVML's
// refinements in GPU order, then the missing CPU topology.
func TestWarnings(t *testing.T) {
	fake, err := nvmlfake.New(&nvmlfake.Fixture{GPUs: []nvmlfake.GPU{
		{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:07:00.0", Errors: map[string]string{"GetCpuAffinity": "ERROR_UNKNOWN"}},
		{Minor: 1, UUID: "GPU-00000001-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:08:00.0", CPUs: "0-3"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l := loader(t, fake, t.TempDir())
	node, warned, err := l.Load("")
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for _, w := range append(warned, l.Cores(node)...) {
		warnings = append(warnings, w.Error())
	}
	if len(warnings) != 2 ||
		warnings[0] != "GPU 0 (minor 0, 00000000:07:00.0): reading its CPU affinity: ERROR_UNKNOWN; its Cores= is left out" ||
		!strings.HasPrefix(warnings[1], "CPU topology: topology: ") || !strings.HasSuffix(warnings[1], "; Cores= left out") {
		t.Errorf("warnings:\n%s", strings.Join(warnings, "\n"))
	}
	if err := l.Hardware(node); err == nil {
		t.Error("Hardware without the CPU topology gave no error")
	}
}

func TestNodeName(t *testing.T) {
	l := loader(t, nil, t.TempDir())
	name, err := l.NodeName(&model.Node{Hostname: "gpu01.cluster.example", Snapshot: "s.json"}, "", false)
	if err != nil || name != "gpu01" {
		t.Errorf("snapshot host: %q, %v", name, err)
	}
	name, err = l.NodeName(&model.Node{}, "", false)
	if err != nil || name != "n1" {
		t.Errorf("NVML's node, no host recorded: %q, %v", name, err)
	}
	// A snapshot's node is another host's: this one's name is not its.
	if _, err := l.NodeName(&model.Node{Snapshot: "s.json"}, "", false); !hasFix(err, advice.SnapshotNodeName) ||
		err.Error() != "s.json names no host (no hostname), and this host's name is not that node's" {
		t.Errorf("snapshot without a host: err = %v", err)
	}
	if name, err := l.NodeName(&model.Node{Snapshot: "s.json"}, "gpu07", false); err != nil || name != "gpu07" {
		t.Errorf("snapshot without a host, --node-name: %q, %v", name, err)
	}
	if name, err := l.NodeName(&model.Node{Hostname: "n1"}, "gpu07", true); err != nil || name != "" {
		t.Errorf("none asked for: %q, %v", name, err)
	}
	l.Hostname = func() (string, error) { return "", errors.New("no name") }
	if _, err := l.NodeName(&model.Node{}, "", false); !hasFix(err, advice.NodeName) || err.Error() != "this host's name is unknown (no name)" {
		t.Errorf("unknown host: err = %v", err)
	}
	if _, err := l.NodeName(&model.Node{Hostname: "bad#host.cluster"}, "", false); !hasFix(err, advice.NodeName) ||
		!strings.HasPrefix(err.Error(), `host "bad#host.cluster": node name "bad#host": `) {
		t.Errorf("host name that is no node name: err = %v", err)
	}
}

// hasFix reports whether err carries the fix.
func hasFix(err error, fix advice.Fix) bool {
	var a *advice.Error
	return errors.As(err, &a) && a.Fix == fix
}

// A node read through NVML is checked as a snapshot is: a UUID not in
// NVML's form would reach the device state, and env would refuse every
// task given it, or hand it to CUDA.
func TestNVMLNodeChecked(t *testing.T) {
	fake, err := nvmlfake.New(&nvmlfake.Fixture{GPUs: []nvmlfake.GPU{{Minor: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "garbage"}}})
	if err != nil {
		t.Fatal(err)
	}
	l := loader(t, fake, t.TempDir())
	_, _, err = l.Load("")
	if want := `GPU 0 (minor 0): uuid "garbage" is not a GPU UUID`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want %s...", err, want)
	}
}

// A snapshot's node is another host's: at the default root, this host,
// the cores it lacks are a warning, and the hardware it lacks an error,
// each with its fix (a snapshot taken on the node, or going without),
// which the command line words. Under an explicit --root, the node's own
// tree, they are read from that tree's CPU topology (here there is none,
// and that is what is said).
func TestSnapshotWithoutCoresOrHardware(t *testing.T) {
	l := loader(t, nil, "/")
	node := &model.Node{Snapshot: "s.json", GPUs: []model.GPU{{Index: 0, CPUAffinity: "0-7"}, {Index: 1, CPUAffinity: "8-15", Cores: "4-7"}}}
	warned := l.Cores(node)
	if want := "s.json has no cores for GPU 0: Cores= is left out for them, as this host's CPU topology is not that node's"; len(warned) != 1 || !hasFix(warned[0], advice.SnapshotCores) || warned[0].Error() != want {
		t.Errorf("warnings %q; want one, %q with advice.SnapshotCores", warned, want)
	}
	err := l.Hardware(node)
	if want := "s.json has no hardware (CPUs, sockets, cores, threads, memory): this host's are not that node's"; !hasFix(err, advice.SnapshotHardware) || err.Error() != want {
		t.Errorf("Hardware: %v; want %q with advice.SnapshotHardware", err, want)
	}

	tree := loader(t, nil, t.TempDir())
	warned = tree.Cores(node)
	if len(warned) != 1 || !strings.HasPrefix(warned[0].Error(), "CPU topology: topology: open ") {
		t.Errorf("under a --root tree: warnings %q; want the tree's CPU topology read", warned)
	}
	if err := tree.Hardware(node); err == nil || !strings.HasPrefix(err.Error(), "CPU topology: topology: open ") {
		t.Errorf("under a --root tree: Hardware: %v; want the tree's CPU topology read", err)
	}
}

// vanishing is NVML where the GPU's MIG devices are gone once discovery
// has walked their handles: a MIG layout changed between the two reads.
type vanishing struct {
	nvml.Interface
	walked *int
}

func (v vanishing) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	d, ret := v.Interface.DeviceGetHandleByIndex(i)
	return vanishingDevice{d, v.walked}, ret
}

type vanishingDevice struct {
	nvml.Device
	walked *int
}

func (d vanishingDevice) GetMigDeviceHandleByIndex(j int) (nvml.Device, nvml.Return) {
	max, _ := d.Device.GetMaxMigDeviceCount()
	if *d.walked++; *d.walked > max {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return d.Device.GetMigDeviceHandleByIndex(j)
}

// A snapshot whose MIG device vanished before its processes were read
// warns of it, and carries what would help apart: the warning reads whole
// without it.
func TestSnapshotWarningCarriesTheHint(t *testing.T) {
	fake, err := nvmlfake.New(&nvmlfake.Fixture{GPUs: []nvmlfake.GPU{{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000",
		Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:07:00.0", MigMode: "enabled",
		MigDevices: []nvmlfake.MigDevice{{GI: 7, Profile: "1g.10gb", UUID: "MIG-00000000-0000-4000-8000-000000000001"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	caps := filepath.Join(root, "proc/driver/nvidia-caps")
	if err := os.MkdirAll(caps, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(caps, "mig-minors"), []byte("config 1\nmonitor 2\ngpu0/gi7/access 84\ngpu0/gi7/ci0/access 85\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, warned, err := loader(t, vanishing{fake, new(int)}, root).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := "nvml: GPU 0 (minor 0, 00000000:07:00.0): reading compute processes: a MIG device vanished since discovery (is the MIG layout being changed?); the snapshot records no compute processes"
	for _, w := range warned {
		if w.Error() != want {
			continue
		}
		if h := (advice.Hinter)(nil); !errors.As(w, &h) || h.Hint() != "; run again when it is done" {
			t.Errorf("%v: want the hint %q apart", w, "; run again when it is done")
		}
		return
	}
	t.Errorf("warnings %q; want %q", warned, want)
}
