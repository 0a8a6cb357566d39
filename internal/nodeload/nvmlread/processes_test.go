package nvmlread

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
)

func processFixture() *nvmlfake.Fixture {
	return &nvmlfake.Fixture{DriverVersion: "580.159.04", GPUs: []nvmlfake.GPU{
		{Minor: 0, UUID: "GPU-a", Name: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920},
		{Minor: 1, UUID: "GPU-b", Name: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, MigMode: "enabled",
			MigDevices: []nvmlfake.MigDevice{
				{HandleIndex: 5, GI: 13, CI: 0, UUID: "MIG-b13", Profile: "1g.10gb"},
				{HandleIndex: 0, GI: 7, CI: 0, UUID: "MIG-b7", Profile: "1g.10gb",
					Processes: []nvmlfake.Process{{PID: 4711, UsedMemoryMiB: 512}, {PID: 4712}}},
			}},
	}}
}

// TestReadProcesses: each MIG device gets the processes on its own
// handle, matched by UUID whatever the handle order.
func TestReadProcesses(t *testing.T) {
	f := processFixture()
	lib := fake(t, f)
	node, _, err := read(lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := ReadProcesses(lib, node); err != nil {
		t.Fatal(err)
	}
	got := map[string][]model.Process{}
	for _, m := range node.GPUs[1].MigDevices {
		got[m.UUID] = m.Processes
	}
	want := map[string][]model.Process{"MIG-b7": {{PID: 4711, UsedMemoryMiB: 512}, {PID: 4712}}, "MIG-b13": nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// The process ends: a later read says so.
	f.GPUs[1].MigDevices[1].Processes = nil
	if err := ReadProcesses(fake(t, f), node); err != nil {
		t.Fatal(err)
	}
	if p := node.GPUs[1].MigDevices[0].Processes; p != nil {
		t.Errorf("after the process ended: %v", p)
	}
}

// TestReadProcessesErrors: what cannot be read is an error naming the
// device, never "no processes".
func TestReadProcessesErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(f *nvmlfake.Fixture)
		want   string
		hint   string // what would help, apart from the message
	}{
		{"no permission", func(f *nvmlfake.Fixture) {
			f.GPUs[1].MigDevices[1].Errors = map[string]string{"GetComputeRunningProcesses": "ERROR_NO_PERMISSION"}
		}, "nvml: MIG device gpu1/gi7/ci0 (GPU 1 (minor 1)): reading its compute processes: ERROR_NO_PERMISSION", ""},
		{"vanished", func(f *nvmlfake.Fixture) {
			f.GPUs[1].MigDevices = f.GPUs[1].MigDevices[:1]
		}, "nvml: GPU 1 (minor 1): reading compute processes: a MIG device vanished since discovery (is the MIG layout being changed?)", "; run again when it is done"},
		{"gpu lost", func(f *nvmlfake.Fixture) {
			f.GPUs[1].Errors = map[string]string{"GetMaxMigDeviceCount": "ERROR_GPU_IS_LOST"}
		}, "nvml: GPU 1 (minor 1): counting MIG devices: ERROR_GPU_IS_LOST", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node, _, err := read(fake(t, processFixture()), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			f := processFixture()
			tc.mutate(f)
			err = ReadProcesses(fake(t, f), node)
			if err == nil || !strings.Contains(err.Error(), tc.want) || hintOf(err) != tc.hint {
				t.Errorf("got %v, hint %q; want %q, hint %q", err, hintOf(err), tc.want, tc.hint)
			}
			if tc.hint != "" && err.Error() != tc.want {
				t.Errorf("got %q, want %q: the hint apart", err, tc.want)
			}
			for _, m := range node.GPUs[1].MigDevices {
				if m.Processes != nil {
					t.Errorf("%s: processes %v after a failed read; the node must stay as it was", m.UUID, m.Processes)
				}
			}
		})
	}
}
