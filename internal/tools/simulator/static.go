package main

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"sort"
)

// config is one config of the mig-parted file and a node's devices of
// each type under it.
type config struct {
	name   string
	counts []int
}

// window is the measured part of a run: jobs submitted in [from, to)
// count; the run ends at end (arrivals go on until then).
type window struct{ from, to, end float64 }

func (w window) measured(j *job) bool { return j.submit >= w.from && j.submit < w.to }

// typeStats is a type's measured jobs under one number of devices.
type typeStats struct {
	sumWait   float64
	started   int
	unstarted int
}

// statics evaluates static layouts. With no change of layout, each type is
// a queue of its own, first come first served, with as many servers as the
// fleet has devices of it, so its waits are worked out once per count.
type statics struct {
	byType [][]int // each type's jobs, in submit order
	jobs   []job
	win    window
	cache  []map[int]typeStats
}

func newStatics(jobs []job, ntypes int, win window) *statics {
	s := &statics{byType: make([][]int, ntypes), jobs: jobs, win: win, cache: make([]map[int]typeStats, ntypes)}
	for i := range jobs {
		s.byType[jobs[i].typ] = append(s.byType[jobs[i].typ], i)
	}
	for t := range s.cache {
		s.cache[t] = map[int]typeStats{}
	}
	return s
}

// floatHeap is the times at which a type's devices come free.
type floatHeap []float64

func (h floatHeap) Len() int           { return len(h) }
func (h floatHeap) Less(a, b int) bool { return h[a] < h[b] }
func (h floatHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *floatHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *floatHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// typeRun is one type's queue with c devices: its measured jobs'
// stats, and with waits, their waits.
func (s *statics) typeRun(t, c int, waits *[]float64) typeStats {
	if c > len(s.byType[t]) {
		c = len(s.byType[t]) // more devices than jobs: none waits
	}
	if st, ok := s.cache[t][c]; ok && waits == nil {
		return st
	}
	var st typeStats
	free := make(floatHeap, c)
	for _, i := range s.byType[t] {
		j := &s.jobs[i]
		start := math.Inf(1)
		if c > 0 {
			start = max(j.submit, free[0])
		}
		if start > s.win.end {
			// First come first served: no later job starts either.
			if s.win.measured(j) {
				st.unstarted++
			}
			continue
		}
		free[0] = start + j.dur
		heap.Fix(&free, 0)
		if s.win.measured(j) {
			st.sumWait += start - j.submit
			st.started++
			if waits != nil {
				*waits = append(*waits, start-j.submit)
			}
		}
	}
	s.cache[t][c] = st
	return st
}

// score is what the static search minimises: unstarted measured jobs
// first, then the mean wait.
type score struct {
	unstarted int
	mean      float64
}

func (a score) less(b score) bool {
	if a.unstarted != b.unstarted {
		return a.unstarted < b.unstarted
	}
	return a.mean < b.mean-1e-9
}

// layoutScore scores a static layout given as a count of nodes per
// config (x[k] nodes of configs[k]).
func (s *statics) layoutScore(configs []config, x []int) score {
	var sum float64
	var started, unstarted int
	for t := range s.byType {
		c := 0
		for k, n := range x {
			c += n * configs[k].counts[t]
		}
		st := s.typeRun(t, c, nil)
		sum += st.sumWait
		started += st.started
		unstarted += st.unstarted
	}
	sc := score{unstarted: unstarted}
	if started > 0 {
		sc.mean = sum / float64(started)
	}
	return sc
}

// distinctConfigs are the configs with distinct counts of the types
// jobs ask for, those offering none of them left out: the static search
// has nothing to gain from the others.
func distinctConfigs(configs []config, wanted []bool) []config {
	var out []config
	seen := map[string]bool{}
	for _, c := range configs {
		key := ""
		any := false
		for t, n := range c.counts {
			if wanted[t] {
				key += string(rune('0'+n)) + ","
				any = any || n > 0
			}
		}
		if any && !seen[key] {
			seen[key] = true
			out = append(out, c)
		}
	}
	return out
}

// searchStatic finds the best static layout of nodes nodes: a local search
// (moving one or two nodes to other configs) from every uniform layout, the
// LP's layout and random restarts; the best end point wins.
func (s *statics) searchStatic(configs []config, nodes int, lp []float64, seed uint64, restarts int) ([]int, score) {
	k := len(configs)
	var starts [][]int
	for i := range k {
		x := make([]int, k)
		x[i] = nodes
		starts = append(starts, x)
	}
	if lp != nil {
		starts = append(starts, roundLayout(lp, nodes))
	}
	r := rand.New(rand.NewPCG(seed, 0x57a7))
	for range restarts {
		x := make([]int, k)
		for range nodes {
			x[r.IntN(k)]++
		}
		starts = append(starts, x)
	}
	var best []int
	var bestScore score
	for _, x := range starts {
		x, sc := s.descend(configs, x)
		if best == nil || sc.less(bestScore) {
			best, bestScore = x, sc
		}
	}
	return best, bestScore
}

// descend moves to the best neighbour (one node or two moved) while
// that improves the score.
func (s *statics) descend(configs []config, x []int) ([]int, score) {
	x = append([]int(nil), x...)
	cur := s.layoutScore(configs, x)
	k := len(configs)
	for {
		var bestX []int
		best := cur
		try := func(y []int) {
			if sc := s.layoutScore(configs, y); sc.less(best) {
				best, bestX = sc, append([]int(nil), y...)
			}
		}
		y := append([]int(nil), x...)
		for a := range k {
			if y[a] == 0 {
				continue
			}
			y[a]--
			for b := range k {
				if b == a {
					continue
				}
				y[b]++
				try(y)
				for c := range k {
					if y[c] == 0 || c == b {
						continue
					}
					y[c]--
					for d := range k {
						if d != c && d != a {
							y[d]++
							try(y)
							y[d]--
						}
					}
					y[c]++
				}
				y[b]--
			}
			y[a]++
		}
		if bestX == nil {
			return x, cur
		}
		x, cur = bestX, best
	}
}

// exhaustive scores every static layout of nodes nodes: the proof, on
// small fleets, that the search is not trapped.
func (s *statics) exhaustive(configs []config, nodes int) ([]int, score) {
	k := len(configs)
	x := make([]int, k)
	var best []int
	var bestScore score
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == k-1 {
			x[i] = left
			if sc := s.layoutScore(configs, x); best == nil || sc.less(bestScore) {
				best, bestScore = append([]int(nil), x...), sc
			}
			return
		}
		for n := 0; n <= left; n++ {
			x[i] = n
			rec(i+1, left-n)
		}
	}
	if k > 0 {
		rec(0, nodes)
	}
	return best, bestScore
}

// roundLayout rounds a fractional layout to whole nodes, largest
// remainders first.
func roundLayout(frac []float64, nodes int) []int {
	x := make([]int, len(frac))
	sum := 0
	type rem struct {
		k int
		r float64
	}
	var rems []rem
	for k, f := range frac {
		x[k] = int(math.Floor(f))
		sum += x[k]
		rems = append(rems, rem{k, f - math.Floor(f)})
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for i := 0; sum < nodes; i++ {
		x[rems[i%len(rems)].k]++
		sum++
	}
	return x
}

// capacityLP is the linear programme of the best layout for a mix: it
// returns the largest f for which a fractional layout of nodes nodes offers
// every type f times its demand (mean busy devices), and that layout.
func capacityLP(configs []config, demand []float64, nodes int) (float64, []float64) {
	k, nt := len(configs), len(demand)
	// Variables x_0..x_{k-1}, f; constraints f*d_t - sum_k x_k a_kt <= 0
	// and sum_k x_k <= nodes; maximise f. Every right side is >= 0, so
	// the origin is a feasible basis and one phase of simplex does.
	nv := k + 1
	// The demand is scaled to a largest entry of 1 and f back, so that
	// the simplex's absolute tolerances hold for a demand of any unit.
	scale := 0.0
	for _, d := range demand {
		scale = max(scale, d)
	}
	if scale <= 0 {
		scale = 1
	}
	var rows [][]float64
	var rhs []float64
	for t := range nt {
		if demand[t] <= 0 {
			continue
		}
		row := make([]float64, nv)
		for i, c := range configs {
			row[i] = -float64(c.counts[t])
		}
		row[k] = demand[t] / scale
		rows = append(rows, row)
		rhs = append(rhs, 0)
	}
	row := make([]float64, nv)
	for i := range k {
		row[i] = 1
	}
	rows = append(rows, row)
	rhs = append(rhs, float64(nodes))
	obj := make([]float64, nv)
	obj[k] = 1
	x := simplex(rows, rhs, obj)
	return x[k] / scale, x[:k]
}

// simplex maximises obj·x subject to rows·x <= rhs, x >= 0, with rhs
// >= 0, by the tableau method with Bland's rule (no cycling).
func simplex(rows [][]float64, rhs, obj []float64) []float64 {
	m, n := len(rows), len(obj)
	// Tableau: m rows of n variables, m slacks, rhs.
	w := n + m + 1
	tab := make([][]float64, m+1)
	for i := range m {
		tab[i] = make([]float64, w)
		copy(tab[i], rows[i])
		tab[i][n+i] = 1
		tab[i][w-1] = rhs[i]
	}
	tab[m] = make([]float64, w)
	for j := range n {
		tab[m][j] = -obj[j]
	}
	basis := make([]int, m)
	for i := range basis {
		basis[i] = n + i
	}
	const eps = 1e-9
	for iter := 0; iter < 10000; iter++ {
		col := -1
		for j := 0; j < w-1; j++ {
			if tab[m][j] < -eps {
				col = j
				break
			}
		}
		if col < 0 {
			break
		}
		row := -1
		bestRatio := math.Inf(1)
		for i := range m {
			if tab[i][col] > eps {
				r := tab[i][w-1] / tab[i][col]
				if r < bestRatio-eps || (r < bestRatio+eps && row >= 0 && basis[i] < basis[row]) {
					bestRatio, row = r, i
				}
			}
		}
		if row < 0 {
			break // unbounded: not with these constraints
		}
		p := tab[row][col]
		for j := range w {
			tab[row][j] /= p
		}
		for i := range m + 1 {
			if i != row && tab[i][col] != 0 {
				f := tab[i][col]
				for j := range w {
					tab[i][j] -= f * tab[row][j]
				}
			}
		}
		basis[row] = col
	}
	x := make([]float64, n)
	for i, b := range basis {
		if b < n {
			x[b] = tab[i][w-1]
		}
	}
	return x
}

// oracleBound bounds what any policy changing whole nodes could reach: each
// slot of the window gets the best static layout for its jobs, at once and
// empty. It returns each measured job's start there (-1: never, or unmeasured).
func oracleBound(jobs []job, ntypes int, win window, configs []config, nodes int, slot float64, seed uint64) []float64 {
	starts := make([]float64, len(jobs))
	for i := range starts {
		starts[i] = -1
	}
	for from := win.from; from < win.to; from += slot {
		to := min(from+slot, win.to)
		var part []job
		var index []int // part's jobs in jobs
		for i, j := range jobs {
			if j.submit >= from && j.submit < to+slot/2 {
				part = append(part, j)
				index = append(index, i)
			}
		}
		w := window{from: from, to: to, end: to + (win.end - win.to)}
		st := newStatics(part, ntypes, w)
		x, _ := st.searchStatic(configs, nodes, nil, seed, 2)
		counts := make([]int, ntypes)
		for t := range ntypes {
			for k, n := range x {
				counts[t] += n * configs[k].counts[t]
			}
		}
		s := staticStarts(&instance{jobs: part, win: w}, st, counts)
		for k, i := range index {
			if w.measured(&part[k]) {
				starts[i] = s[k]
			}
		}
	}
	return starts
}
