package slurmconf

import (
	"fmt"
	"slices"
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

// ValidFlags checks a Flags= value word by word against the words some
// Slurm knows (flagSince); which release knows which, CheckGres checks.
func ValidFlags(flags string) error {
	if flags == "" {
		return nil
	}
	for _, f := range strings.Split(flags, ",") {
		if !slices.ContainsFunc(flagSince, func(k flagWord) bool { return strings.EqualFold(f, k.word) }) {
			var known []string
			for _, k := range flagSince {
				known = append(known, k.word)
			}
			return fmt.Errorf("unknown gres.conf flag %q (Slurm knows %s)", f, strings.Join(known, ", "))
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
