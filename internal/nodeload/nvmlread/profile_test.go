package nvmlread

import (
	"testing"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestProfileFromName(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA A100-SXM4-40GB MIG 1g.5gb":     "1g.5gb",
		"NVIDIA H100 80GB HBM3 MIG 1g.10gb+me": "1g.10gb+me",
		"NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb": "1c.3g.40gb",
		"NVIDIA H100 80GB HBM3 MIG 1g.10gb-me": "1g.10gb-me",
		"NVIDIA B200 MIG 1g.23gb+me.all":       "1g.23gb+me.all",
	} {
		got, ok := profileFromName(name)
		if !ok || got != want {
			t.Errorf("profileFromName(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"NVIDIA H100 80GB HBM3", "NVIDIA A100 MIG ", "NVIDIA A100 MIG 1g", "X MIG 1g.5gb+me,gfx"} {
		if p, ok := profileFromName(name); ok {
			t.Errorf("profileFromName(%q) = %q, want no profile", name, p)
		}
	}
}

// Memory figures as real drivers report them; the names are nvidia-smi's.
func TestProfileOf(t *testing.T) {
	const a100_80, a100_40, h100 = 81920 << 20, 40960 << 20, 81559 << 20
	for _, c := range []struct {
		ci, gi   uint32
		migMiB   uint64
		gpuBytes uint64
		index    int
		want     string
	}{
		{1, 1, 4864, a100_40, nvml.GPU_INSTANCE_PROFILE_1_SLICE, "1g.5gb"},
		{3, 3, 19968, a100_40, nvml.GPU_INSTANCE_PROFILE_3_SLICE, "3g.20gb"},
		{7, 7, 40192, a100_40, nvml.GPU_INSTANCE_PROFILE_7_SLICE, "7g.40gb"},
		{1, 1, 9728, a100_80, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, "1g.10gb+me"},
		{1, 3, 40192, a100_80, nvml.GPU_INSTANCE_PROFILE_3_SLICE, "1c.3g.40gb"},
		{1, 1, 9856, h100, nvml.GPU_INSTANCE_PROFILE_1_SLICE, "1g.10gb"},
		{1, 1, 19968, h100, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, "1g.20gb"},
		{4, 4, 40192, h100, nvml.GPU_INSTANCE_PROFILE_4_SLICE, "4g.40gb"},
		{7, 7, 80384, h100, nvml.GPU_INSTANCE_PROFILE_7_SLICE, "7g.80gb"},
		{1, 1, 9856, h100, nvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, "1g.10gb-me"},
		{2, 2, 19968, h100, nvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, "2g.20gb+me.all"},
		{1, 1, 9856, h100, nvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, "1g.10gb+gfx"},
	} {
		attrs := nvml.DeviceAttributes{ComputeInstanceSliceCount: c.ci, GpuInstanceSliceCount: c.gi, MemorySizeMB: c.migMiB}
		got, err := profileOf(device.New(nil), c.index, attrs, c.gpuBytes)
		if err != nil || got != c.want {
			t.Errorf("profileOf(%d, %d, %d MiB, %d MiB, %d) = %q, %v; want %q", c.ci, c.gi, c.migMiB, c.gpuBytes>>20, c.index, got, err, c.want)
		}
	}
}

func TestCPUList(t *testing.T) {
	if got := cpuList([]uint{0xffff, 0, 1<<63 | 1}); got != "0-15,128,191" {
		t.Errorf("cpuList = %q", got)
	}
	if got := cpuList([]uint{0, 0}); got != "" {
		t.Errorf("empty mask gives %q", got)
	}
}

// A profile index go-nvlib does not know is an error, not a guessed name.
func TestProfileOfUnknownIndex(t *testing.T) {
	attrs := nvml.DeviceAttributes{ComputeInstanceSliceCount: 1, GpuInstanceSliceCount: 1, MemorySizeMB: 9856}
	if p, err := profileOf(device.New(nil), 999, attrs, 81559<<20); err == nil {
		t.Errorf("profileOf(index 999) = %q, want an error", p)
	}
	attrs.ComputeInstanceSliceCount = 5
	if p, err := profileOf(device.New(nil), nvml.GPU_INSTANCE_PROFILE_7_SLICE, attrs, 81559<<20); err == nil {
		t.Errorf("profileOf(5 CI slices) = %q, want an error", p)
	}
}
