package nvmlread

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
)

// read reads lib with the host files of root, collecting the warnings.
func read(lib nvml.Interface, root string) (*model.Node, []string, error) {
	n, warned, err := Read(lib, "n1", hostfs.FS(root))
	var warnings []string
	for _, w := range warned {
		warnings = append(warnings, w.Error())
	}
	return n, warnings, err
}

// fake is an initialised fake library: Read's caller owns Init and
// Shutdown, and the fake refuses calls before Init as the real one would
// crash.
func fake(t *testing.T, f *nvmlfake.Fixture) nvml.Interface {
	t.Helper()
	lib, err := nvmlfake.New(f)
	if err != nil {
		t.Fatal(err)
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Fatalf("Init: %v", ret)
	}
	t.Cleanup(func() { lib.Shutdown() })
	return lib
}

func TestRead(t *testing.T) {
	lib := fake(t, &nvmlfake.Fixture{DriverVersion: "580.159.04", GPUs: []nvmlfake.GPU{
		{Minor: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:00:06.0", MemoryMiB: 81559, CPUs: "0-15"},
		{Minor: 3, UUID: "GPU-b", Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:07:00.0", MemoryMiB: 81920, MigMode: "enabled/disabled",
			MigDevices: []nvmlfake.MigDevice{
				{HandleIndex: 4, GI: 9, CI: 0, UUID: "MIG-2", Profile: "1g.10gb", MemoryMiB: 9728},
				{HandleIndex: 1, GI: 2, CI: 1, UUID: "MIG-1", Profile: "1c.3g.40gb", MemoryMiB: 40192},
			}},
		{Minor: 1, UUID: "GPU-c", Name: "Tesla V100-SXM2-32GB", MemoryMiB: 32768, MigMode: "unsupported"},
	}})
	got, warnings, err := Read(lib, "n1.example", hostfs.FS(t.TempDir()))
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	want := &model.Node{Hostname: "n1.example", DriverVersion: "580.159.04", GPUs: []model.GPU{
		{Index: 0, Minor: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:00:06.0", MemoryMiB: 81559, CPUAffinity: "0-15"},
		{Index: 1, Minor: 3, UUID: "GPU-b", Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:07:00.0", MemoryMiB: 81920, MigEnabled: true,
			MigDevices: []model.MigDevice{
				{GPUInstanceID: 2, ComputeInstanceID: 1, UUID: "MIG-1", Profile: "1c.3g.40gb", GISlices: 3, MemoryMiB: 40192},
				{GPUInstanceID: 9, ComputeInstanceID: 0, UUID: "MIG-2", Profile: "1g.10gb", GISlices: 1, MemoryMiB: 9728},
			}},
		{Index: 2, Minor: 1, UUID: "GPU-c", Name: "Tesla V100-SXM2-32GB", MemoryMiB: 32768},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Old drivers name a MIG device like its parent and give MIG-GPU-... UUIDs;
// the profile then comes from attributes and the GI profile, whose id
// (the H100's, from its table) differs from its index.
func TestOldDriverProfileFallback(t *testing.T) {
	meIndex := nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1
	lib := fake(t, &nvmlfake.Fixture{GPUs: []nvmlfake.GPU{{Minor: 0, Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, MigMode: "enabled",
		MigProfiles: []nvmlfake.GIProfile{
			{Index: meIndex, ID: 20, Instances: 1, Slices: 1, MemoryMiB: 9984, Placements: "{0,1,2,3,4,5,6}:1"},
			{Index: nvml.GPU_INSTANCE_PROFILE_3_SLICE, ID: 9, Instances: 2, Slices: 3, MemoryMiB: 40448, Placements: "{0,4}:4"},
		},
		MigDevices: []nvmlfake.MigDevice{
			{HandleIndex: 0, GI: 11, CI: 0, UUID: "MIG-GPU-x/11/0", Profile: "1g.10gb", Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 9856, GIProfileIndex: &meIndex},
			{HandleIndex: 1, GI: 1, CI: 0, UUID: "MIG-GPU-x/1/0", Profile: "1c.3g.40gb", Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 40192},
		}}}})
	n, _, err := read(lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range n.GPUs[0].MigDevices {
		got = append(got, m.Profile)
	}
	if diff := cmp.Diff([]string{"1c.3g.40gb", "1g.10gb+me"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeviceErrorsNameTheDevice(t *testing.T) {
	for _, c := range []struct {
		gpu  nvmlfake.GPU
		want string
		hint string // what would help, apart from the message
	}{
		{nvmlfake.GPU{Errors: map[string]string{"GetUUID": "ERROR_GPU_IS_LOST"}}, "nvml: GPU 0: reading its UUID: ERROR_GPU_IS_LOST", ""},
		{nvmlfake.GPU{Errors: map[string]string{"GetMigMode": "ERROR_UNKNOWN"}}, "nvml: GPU 0: reading its MIG mode: ERROR_UNKNOWN", ""},
		{nvmlfake.GPU{MigMode: "enabled", Errors: map[string]string{"GetMigDeviceHandleByIndex": "ERROR_UNKNOWN"}},
			"nvml: GPU 0 (minor 5, 00000000:07:00.0): getting MIG device handle 0: ERROR_UNKNOWN", ""},
		{nvmlfake.GPU{MigMode: "enabled", MigDevices: []nvmlfake.MigDevice{{GI: 7, Profile: "1g.10gb", UUID: "MIG-1", Errors: map[string]string{"GetAttributes": "ERROR_UNKNOWN"}}}},
			"nvml: MIG device gpu5/gi7/ci0 (GPU 0 (minor 5, 00000000:07:00.0)): reading its attributes: ERROR_UNKNOWN", ""},
		// A MIG device destroyed between enumeration and its queries.
		{nvmlfake.GPU{MigMode: "enabled", MigDevices: []nvmlfake.MigDevice{{GI: 7, Profile: "1g.10gb", Errors: map[string]string{"GetUUID": "ERROR_NOT_FOUND"}}}},
			"nvml: GPU 0 (minor 5, 00000000:07:00.0): MIG device handle 0: reading its UUID: the MIG device vanished while being read (is the MIG layout being changed?)",
			"; run again when it is done"},
	} {
		g := c.gpu
		g.Minor, g.Name, g.PCIBusID, g.MemoryMiB = 5, "NVIDIA A100-SXM4-80GB", "00000000:07:00.0", 81920
		_, _, err := read(fake(t, &nvmlfake.Fixture{GPUs: []nvmlfake.GPU{g}}), t.TempDir())
		if err == nil || err.Error() != c.want || hintOf(err) != c.hint {
			t.Errorf("err = %v, hint %q\nwant %s, hint %q", err, hintOf(err), c.want, c.hint)
		}
		if !errors.As(err, new(*NVMLError)) {
			t.Errorf("%v: not an NVMLError", err)
		}
	}
}

// hintOf is the hint err carries apart from its message, "" for none.
func hintOf(err error) string {
	var h advice.Hinter
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}

// With sysfs at hand the affinity comes from the PCI device's local_cpulist
// and NVML's slow GetCpuAffinity is not called (the fake's answer, 0-63,
// would show if it were).
func TestCPUAffinityFromSysfs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sys/bus/pci/devices/0000:ca:00.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "local_cpulist"), []byte("32-63,96-127\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := fake(t, &nvmlfake.Fixture{GPUs: []nvmlfake.GPU{
		{Minor: 0, Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:CA:00.0", CPUs: "0-63"},
		{Minor: 1, Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:CB:00.0", CPUs: "0-63"},
	}})
	n, _, err := read(lib, root)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.GPUs[0].CPUAffinity; got != "32-63,96-127" {
		t.Errorf("GPU 0 affinity %q, want sysfs's 32-63,96-127", got)
	}
	if got := n.GPUs[1].CPUAffinity; got != "0-63" {
		t.Errorf("GPU 1 (no sysfs entry) affinity %q, want NVML's 0-63", got)
	}
}

// CPU affinity and NVLinks only refine the config: their failures become
// warnings, and the devices are still all there.
func TestRefinementsDegrade(t *testing.T) {
	lib := fake(t, &nvmlfake.Fixture{GPUs: []nvmlfake.GPU{{Minor: 0, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:07:00.0", CPUs: "0-15",
		NVLinks: []nvmlfake.NVLink{{Remote: "FFFFFFFF:FF:FF.0", Count: 18}},
		Errors:  map[string]string{"GetCpuAffinity": "ERROR_UNKNOWN", "GetNvLinkState": "ERROR_UNKNOWN"}}}})
	n, warnings, err := read(lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if g := n.GPUs[0]; g.CPUAffinity != "" || g.NVLinks != nil {
		t.Errorf("degraded GPU kept %q, %v", g.CPUAffinity, g.NVLinks)
	}
	want := []string{
		"GPU 0 (minor 0, 00000000:07:00.0): reading its CPU affinity: ERROR_UNKNOWN; its Cores= is left out",
		"GPU 0 (minor 0, 00000000:07:00.0): reading the state of NVLink 0: ERROR_UNKNOWN; its NVLinks are not counted in Links=",
	}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// GPUs are read in parallel; what comes out must not show it.
func TestParallelReadKeepsIndexOrder(t *testing.T) {
	var gpus []nvmlfake.GPU
	for i := 0; i < 40; i++ { // more than maxParallelGPUs
		gpus = append(gpus, nvmlfake.GPU{Minor: 39 - i, UUID: fmt.Sprintf("GPU-%d", i), Name: "NVIDIA A100-SXM4-80GB",
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", i+1), Errors: map[string]string{"GetCpuAffinity": "ERROR_UNKNOWN"}})
	}
	n, warnings, err := read(fake(t, &nvmlfake.Fixture{GPUs: gpus}), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range n.GPUs {
		if g.Index != i || g.UUID != fmt.Sprintf("GPU-%d", i) || g.Minor != 39-i {
			t.Fatalf("GPU at %d is index %d, %s, minor %d", i, g.Index, g.UUID, g.Minor)
		}
		if want := fmt.Sprintf("GPU %d (minor %d, %s): reading its CPU affinity", i, 39-i, g.PCIBusID); !strings.HasPrefix(warnings[i], want) {
			t.Errorf("warning %d = %q, want it to start %q", i, warnings[i], want)
		}
	}

	// Of several failing GPUs, the lowest index is reported.
	gpus[33].Errors = map[string]string{"GetUUID": "ERROR_GPU_IS_LOST"}
	gpus[7].Errors = map[string]string{"GetName": "ERROR_UNKNOWN"}
	_, _, err = read(fake(t, &nvmlfake.Fixture{GPUs: gpus}), t.TempDir())
	if want := "nvml: GPU 7: reading its name: ERROR_UNKNOWN"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
