package discover

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
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
	return p, ValidProfile(p) == nil
}

// computeProfile names a MIG profile from its slice counts, memory and GPU
// instance profile index, by go-nvlib's rules (pkg/nvlib/device/mig_profile.go):
// "<g>g.<gb>gb" or "<c>c.<g>g.<gb>gb", plus the attribute suffix that the GI
// profile index implies. It is the fallback for drivers whose MIG device
// names carry no profile.
func computeProfile(ciSlices, giSlices uint32, migMemoryMiB, gpuMemoryBytes uint64, giProfileIndex int) string {
	gb := migMemoryGB(gpuMemoryBytes, migMemoryMiB)
	var name string
	if ciSlices == giSlices {
		name = fmt.Sprintf("%dg.%dgb", giSlices, gb)
	} else {
		name = fmt.Sprintf("%dc.%dg.%dgb", ciSlices, giSlices, gb)
	}
	return name + profileSuffix(giProfileIndex)
}

// migMemoryGB rounds a MIG device's memory to the figure in its profile
// name: the fraction of the GPU's memory, rounded up to eighths, times the
// GPU's memory in whole GiB (go-nvlib's getMigMemorySizeGB).
func migMemoryGB(gpuMemoryBytes, migMemoryMiB uint64) uint64 {
	const mib, gib = 1 << 20, 1 << 30
	if gpuMemoryBytes == 0 {
		return 0
	}
	fraction := float64(migMemoryMiB) * mib / float64(gpuMemoryBytes)
	fraction = math.Ceil(fraction*8) / 8
	totalGiB := float64((gpuMemoryBytes + gib - 1) / gib)
	return uint64(math.Round(fraction * totalGiB))
}

// profileSuffix is the attribute suffix of a GPU instance profile index
// (nvml.GPU_INSTANCE_PROFILE_*).
func profileSuffix(giProfileIndex int) string {
	switch giProfileIndex {
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, nvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1:
		return "+me"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, nvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
		return "+me.all"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, nvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
		nvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX, nvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX:
		return "+gfx"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, nvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
		return "-me"
	}
	return ""
}

// ValidProfile checks a profile name against the nvidia-smi grammar:
// [<c>c.]<g>g.<gb>gb with an optional +attr or -attr suffix, where attr is
// lower-case letters and digits with inner dots (me, me.all, gfx). Anything
// else is refused rather than passed on as a Slurm type: a ',' or ':' there
// would break Gres= parsing.
func ValidProfile(p string) error {
	body, attr := p, ""
	if i := strings.IndexAny(p, "+-"); i >= 0 {
		body, attr = p[:i], p[i+1:]
		if !validAttribute(attr) {
			return fmt.Errorf("invalid MIG profile %q: bad attribute %q", p, attr)
		}
	}
	fields := strings.Split(body, ".")
	if len(fields) == 3 {
		if !countField(fields[0], "c") {
			return fmt.Errorf("invalid MIG profile %q", p)
		}
		fields = fields[1:]
	}
	if len(fields) != 2 || !countField(fields[0], "g") || !countField(fields[1], "gb") {
		return fmt.Errorf("invalid MIG profile %q: want [<c>c.]<g>g.<mem>gb[+attr]", p)
	}
	return nil
}

// countField reports whether s is a decimal count followed by unit.
func countField(s, unit string) bool {
	n, ok := strings.CutSuffix(s, unit)
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 32)
	return err == nil
}

func validAttribute(a string) bool {
	if a == "" || a[0] == '.' || a[len(a)-1] == '.' || a[0] < 'a' || a[0] > 'z' {
		return false
	}
	for _, c := range a {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}
