package nvmlread

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// profileFromName takes the profile out of a MIG device's NVML name
// ("NVIDIA A100-SXM4-40GB MIG 1g.5gb" -> "1g.5gb"). The driver writes the
// same string that nvidia-smi prints and that Slurm's AutoDetect=nvml uses.
func profileFromName(name string) (string, bool) {
	i := strings.Index(name, " MIG ")
	if i < 0 {
		return "", false
	}
	p := name[i+len(" MIG "):]
	return p, model.ValidProfile(p) == nil
}

// profileOf names a MIG device's profile from its GI profile index,
// attributes and GPU memory (go-nvlib's MigProfile), for drivers whose
// MIG device names carry no profile.
func profileOf(nvlib device.Interface, giProfileIndex int, attrs nvml.DeviceAttributes, gpuMemoryBytes uint64) (string, error) {
	ci, ok := ciProfileIndex(attrs.ComputeInstanceSliceCount)
	if !ok {
		return "", fmt.Errorf("no compute instance profile has %d slices", attrs.ComputeInstanceSliceCount)
	}
	return migProfileName(nvlib, giProfileIndex, ci, attrs.MemorySizeMB, gpuMemoryBytes)
}

// ciProfileIndex is the compute instance profile index of a slice count:
// the name shows only the count, so either profile of one slice will do.
func ciProfileIndex(slices uint32) (int, bool) {
	switch slices {
	case 1:
		return nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, true
	case 2:
		return nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE, true
	case 3:
		return nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, true
	case 4:
		return nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE, true
	case 6:
		return nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE, true
	case 7:
		return nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE, true
	case 8:
		return nvml.COMPUTE_INSTANCE_PROFILE_8_SLICE, true
	}
	return 0, false
}
