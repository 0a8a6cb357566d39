package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// milli is the resolution of a GPU fraction: public traces give shares
// in thousandths (Alibaba's gpu_milli), so 0.143 is one seventh.
const milli = 0.0005

// shareTypes are the types a trace's share of a GPU may get, smallest first,
// each with the largest share it serves: the all-balanced config's devices,
// the 7g instance and the whole GPU (-1 if none); docs/rebalance.md says why.
type shareTypes struct {
	types []int
	cover []float64
	whole int
}

// sharesOf works out the shareTypes of types. A device serves a share up to
// the larger of its compute and memory, the memory rounded up to compute
// slices: a 3g.40gb serves up to 4/7, as public traces are mapped.
func sharesOf(types []string, table []model.GIProfile) shareTypes {
	var full int
	var mem uint64
	for _, p := range table {
		full, mem = max(full, p.Slices), max(mem, p.MemoryMiB)
	}
	out := shareTypes{whole: -1}
	least := map[int]int{} // compute slices -> the table's profile of least memory
	for i, p := range table {
		if j, ok := least[p.Slices]; !strings.Contains(p.Name, "+") && (!ok || p.MemoryMiB < table[j].MemoryMiB) {
			least[p.Slices] = i
		}
	}
	sizes := []int{1, 2, 3}
	if full > 3 {
		sizes = append(sizes, full)
	}
	for _, n := range sizes {
		i, ok := least[n]
		if !ok || mem == 0 {
			continue
		}
		p := table[i]
		for t, typ := range types {
			if strings.Contains(typ, "_") && profileOf(typ) == strings.ToLower(p.Name) {
				byMemory := math.Ceil(float64(p.MemoryMiB)/float64(mem)*float64(full)-milli) / float64(full)
				out.types = append(out.types, t)
				out.cover = append(out.cover, max(float64(n)/float64(full), byMemory))
			}
		}
	}
	for t, typ := range types {
		if !strings.Contains(typ, "_") {
			out.whole = t
		}
	}
	return out
}

// gpuFraction reads a trace's profile as a share of one GPU ("0.25",
// "25%", "1"); ok is false for a profile that is not a number.
func gpuFraction(profile string) (float64, bool) {
	scale := 1.0
	if p, ok := strings.CutSuffix(profile, "%"); ok {
		profile, scale = strings.TrimSpace(p), 100
	}
	f, err := strconv.ParseFloat(profile, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f / scale, true
}

// byFraction is the type a job asking for share f of a GPU gets: the
// smallest of the shareTypes that serves f; a whole GPU for a share of
// 1, or one no MIG device serves.
func (fl *fleetDef) byFraction(f float64) (int, bool) {
	if f+milli < 1 || fl.shares.whole < 0 {
		for i, t := range fl.shares.types {
			if fl.shares.cover[i]+milli >= f {
				return t, true
			}
		}
	}
	return fl.shares.whole, fl.shares.whole >= 0
}
