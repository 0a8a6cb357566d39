package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// printTables prints each seed's policies, then, over the seeds, the
// policy against the best static layout.
func printTables(w io.Writer, o options, all [][]policyResult, took time.Duration) {
	first := all[0][0]
	seeds := fmt.Sprintf("%d seeds", len(all))
	if len(all) == 1 {
		seeds = fmt.Sprintf("seed %d", first.Seed)
	}
	fmt.Fprintf(w, "%s, %d nodes x %d GPUs, changed by %s, load %.2f of what the best layout serves, jobs submitted in minutes %.1f..%.1f measured, run to %.1f (%s, %.1f s)\n\n",
		first.Workload, o.nodes/max(o.unit, 1), o.gpus*max(o.unit, 1), o.granularity, first.Load, first.win.from, first.win.to, first.win.end, seeds, took.Seconds())
	if len(all) == 1 {
		fmt.Fprintln(w, "| policy | layout | mean wait (min) | p95 (min) | jobs | unstarted | reconf./node-h | drained node-h |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
		for _, r := range all[0] {
			fail := ""
			if r.Failing {
				fail = " (failing)"
			}
			fmt.Fprintf(w, "| %s | %s | %.1f%s | %.1f | %d | %d | %.3f | %.1f |\n", r.Policy, r.Layout, r.MeanWait, fail, r.P95, r.Jobs, r.Unstarted, r.Reconfigs, r.Drained)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| size | static-best mean wait | rebalance mean wait | jobs |")
		fmt.Fprintln(w, "|---|---|---|---|")
		best, pol := all[0][0], byPolicy(all[0], "rebalance")
		for _, k := range sortedSizes(best.PerSize) {
			fmt.Fprintf(w, "| %s | %.1f | %.1f | %d |\n", k, best.PerSize[k].MeanWait, pol.PerSize[k].MeanWait, best.PerSize[k].Jobs)
		}
		return
	}
	fmt.Fprintln(w, "| seed | static-best layout | static-best mean wait | rebalance mean wait | ratio | worst size ratio | reconf./node-h | targets |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var ratios []float64
	worst := 0.0
	for _, rs := range all {
		best, pol := rs[0], byPolicy(rs, "rebalance")
		ratio := waitRatio(pol.MeanWait, best.MeanWait)
		sizeWorst := worstSizeRatio(best, pol)
		var miss []string
		if best.Failing || pol.Failing {
			miss = append(miss, fmt.Sprintf("failing (unstarted: static %d, rebalance %d)", best.Unstarted, pol.Unstarted))
		} else {
			ratios = append(ratios, ratio)
			worst = max(worst, ratio)
		}
		if pol.MeanWait-best.MeanWait > max(0.05*best.MeanWait, 2) {
			miss = append(miss, "worse than static")
		}
		if sizeWorst > 1.25 {
			miss = append(miss, "a size above 1.25x")
		}
		if pol.Reconfigs > 1 {
			miss = append(miss, "over 1 reconf./node-h")
		}
		tg := "met"
		if len(miss) > 0 {
			tg = strings.Join(miss, "; ")
		}
		if or := byPolicy(rs, "oracle"); or.Policy != "" {
			tg += fmt.Sprintf("; oracle bound %.1f (%s)", or.MeanWait, fmtRatio(waitRatio(or.MeanWait, best.MeanWait)))
		}
		fmt.Fprintf(w, "| %d | %s | %.1f | %.1f | %s | %s | %.3f | %s |\n", best.Seed, best.Layout, best.MeanWait, pol.MeanWait, fmtRatio(ratio), fmtRatio(sizeWorst), pol.Reconfigs, tg)
	}
	if len(ratios) == 0 {
		fmt.Fprintln(w, "\nevery seed failing: no ratio averaged")
		return
	}
	lo, hi := bootstrapMedian(ratios, 2000, o.seed)
	fmt.Fprintf(w, "\nratio rebalance/static-best over %d seeds not failing: median %s (bootstrap 95%% interval %s..%s), mean %s, worst %s\n",
		len(ratios), fmtRatio(median(ratios)), fmtRatio(lo), fmtRatio(hi), fmtRatio(mean(ratios)), fmtRatio(worst))
}

// worstSizeRatio is the largest of pol's per-size mean waits over best's,
// each as waitRatio gives it: a size that waited under neither is 1, one
// that waits only under pol is +Inf.
func worstSizeRatio(best, pol policyResult) float64 {
	worst := 0.0
	for k, s := range best.PerSize {
		worst = max(worst, waitRatio(pol.PerSize[k].MeanWait, s.MeanWait))
	}
	return worst
}

// waitRatio is a mean wait over static-best's b: 1 when both are 0 (equal),
// +Inf when only b is; the targets judge a seed by minutes, not by it.
func waitRatio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return a / b
}

// fmtRatio prints a ratio to three places, +Inf as inf.
func fmtRatio(x float64) string {
	if math.IsInf(x, 1) {
		return "inf"
	}
	return fmt.Sprintf("%.3f", x)
}

func byPolicy(rs []policyResult, name string) policyResult {
	for _, r := range rs {
		if r.Policy == name {
			return r
		}
	}
	return policyResult{}
}

func sortedSizes(m map[string]sizeResult) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func mean(v []float64) float64 {
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// bootstrapMedian is a 95% percentile bootstrap interval of the median.
func bootstrapMedian(v []float64, rounds int, seed uint64) (float64, float64) {
	r := rand.New(rand.NewPCG(seed, 0xb007))
	meds := make([]float64, rounds)
	s := make([]float64, len(v))
	for i := range meds {
		for k := range s {
			s[k] = v[r.IntN(len(v))]
		}
		meds[i] = median(s)
	}
	sort.Float64s(meds)
	return meds[int(0.025*float64(rounds))], meds[int(0.975*float64(rounds))-1]
}
