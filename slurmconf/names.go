package slurmconf

import (
	"fmt"
	"strings"
)

// ValidType refuses GRES types that would not survive Slurm's parsers: the
// Gres= list splits on ',' and ':', gres.conf on spaces and '=', and '#'
// starts a comment.
func ValidType(t string) error {
	if t == "" {
		return fmt.Errorf("empty GRES type")
	}
	if i := strings.IndexAny(t, " \t\n,:=#[]\"'\\"); i >= 0 {
		return fmt.Errorf("GRES type %q has %q, which Slurm cannot parse there", t, t[i])
	}
	for i := 0; i < len(t); i++ {
		if t[i] < 0x20 || t[i] == 0x7f { // \r, \v, \f are blanks to Slurm's parser
			return fmt.Errorf("GRES type %q has the control character %q", t, t[i])
		}
	}
	return nil
}

// SharingGres reports whether name is a GRES that shares GPUs (mps,
// shard): its Count is the shares, spread over the devices File= names,
// not one per file (gres.conf(5): Name=mps Count=200 File=/dev/nvidia0).
func SharingGres(name string) bool {
	return strings.EqualFold(name, "mps") || strings.EqualFold(name, "shard")
}

// knownFlags are the gres.conf Flags= words Slurm knows (gres.c,
// _parse_gres_flags); explicit and env_uuid came after 22.05.
var knownFlags = []string{"CountOnly", "nvidia_gpu_env", "amd_gpu_env", "intel_gpu_env", "opencl_env",
	"no_gpu_env", "one_sharing", "all_sharing", "explicit", "env_uuid"}

// ValidFlags checks a Flags= value word by word.
func ValidFlags(flags string) error {
	if flags == "" {
		return nil
	}
	for _, f := range strings.Split(flags, ",") {
		ok := false
		for _, k := range knownFlags {
			ok = ok || strings.EqualFold(f, k)
		}
		if !ok {
			return fmt.Errorf("unknown gres.conf flag %q (Slurm knows %s)", f, strings.Join(knownFlags, ", "))
		}
	}
	return nil
}

// GresName is a GRES as a Gres= item names it, without its count:
// "gpu:a100_1g.10gb", or "gpu" when it has no type.
func GresName(name, typ string) string {
	if typ == "" {
		return name
	}
	return name + ":" + typ
}
