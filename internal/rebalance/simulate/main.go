// Command simulate replays a synthetic MIG job trace through a
// discrete-event model of a Slurm fleet, once with rebalance proposing
// configs as the queue changes and once for every static layout of a
// mig-parted file (plus the best static mix found in hindsight), and
// prints mean and 95th-percentile queue wait and used memory slices, as
// docs/rebalance.md reports them.
//
//	go run ./internal/rebalance/simulate -seed 1 \
//	  -mig-config "$(go list -m -f '{{.Dir}}' github.com/NVIDIA/mig-parted)/deployments/systemd/config-default.yaml"
//
// The model, kept simple on purpose:
//   - N nodes, each the real H100 of testdata/real/h100-snapshot-v2 eight
//     times over; a node's Gres= counts under each config are migplan's.
//   - Jobs ask one node for one MIG device of 1g.10gb, 2g.20gb, 3g.40gb
//     or 7g.80gb; they arrive as a Poisson process and run for an
//     exponential time. The mix of sizes changes from phase to phase (a
//     day of small inference jobs, a night of training), which is the
//     demand a static layout cannot follow.
//   - The scheduler starts queued jobs oldest first wherever a device of
//     their type is free (first node in order), as Slurm does with
//     backfill and no reservations.
//   - Every tick the policy runs rebalance.Propose on the nodes (a node
//     with any job is busy) and the queue. A change takes the node out
//     for the drain time (zero: the policy only changes idle nodes) plus
//     a fixed reconfiguration time.
package main

import (
	"container/heap"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/rebalance"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// size is a job's MIG device: its Slurm type and memory slices.
type size struct {
	typ    string
	slices int
}

var sizes = []size{{"h100_1g.10gb", 1}, {"h100_2g.20gb", 2}, {"h100_3g.40gb", 4}, {"h100_7g.80gb", 8}}

// phases are the mixes of sizes (shares of jobs) the trace moves between.
var phases = [][]float64{
	{0.80, 0.15, 0.05, 0.00}, // inference: small devices
	{0.10, 0.10, 0.40, 0.40}, // training: large ones
	{0.30, 0.30, 0.30, 0.10}, // a bit of everything
}

type params struct {
	seed          uint64
	nodes         int
	gpus          int
	hours         float64
	phaseHours    float64
	meanMinutes   float64
	load          float64
	reconfMinutes float64
	tick          float64 // minutes
	maxNodes      int
	minWait       float64 // minutes
	keep          float64
	policyOnly    bool
}

type job struct {
	id       int
	submit   float64 // minutes
	duration float64
	size     int // index into sizes
	start    float64
}

// trace makes the jobs: Poisson arrivals at the rate that offers load of
// the fleet's memory slices, each phase drawing sizes from its mix.
func trace(p params) []job {
	r := rand.New(rand.NewPCG(p.seed, 0x5eed))
	order := r.Perm(len(phases))
	capacity := float64(p.nodes * p.gpus * 8)
	var out []job
	t := 0.0
	for id := 1; ; id++ {
		phase := order[int(t/(p.phaseHours*60))%len(order)]
		mix := phases[phase]
		mean := 0.0
		for i, s := range sizes {
			mean += mix[i] * float64(s.slices)
		}
		rate := p.load * capacity / (mean * p.meanMinutes) // jobs a minute
		t += r.ExpFloat64() / rate
		if t >= p.hours*60 {
			return out
		}
		u, k := r.Float64(), 0
		for k < len(mix)-1 && u >= mix[k] {
			u -= mix[k]
			k++
		}
		out = append(out, job{id: id, submit: t, duration: r.ExpFloat64() * p.meanMinutes, size: k, start: -1})
	}
}

type node struct {
	counts []int // devices of each size
	used   []int
	until  float64 // out for reconfiguration until then
	config string
}

type event struct {
	at   float64
	kind int // 0 end of a job, 1 arrival, 2 node back, 3 tick
	job  int
	node int
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(a, b int) bool {
	if e[a].at != e[b].at {
		return e[a].at < e[b].at
	}
	return e[a].kind < e[b].kind
}
func (e events) Swap(a, b int) { e[a], e[b] = e[b], e[a] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// result is one run's figures.
type result struct {
	name             string
	meanWait, p95    float64 // minutes
	used             float64 // share of memory slices in use, over the run
	started, waiting int
	reconfs          int
}

// countsOf maps a node's Gres= counts to the sizes.
func countsOf(gres []slurmconf.GresCount) []int {
	out := make([]int, len(sizes))
	for _, c := range gres {
		for i, s := range sizes {
			if strings.EqualFold(c.Type, s.typ) {
				out[i] += c.Count
			}
		}
	}
	return out
}

// simulate runs the trace on a fleet starting with layout (a config per
// node); with policy, rebalance changes it as it goes.
func simulate(p params, jobs []job, layout []string, opts *rebalance.Options, policy bool) result {
	jobs = append([]job(nil), jobs...)
	byConfig := map[string][]slurmconf.GresCount{}
	for _, o := range opts.Configs {
		byConfig[o.Config] = o.Counts
	}
	nodes := make([]node, p.nodes)
	for i := range nodes {
		nodes[i] = node{counts: countsOf(byConfig[layout[i]]), used: make([]int, len(sizes)), config: layout[i]}
	}
	ev := &events{}
	for i := range jobs {
		heap.Push(ev, event{at: jobs[i].submit, kind: 1, job: i})
	}
	if policy {
		heap.Push(ev, event{at: p.tick, kind: 3})
	}
	var queue []int // waiting jobs, oldest first
	end := p.hours * 60
	usedSlices, last, busySlices := 0.0, 0.0, 0
	reconfs := 0
	schedule := func(now float64) {
		kept := queue[:0]
		for _, j := range queue {
			s := jobs[j].size
			placed := false
			for n := range nodes {
				if nodes[n].until <= now && nodes[n].used[s] < nodes[n].counts[s] {
					nodes[n].used[s]++
					jobs[j].start = now
					busySlices += sizes[s].slices
					heap.Push(ev, event{at: now + jobs[j].duration, kind: 0, job: j, node: n})
					placed = true
					break
				}
			}
			if !placed {
				kept = append(kept, j)
			}
		}
		queue = kept
	}
	for ev.Len() > 0 {
		e := heap.Pop(ev).(event)
		if e.at > end {
			break
		}
		usedSlices += float64(busySlices) * (e.at - last)
		last = e.at
		switch e.kind {
		case 0:
			nodes[e.node].used[jobs[e.job].size]--
			busySlices -= sizes[jobs[e.job].size].slices
		case 1:
			queue = append(queue, e.job)
		case 3:
			reconfs += propose(p, e.at, nodes, jobs, queue, opts, byConfig, ev)
			heap.Push(ev, event{at: e.at + p.tick, kind: 3})
		}
		schedule(e.at)
	}
	usedSlices += float64(busySlices) * (end - last)
	var waits []float64
	r := result{reconfs: reconfs}
	for _, j := range jobs {
		switch {
		case j.start >= 0:
			waits = append(waits, j.start-j.submit)
			r.started++
		default: // still waiting at the end: its wait so far
			waits = append(waits, end-j.submit)
			r.waiting++
		}
	}
	sort.Float64s(waits)
	sum := 0.0
	for _, w := range waits {
		sum += w
	}
	if len(waits) > 0 {
		r.meanWait = sum / float64(len(waits))
		r.p95 = waits[int(math.Ceil(0.95*float64(len(waits))))-1]
	}
	r.used = usedSlices / (end * float64(p.nodes*p.gpus*8))
	return r
}

// propose runs rebalance on the model's state and applies its changes.
func propose(p params, now float64, nodes []node, jobs []job, queue []int, opts *rebalance.Options,
	byConfig map[string][]slurmconf.GresCount, ev *events) int {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m float64) time.Time { return epoch.Add(time.Duration(m * float64(time.Minute))) }
	rn := make([]rebalance.Node, len(nodes))
	for i, n := range nodes {
		rn[i] = rebalance.Node{Name: fmt.Sprintf("n%03d", i), Current: byConfig[n.config], Options: opts}
		busy := 0
		for _, u := range n.used {
			busy += u
		}
		if busy > 0 || n.until > now {
			rn[i].Why = "busy"
		}
	}
	rj := make([]rebalance.Job, len(queue))
	for i, j := range queue {
		rj[i] = rebalance.Job{ID: fmt.Sprint(jobs[j].id), Submit: at(jobs[j].submit), Nodes: 1,
			GPU: []rebalance.Request{{Type: sizes[jobs[j].size].typ, Count: 1}}}
	}
	prop := rebalance.Propose(rn, rj, rebalance.Limits{MaxNodes: p.maxNodes,
		MinWait: time.Duration(p.minWait * float64(time.Minute)), Keep: p.keep, Now: at(now)})
	for _, c := range prop.Changes {
		var i int
		fmt.Sscanf(c.Node, "n%d", &i)
		nodes[i].config = c.Config
		nodes[i].counts = countsOf(byConfig[c.Config])
		nodes[i].until = now + p.reconfMinutes // drain time is 0: the node is idle
		heap.Push(ev, event{at: nodes[i].until, kind: 2, node: i})
	}
	return len(prop.Changes)
}

func main() {
	var p params
	var cfgPath, snapPath, loads string
	flag.Uint64Var(&p.seed, "seed", 1, "trace seed")
	flag.IntVar(&p.nodes, "nodes", 16, "nodes")
	flag.IntVar(&p.gpus, "gpus", 8, "H100s a node")
	flag.Float64Var(&p.hours, "hours", 24, "simulated hours")
	flag.Float64Var(&p.phaseHours, "phase-hours", 8, "hours of each demand phase")
	flag.Float64Var(&p.meanMinutes, "mean-minutes", 60, "mean job duration")
	flag.StringVar(&loads, "loads", "0.5,0.8,0.95", "offered loads (share of memory slices)")
	flag.Float64Var(&p.reconfMinutes, "reconf-minutes", 5, "fixed minutes a reconfiguration takes")
	flag.Float64Var(&p.tick, "tick", 5, "minutes between rebalance runs")
	flag.IntVar(&p.maxNodes, "max-nodes", 2, "rebalance's max nodes per run")
	flag.Float64Var(&p.minWait, "min-wait", 5, "rebalance's min wait, minutes")
	flag.Float64Var(&p.keep, "keep", 0, "rebalance's keep share")
	flag.StringVar(&cfgPath, "mig-config", "", "mig-parted config file (NVIDIA's config-default.yaml)")
	flag.BoolVar(&p.policyOnly, "policy-only", false, "run only the policy, not the static layouts")
	flag.StringVar(&snapPath, "snapshot", "testdata/real/h100-snapshot-v2/snapshot.json", "a one-GPU H100 snapshot")
	flag.Parse()
	if err := run(p, cfgPath, snapPath, loads); err != nil {
		fmt.Fprintln(os.Stderr, "simulate:", err)
		os.Exit(2)
	}
}

func run(p params, cfgPath, snapPath, loads string) error {
	if cfgPath == "" {
		return fmt.Errorf("-mig-config is needed")
	}
	snap, err := model.LoadSnapshot(snapPath)
	if err != nil {
		return err
	}
	gpu := snap.GPUs[0]
	snap.GPUs = nil
	for i := range p.gpus {
		g := gpu
		g.Index, g.Minor = i, i
		snap.GPUs = append(snap.GPUs, g)
	}
	cfg, err := migplan.ReadConfig(cfgPath)
	if err != nil {
		return err
	}
	ev := &rebalance.Evaluator{Gres: gresgen.Options{TypeStyle: gresgen.StyleModel}}
	for _, name := range cfg.Names() {
		sel, _ := cfg.Select(name)
		ev.Configs = append(ev.Configs, sel)
	}
	_, opts, err := ev.Node(snap)
	if err != nil {
		return err
	}
	fmt.Printf("seed %d, %d nodes x %d H100, %g h, phases of %g h, mean job %g min, reconfiguration %g min, rebalance every %g min (max %d nodes, min wait %g min, keep %g)\n",
		p.seed, p.nodes, p.gpus, p.hours, p.phaseHours, p.meanMinutes, p.reconfMinutes, p.tick, p.maxNodes, p.minWait, p.keep)
	fmt.Printf("configs the H100 holds: %d of %d\n\n", len(opts.Configs), len(cfg.Names()))
	fmt.Println("| load | layout | mean wait (min) | p95 wait (min) | used memory slices | still waiting | reconf./node/h |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, ls := range strings.Split(loads, ",") {
		var load float64
		fmt.Sscan(ls, &load)
		p.load = load
		jobs := trace(p)
		var rows []result
		uniform := func(c string) []string {
			l := make([]string, p.nodes)
			for i := range l {
				l[i] = c
			}
			return l
		}
		bestUniform := result{meanWait: math.Inf(1)}
		for _, o := range opts.Configs {
			if p.policyOnly {
				break
			}
			r := simulate(p, jobs, uniform(o.Config), opts, false)
			r.name = "static " + o.Config
			rows = append(rows, r)
			if r.meanWait < bestUniform.meanWait {
				bestUniform = r
			}
		}
		best := result{meanWait: math.NaN()}
		var bestLayout []string
		if !p.policyOnly {
			var mix string
			best, mix, bestLayout = hindsight(p, jobs, opts, uniform(strings.TrimPrefix(bestUniform.name, "static ")))
			best.name = "best static in hindsight: " + mix
			rows = append(rows, best)
		}
		start := uniform("all-balanced")
		pol := simulate(p, jobs, start, opts, true)
		pol.name = "rebalance (from all-balanced)"
		rows = append(rows, pol)
		if bestLayout != nil {
			// The policy from the best static mix: what rebalance adds to a
			// fleet that already has the layout hindsight would choose.
			r := simulate(p, jobs, bestLayout, opts, true)
			r.name = "rebalance (from the best static mix)"
			rows = append(rows, r)
		}
		for _, r := range rows {
			fmt.Printf("| %.0f%% | %s | %.1f | %.1f | %.1f%% | %d | %.2f |\n", load*100, r.name, r.meanWait, r.p95, r.used*100, r.waiting,
				float64(r.reconfs)/float64(p.nodes)/p.hours)
		}
		fmt.Printf("| %.0f%% | rebalance vs best static | %+.1f%% | | | | |\n", load*100, (pol.meanWait/best.meanWait-1)*100)
	}
	return nil
}

// hindsight searches the static mixes (a config per node, fixed for
// the run) for the lowest mean wait on this very trace: from the best
// uniform layout, it moves nodes from one config to another while that
// lowers the mean wait, a sixteenth of the fleet at a time, then half as
// many, down to one. It is a local search, so the mix it finds is the
// best it found, not proven the best there is.
func hindsight(p params, jobs []job, opts *rebalance.Options, layout []string) (result, string, []string) {
	best := simulate(p, jobs, layout, opts, false)
	// Nodes move step at a time, a sixteenth of the fleet at first, then
	// fewer; with 16 nodes, one at a time from the start.
	for step := max(1, len(layout)/16); step >= 1; step /= 2 {
		for improved := true; improved; {
			improved = false
			for _, from := range distinct(layout) {
				for _, o := range opts.Configs {
					if o.Config == from {
						continue
					}
					try := append([]string(nil), layout...)
					moved := 0
					for i := range try {
						if try[i] == from && moved < step {
							try[i] = o.Config
							moved++
						}
					}
					if moved < step {
						continue
					}
					sort.Strings(try)
					if r := simulate(p, jobs, try, opts, false); r.meanWait < best.meanWait-1e-9 {
						best, layout, improved = r, try, true
					}
				}
			}
		}
	}
	counts := map[string]int{}
	for _, c := range layout {
		counts[c]++
	}
	var parts []string
	for _, c := range distinct(layout) {
		parts = append(parts, fmt.Sprintf("%d x %s", counts[c], c))
	}
	return best, strings.Join(parts, " + "), layout
}

func distinct(layout []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range layout {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}
