package accounting

import (
	"fmt"
	"math/big"
	"strings"
)

// ShareLine is how gen notes a type's share in gres.conf, after "# share: ",
// for merge: "a100_1g.10gb model=a100 compute=1/7 memory=1/8". Records name
// types, and one type name may be two sizes on two models.
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
