package accounting

import (
	"fmt"
	"math/big"
	"strings"
)

// ShareLine is how gen notes a type's share in its gres.conf, after
// "# share: ", for merge to read back: "a100_1g.10gb model=a100
// compute=1/7 memory=1/8". A fragment carries its GPUs' shares because
// its records name types, not profiles, and one type name may be two
// sizes on two models (1g.10gb is 1/8 of an 80 GB A100's memory and 2/8
// of a 40 GB one's).
func ShareLine(t Type) string {
	return fmt.Sprintf("%s model=%s compute=%s memory=%s", t.Name, t.Model, t.Compute.RatString(), t.Memory.RatString())
}

// ParseShareLine reads a ShareLine back.
func ParseShareLine(s string) (Type, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return Type{}, fmt.Errorf("share line %q: want TYPE model=M compute=N/D memory=N/D", s)
	}
	t := Type{Name: f[0]}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "model":
			t.Model = v
		case "compute", "memory":
			r, ok := new(big.Rat).SetString(v)
			if !ok || r.Sign() <= 0 || r.Cmp(big.NewRat(1, 1)) > 0 {
				return Type{}, fmt.Errorf("share line %q: %s=%s is no share of a GPU", s, k, v)
			}
			if k == "compute" {
				t.Compute = r
			} else {
				t.Memory = r
			}
		default:
			return Type{}, fmt.Errorf("share line %q: unknown key %q", s, k)
		}
	}
	if t.Model == "" || t.Compute == nil || t.Memory == nil {
		return Type{}, fmt.Errorf("share line %q: want TYPE model=M compute=N/D memory=N/D", s)
	}
	return t, nil
}
