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

// size is a fleet type as a trace's share of a GPU sees it.
type size struct {
	slices int     // compute slices; the whole GPU's for a whole GPU
	cover  float64 // the largest share of a GPU it serves
	memory uint64  // MiB, the least among devices of equal slices
	whole  bool    // the type is a whole GPU (MIG off)
	plus   bool    // a "+me" variant, never chosen for a share
	known  bool    // false: neither a whole GPU nor a profile of the table
}

// sizesOf works out each type's size from the GPU's profile table. A
// device serves a share up to the larger of its compute and its memory,
// the memory rounded up to compute slices: a 3g.40gb holds half of an
// H100's memory, so it serves up to 4/7, as the thresholds public traces
// are mapped with (1/7, 2/7, 4/7) have it.
func sizesOf(types []string, table []model.GIProfile) []size {
	var slices int
	var mem uint64
	for _, p := range table {
		slices, mem = max(slices, p.Slices), max(mem, p.MemoryMiB)
	}
	out := make([]size, len(types))
	for t, typ := range types {
		if !strings.Contains(typ, "_") {
			out[t] = size{slices: slices, cover: 1, whole: true, known: true}
			continue
		}
		for _, p := range table {
			if strings.ToLower(p.Name) == profileOf(typ) && slices > 0 && mem > 0 {
				byMemory := math.Ceil(float64(p.MemoryMiB)/float64(mem)*float64(slices)-milli) / float64(slices)
				out[t] = size{slices: p.Slices, cover: max(float64(p.Slices)/float64(slices), byMemory),
					memory: p.MemoryMiB, plus: strings.Contains(p.Name, "+"), known: true}
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
// smallest that serves f of the devices of NVIDIA's all-balanced config
// (1, 2 and 3 slices, the least memory of each: 1g.10gb, 2g.20gb and
// 3g.40gb on an H100) and the whole GPU's instance (7g.80gb). Others are
// left out: a 4g.40gb comes only from all-4g.40gb, which leaves three
// slices of each GPU idle, and a 1g.20gb's memory would serve a share
// its compute does not. A share of 1, or one no MIG device serves, gets
// a whole GPU.
func (fl *fleetDef) byFraction(f float64) (int, bool) {
	whole, full := -1, 0
	least := map[int]int{} // compute slices -> the type of least memory
	for t, s := range fl.sizes {
		full = max(full, s.slices)
		switch {
		case !s.known || s.plus:
		case s.whole:
			whole = t
		default:
			if b, ok := least[s.slices]; !ok || s.memory < fl.sizes[b].memory {
				least[s.slices] = t
			}
		}
	}
	if f+milli < 1 || whole < 0 {
		for _, n := range []int{1, 2, 3, full} {
			if t, ok := least[n]; ok && fl.sizes[t].cover+milli >= f {
				return t, true
			}
		}
	}
	return whole, whole >= 0
}
