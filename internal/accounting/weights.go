package accounting

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// GPUWeights are the billing weights of whole GPUs: one for every model,
// or one per model (the type a whole GPU of it has: h100=2,a100=1), with
// a bare number for the models not named.
type GPUWeights struct {
	def    *big.Rat // nil: none given
	models map[string]*big.Rat
}

// ParseGPUWeights reads a weight list: "1.5", "h100=2,a100=1", or
// "1,h100=2". Nothing given is 1 for every model. Each weight is a
// decimal number above zero.
func ParseGPUWeights(s string) (GPUWeights, error) {
	w := GPUWeights{models: map[string]*big.Rat{}}
	if strings.TrimSpace(s) == "" {
		w.def = big.NewRat(1, 1)
		return w, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		key, val, named := strings.Cut(item, "=")
		if !named {
			key, val = "", item
		}
		r, ok := new(big.Rat).SetString(strings.TrimSpace(val))
		if !ok || r.Sign() <= 0 || strings.ContainsAny(val, "/eE") {
			return w, fmt.Errorf("weight %q: want a decimal number above 0 (1.5), or MODEL=NUMBER", item)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		switch {
		case !named && w.def != nil:
			return w, fmt.Errorf("two weights for every model: %s and %s", w.def.FloatString(2), val)
		case !named:
			w.def = r
		case key == "":
			return w, fmt.Errorf("weight %q names no model", item)
		case w.models[key] != nil:
			return w, fmt.Errorf("model %s is given two weights", key)
		default:
			w.models[key] = r
		}
	}
	if w.def == nil && len(w.models) == 0 {
		w.def = big.NewRat(1, 1)
	}
	return w, nil
}

// Of is the weight of a whole GPU of model (the type a whole GPU of it
// has). A model that weights per model leave out, with no weight for
// every model, is an error: billing it 1 would be a guess.
func (w GPUWeights) Of(model string) (*big.Rat, error) {
	if r := w.models[strings.ToLower(model)]; r != nil {
		return r, nil
	}
	if w.def != nil {
		return w.def, nil
	}
	names := make([]string, 0, len(w.models))
	for k := range w.models {
		names = append(names, k)
	}
	return nil, advice.Hinted(fmt.Errorf("no GPU weight for model %s (weights are given for %s only)", model, strings.Join(sorted(names), ", ")),
		fmt.Sprintf("; add %s=NUMBER, or a bare NUMBER for every other model", model))
}

// Unused are the models named that none of models is.
func (w GPUWeights) Unused(models map[string]bool) []string {
	var out []string
	for k := range w.models {
		if !models[k] {
			out = append(out, k)
		}
	}
	return sorted(out)
}

// formatWeight writes a weight as Slurm reads it (strtod): exactly, where
// a decimal can; else the shortest decimal that reads back as the same
// double, which is what Slurm computes with anyway.
func formatWeight(r *big.Rat) string {
	d := new(big.Int).Set(r.Denom())
	for _, p := range []int64{2, 5} {
		bp := big.NewInt(p)
		m := new(big.Int)
		for {
			q, rem := new(big.Int).QuoRem(d, bp, m)
			if rem.Sign() != 0 {
				break
			}
			d = q
		}
	}
	if d.Cmp(big.NewInt(1)) == 0 {
		s := r.FloatString(40)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	f, _ := r.Float64()
	return strconvFloat(f)
}
