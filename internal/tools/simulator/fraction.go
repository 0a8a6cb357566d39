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

// size is a fleet type's share of a GPU: its compute slices and its
// memory, each over the whole GPU's. A whole GPU is 1 and 1. A trace's
// fraction is of compute (a time-shared GPU's share, as gpu_milli is);
// memory only orders devices of equal compute.
type size struct {
	compute, memory float64
	whole           bool // the type is a whole GPU (MIG off)
	memorySlices    bool // a "+me" variant, never chosen for a fraction
	known           bool // false: neither a whole GPU nor a profile of the table
}

// sizesOf works out each type's share from the GPU's profile table.
func sizesOf(types []string, table []model.GIProfile) []size {
	var slices int
	var mem uint64
	for _, p := range table {
		slices, mem = max(slices, p.Slices), max(mem, p.MemoryMiB)
	}
	out := make([]size, len(types))
	for t, typ := range types {
		if !strings.Contains(typ, "_") {
			out[t] = size{compute: 1, memory: 1, whole: true, known: true}
			continue
		}
		for _, p := range table {
			if strings.ToLower(p.Name) == profileOf(typ) && slices > 0 && mem > 0 {
				out[t] = size{compute: float64(p.Slices) / float64(slices), memory: float64(p.MemoryMiB) / float64(mem),
					memorySlices: strings.Contains(p.Name, "+"), known: true}
			}
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
// MIG device with the fewest compute slices that are at least f of the
// GPU's, the least memory among those; a whole GPU for f of 1, or
// where no MIG device is that big.
func (fl *fleetDef) byFraction(f float64) (int, bool) {
	best, whole := -1, -1
	for t, s := range fl.sizes {
		switch {
		case !s.known || s.memorySlices:
		case s.whole:
			whole = t
		case s.compute+milli >= f:
			if best < 0 || s.compute < fl.sizes[best].compute ||
				s.compute == fl.sizes[best].compute && s.memory < fl.sizes[best].memory {
				best = t
			}
		}
	}
	if whole >= 0 && (f+milli >= 1 || best < 0) {
		return whole, true
	}
	return best, best >= 0
}
