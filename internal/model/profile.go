package model

import (
	"fmt"
	"strconv"
	"strings"
)

// ValidProfile checks a profile name against nvidia-smi's grammar,
// [<c>c.]<g>g.<gb>gb then an optional +attr or -attr (me, me.all, gfx).
// Anything else is refused, as a ',' or ':' in a Slurm type breaks Gres=.
func ValidProfile(p string) error {
	body, attr := p, ""
	if i := strings.IndexAny(p, "+-"); i >= 0 {
		body, attr = p[:i], p[i+1:]
		if !validAttribute(attr) {
			return fmt.Errorf("invalid MIG profile %q: bad attribute %q", p, attr)
		}
	}
	// Cut, not Split: a fleet's snapshots hold a million profile names,
	// and this allocates nothing.
	switch strings.Count(body, ".") {
	case 2:
		c, rest, _ := strings.Cut(body, ".")
		if !countField(c, "c") {
			return fmt.Errorf("invalid MIG profile %q", p)
		}
		body = rest
	case 1:
	default:
		return fmt.Errorf("invalid MIG profile %q: want [<c>c.]<g>g.<mem>gb[+attr]", p)
	}
	g, mem, _ := strings.Cut(body, ".")
	if !countField(g, "g") || !countField(mem, "gb") {
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
