package nodeload

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/nvmlfake"
	"github.com/slurm-mig/slurm-mig/nvmlread"
)

// loader reads lib with the host files of root and collects its warnings.
func loader(t *testing.T, lib nvml.Interface, root string, warnings *[]string) *Loader {
	t.Helper()
	return &Loader{
		Host:     NewHost(hostfs.FS(root)),
		NVML:     NewNVML(func() nvml.Interface { return lib }),
		Hostname: func() (string, error) { return "n1.example", nil },
		Timeout:  time.Minute,
		Warn:     func(w string) { *warnings = append(*warnings, w) },
	}
}

// After a failed Init nothing else may be called: the real library would
// crash the process. A bare mock panics on any call but Init.
func TestInitFailureMakesNoOtherCall(t *testing.T) {
	for ret, want := range map[nvml.Return]string{
		nvml.ERROR_LIBRARY_NOT_FOUND: "nvml: initialising NVML: libnvidia-ml.so.1 not found; is the NVIDIA driver installed? (use --from SNAPSHOT on hosts without it)",
		nvml.ERROR_DRIVER_NOT_LOADED: "nvml: initialising NVML: the NVIDIA kernel driver is not loaded",
		nvml.ERROR_NO_PERMISSION:     "nvml: initialising NVML: no permission to open the GPU device files (/dev/nvidiactl)",
		nvml.ERROR_UNKNOWN:           "nvml: initialising NVML: ERROR_UNKNOWN",
	} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		var warnings []string
		l := loader(t, lib, t.TempDir(), &warnings)
		_, err := l.Load("")
		if err == nil || err.Error() != want {
			t.Errorf("Init %v: err = %v, want %q", ret, err, want)
		}
		var nerr *nvmlread.NVMLError
		if !errors.As(err, &nerr) || nerr.Ret != ret {
			t.Errorf("Init %v: the error does not carry the return code", ret)
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
	var warnings []string
	l := loader(t, lib, t.TempDir(), &warnings)
	l.NVML.Start()
	l.NVML.Release()
	if lib.Shutdowns != 0 {
		t.Fatalf("Release before any read shut NVML down")
	}
	node, err := l.Load("")
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
	var warnings []string
	l := loader(t, fake, t.TempDir(), &warnings)
	l.Timeout = 50 * time.Millisecond
	_, err = l.Load("")
	if want := "nvml: no answer within 50ms (a hung GPU or driver?); nothing was written"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// What the model goes without reaches the one warning channel: NVML's
// refinements in GPU order, then the missing CPU topology.
func TestWarnings(t *testing.T) {
	fake, err := nvmlfake.New(&nvmlfake.Fixture{GPUs: []nvmlfake.GPU{
		{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:07:00.0", Errors: map[string]string{"GetCpuAffinity": "ERROR_UNKNOWN"}},
		{Minor: 1, UUID: "GPU-00000001-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:08:00.0", CPUs: "0-3"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	l := loader(t, fake, t.TempDir(), &warnings)
	node, err := l.Load("")
	if err != nil {
		t.Fatal(err)
	}
	l.Cores(node)
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
	var warnings []string
	l := loader(t, nil, t.TempDir(), &warnings)
	name, err := l.NodeName(&discover.Node{Hostname: "gpu01.cluster.example", Snapshot: "s.json"}, "", false)
	if err != nil || name != "gpu01" {
		t.Errorf("snapshot host: %q, %v", name, err)
	}
	name, err = l.NodeName(&discover.Node{}, "", false)
	if err != nil || name != "n1" {
		t.Errorf("NVML's node, no host recorded: %q, %v", name, err)
	}
	// A snapshot's node is another host's: this one's name is not its.
	if _, err := l.NodeName(&discover.Node{Snapshot: "s.json"}, "", false); err == nil ||
		err.Error() != "s.json names no host (no hostname), and this host's name is not that node's: pass --node-name" {
		t.Errorf("snapshot without a host: err = %v", err)
	}
	if name, err := l.NodeName(&discover.Node{Snapshot: "s.json"}, "gpu07", false); err != nil || name != "gpu07" {
		t.Errorf("snapshot without a host, --node-name: %q, %v", name, err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	l.Hostname = func() (string, error) { return "", errors.New("no name") }
	if _, err := l.NodeName(&discover.Node{}, "", false); err == nil || !strings.Contains(err.Error(), "pass --node-name") {
		t.Errorf("unknown host: err = %v", err)
	}
}

// A node read through NVML is checked as a snapshot is: a UUID not in
// NVML's form would reach the device state, and env would refuse every
// task given it, or hand it to CUDA.
func TestNVMLNodeChecked(t *testing.T) {
	fake, err := nvmlfake.New(&nvmlfake.Fixture{GPUs: []nvmlfake.GPU{{Minor: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "garbage"}}})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	l := loader(t, fake, t.TempDir(), &warnings)
	_, err = l.Load("")
	if want := `GPU 0 (minor 0): uuid "garbage" is not a GPU UUID`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want %s...", err, want)
	}
}
