package discover

import (
	"strings"
	"testing"
)

// The real captures' UUIDs (testdata/real: the H100's nvidia-smi -q, the
// H200s' snapshot) and NVML's MIG forms pass; anything env must not
// export is refused.
func TestValidUUID(t *testing.T) {
	for _, tc := range []struct {
		uuid string
		mig  bool
	}{
		{"GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", false}, // h100-driver-580
		{"GPU-27149535-6073-2b3f-fc3f-71ff2d4504f0", false}, // h200x4
		{"GPU-4D9B8FC3-08A5-1431-9BD8-94A76EF268C5", false}, // upper case names the same bytes
		{"MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b", true},
		{"MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/7/0", true}, // drivers before 470.42.01
		{"MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/14/7", true},
	} {
		if err := ValidUUID(tc.uuid, tc.mig); err != nil {
			t.Errorf("ValidUUID(%q, %v) = %v, want nil", tc.uuid, tc.mig, err)
		}
	}
	const gpu, mig = "is not a GPU UUID", "is not a MIG UUID"
	for _, tc := range []struct {
		uuid string
		mig  bool
		want string
	}{
		{"", false, "no uuid"},
		{"", true, "no uuid"},
		{"garbage", true, mig},
		{"garbage", false, gpu},
		{"GPU-", false, gpu},
		{"MIG-", true, mig},
		{"GPU-1", false, gpu},
		{"MIG-2", true, mig},
		{"GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f", false, gpu},   // one digit short
		{"GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0a", false, gpu}, // one too many
		{"GPU-87669b4f_4d3a-9852-0688-cd1e4683e9f0", false, gpu},
		{"GPU-87669b4g-4d3a-9852-0688-cd1e4683e9f0", false, gpu},
		{"gpu-87669b4f-4d3a-9852-0688-cd1e4683e9f0", false, gpu},
		{" GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", false, gpu},
		{"MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b", false, gpu}, // a MIG UUID on a GPU
		{"GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", true, mig},  // a GPU UUID on a MIG device
		{"MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b,MIG-0b7e084a-1c2d-5e3f-8a9b-1c2d3e4f5a6b", true, mig},
		{"MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b\nexport LD_PRELOAD=/tmp/x.so", true, mig},
		{"MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/7", true, mig},
		{"MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/7/0/1", true, mig},
		{"MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/x/0", true, mig},
		{"MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/-1/0", true, mig},
		{"MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/07/0", true, mig},
		{"MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/256/0", true, mig},
		{"MIG-GPU-abc/7/0", true, mig},
	} {
		err := ValidUUID(tc.uuid, tc.mig)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidUUID(%q, %v) = %v, want %q", tc.uuid, tc.mig, err, tc.want)
		}
	}
}
