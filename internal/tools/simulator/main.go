// Command simulate is the benchmark of rebalance's policy: it replays a
// MIG job trace (a CSV file or a built-in generator) through an event
// model of a fleet, for the best static layout, every uniform static
// layout, and the policy (rebalance.Decide) starting from the best
// static layout, and prints their waits over the measured jobs
// (docs/rebalance.md says how to read them).
//
//	go run ./internal/tools/simulator -workload phases -load 0.8 -seeds 10
//	go run ./internal/tools/simulator -trace jobs.csv -json
//
// The model:
//   - N nodes, each the snapshot's first GPU -gpus times over; a node's
//     devices under each config of the mig-parted file are migplan's.
//   - A job asks one node for one device of one type and runs its
//     duration. Jobs of a type start first come first served on any
//     node in service with a free device of that type.
//   - Load is of what the best layout can serve: 1 is the largest
//     arrival rate of the trace's average mix that any fractional layout
//     (a linear programme) could carry.
//   - Jobs submitted in the measured window count; arrivals go on
//     through the cooldown, and a measured job still waiting at the end
//     is unstarted (a size with more than 0.5% unstarted fails the run).
package main

import (
	"container/heap"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/rebalance"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
)

type options struct {
	trace, workload, snapshot, migConfig, start string
	nodes, gpus, seeds, restarts                int
	load                                        float64
	loadSet                                     bool
	seed                                        uint64
	warmup, measure, cooldown, mean             float64
	dyn                                         dynParams
	json                                        bool
	oracle                                      float64
	// granularity is what changes its layout at once: "node", or "gpu"
	// (one GPU drains and changes while the node's others run on). At
	// gpu, the fleet is modelled as nodes*gpus units of one GPU, and
	// unit says how many make a node, for the per-node figures.
	granularity string
	unit        int
	// notes is where a note on the trace goes (stderr; nil: nowhere).
	notes io.Writer
	// realPeriods makes a generator's periods (8 h phases, 6 h random
	// mixes, the day) minutes of the rescaled run, not of arrivals.
	realPeriods bool
}

func main() {
	var o options
	lim := rebalance.DefaultPolicyLimits()
	flag.StringVar(&o.trace, "trace", "", "a CSV trace: submit_min,duration_min,time_limit_min,profile (in place of -workload)")
	flag.StringVar(&o.workload, "workload", "phases", "a built-in generator: "+workloadNames())
	flag.StringVar(&o.snapshot, "snapshot", "testdata/real/h100-snapshot-v2/snapshot.json", "a node snapshot: its first GPU, -gpus times, is each node")
	flag.StringVar(&o.migConfig, "mig-config", "", "mig-parted config file (default: NVIDIA's config-default.yaml of the mig-parted module)")
	flag.StringVar(&o.start, "start", "static-best", "the policy's starting layout: static-best, a config, or N*CONFIG+M*CONFIG")
	flag.IntVar(&o.nodes, "nodes", 16, "nodes")
	flag.IntVar(&o.gpus, "gpus", 8, "GPUs a node")
	flag.Float64Var(&o.load, "load", 0.8, "offered load, of what the best layout can serve (a -trace is rescaled in time only when given)")
	flag.Uint64Var(&o.seed, "seed", 1, "first seed (trace, restarts, failures)")
	flag.IntVar(&o.seeds, "seeds", 1, "seeds to run from -seed on; more than one prints a summary with a bootstrap interval")
	flag.IntVar(&o.restarts, "restarts", 8, "random restarts of the static search")
	// The window's defaults depend on the input, so the flags start
	// unset (-1), and their help says the defaults rather than flag's -1.
	o.warmup, o.measure, o.cooldown = -1, -1, -1
	for _, w := range []struct {
		name, usage string
		v           *float64
	}{
		{"warmup", "`minutes` before the measured window (default 1440, or 10% of a trace; 0 when all its jobs arrive at once)", &o.warmup},
		{"measure", "`minutes` of the measured window (default 2880, or 80% of a trace; 1 when all its jobs arrive at once)", &o.measure},
		{"cooldown", "`minutes` after it, arrivals going on (default 480, or the rest of a trace; the sum of its runs when all its jobs arrive at once)", &o.cooldown},
	} {
		flag.Func(w.name, w.usage, func(s string) (err error) {
			*w.v, err = strconv.ParseFloat(s, 64)
			return err
		})
	}
	flag.Float64Var(&o.mean, "mean", 60, "mean run of generated jobs, minutes")
	flag.Float64Var(&lim.Reconfig, "reconfig-min", lim.Reconfig, "minutes a node is out to change its layout once empty")
	flag.Float64Var(&o.dyn.fail, "reconfig-fail", 0, "chance that a change fails (the node comes back as it was)")
	flag.Float64Var(&o.dyn.tick, "tick", 10, "minutes between the policy's decisions")
	flag.Float64Var(&o.dyn.window, "window", 60, "minutes of arrivals the policy's rates are taken over")
	flag.Float64Var(&o.dyn.long, "long-window", 1440, "minutes of arrivals the policy's long-run rates are taken over")
	flag.Float64Var(&lim.LongLoad, "long-load", lim.LongLoad, "most load, at its long-run rate, a type losing devices may be left with")
	flag.Float64Var(&lim.Blend, "blend", lim.Blend, "minutes over which the forecast moves from the recent rates to the long-run ones")
	flag.Float64Var(&lim.Undo, "undo", lim.Undo, "minutes a change is reckoned to last, against its cost should demand go back to its long-run rates")
	flag.BoolVar(&o.dyn.noPeak, "no-peak", false, "let a type lose devices below the most of it in use at once over the long window")
	flag.Float64Var(&lim.Horizon, "horizon", lim.Horizon, "minutes of waiting the policy forecasts")
	flag.Float64Var(&lim.MaxBusy, "max-busy", lim.MaxBusy, "largest share of busy devices on a node the policy drains")
	flag.IntVar(&lim.MaxDraining, "max-draining", lim.MaxDraining, "nodes draining or changing at once")
	flag.Float64Var(&lim.Dwell, "dwell", lim.Dwell, "minutes a node keeps a config before it may change again")
	flag.Float64Var(&lim.MinGain, "min-gain", lim.MinGain, "least waiting saved (job-minutes over the horizon) for a change")
	flag.Float64Var(&lim.MinGainShare, "min-gain-share", lim.MinGainShare, "least share of the forecast waiting saved for a change")
	flag.Float64Var(&o.oracle, "oracle", 0, "also print a bound: the best static layout of each slot of this many minutes, switched instantly (text output)")
	flag.StringVar(&o.granularity, "granularity", "node", "what changes its layout at once: node, or gpu (one GPU drains and changes while the node's other GPUs keep running; the static layouts are then per GPU too)")
	flag.BoolVar(&o.realPeriods, "real-periods", false, "a generator's periods (8 h phases, 6 h random mixes, the day) are minutes of the run at the load asked for; without it they are minutes at one arrival a minute, before the load rescales time")
	flag.BoolVar(&lim.SameCount, "same-count", false, "with -granularity gpu: a GPU changes only to a config of as many devices, as Slurm allows on a live node (a change of the node's GPU count kills its jobs); with -max-busy 0, only idle GPUs change")
	flag.BoolVar(&o.json, "json", false, "print one JSON object per policy and seed, a line each")
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { o.loadSet = o.loadSet || f.Name == "load" })
	o.dyn.lim = lim
	o.notes = os.Stderr
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "simulator:", err)
		os.Exit(2)
	}
}

func workloadNames() string {
	var names []string
	for _, w := range workloads {
		names = append(names, w.name)
	}
	return strings.Join(names, ", ")
}

// fleetDef is the fleet's types and configs, worked out with migplan.
type fleetDef struct {
	types   []string // Slurm GRES types, lower case
	configs []config
	// sizes are the types' shares of a GPU, for a trace that asks for a
	// fraction of one.
	sizes []size
}

func loadFleet(o options) (*fleetDef, error) {
	snap, err := snapshot.Load(o.snapshot)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !filepath.IsAbs(o.snapshot) {
			return nil, fmt.Errorf("%v (a relative -snapshot is read from the current directory: run from the repository root, or give the file)", err)
		}
		return nil, err
	}
	if len(snap.GPUs) == 0 {
		return nil, fmt.Errorf("%s: no GPUs", o.snapshot)
	}
	gpu := snap.GPUs[0]
	snap.GPUs = nil
	for i := range o.gpus {
		g := gpu
		g.Index, g.Minor = i, i
		snap.GPUs = append(snap.GPUs, g)
	}
	path := o.migConfig
	if path == "" {
		dir, err := migPartedDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "deployments/systemd/config-default.yaml")
	}
	cfg, err := migplan.ReadConfig(path)
	if err != nil {
		return nil, err
	}
	ev := &rebalance.Evaluator{Gres: gresgen.Options{TypeStyle: gresgen.StyleModel}}
	for _, name := range cfg.Names() {
		sel, _ := cfg.Select(name)
		ev.Configs = append(ev.Configs, sel)
	}
	_, opts, err := ev.Node(snap)
	if err != nil {
		return nil, err
	}
	if len(opts.Configs) == 0 {
		return nil, fmt.Errorf("%s: no config of %s holds the GPUs of %s", path, path, o.snapshot)
	}
	f := &fleetDef{}
	index := map[string]int{}
	for _, op := range opts.Configs {
		for _, c := range op.Counts {
			t := strings.ToLower(c.Type)
			if _, ok := index[t]; !ok {
				index[t] = len(f.types)
				f.types = append(f.types, t)
			}
		}
	}
	f.sizes = sizesOf(f.types, gpu.MigProfiles())
	for _, op := range opts.Configs {
		c := config{name: op.Config, counts: make([]int, len(f.types))}
		for _, g := range op.Counts {
			c.counts[index[strings.ToLower(g.Type)]] += g.Count
		}
		f.configs = append(f.configs, c)
	}
	return f, nil
}

// migPartedDir is the mig-parted module's directory in the module
// cache, at the version this program was built with: its default config
// file is read from there, not copied.
func migPartedDir() (string, error) {
	const mod = "github.com/NVIDIA/mig-parted"
	version := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == mod {
				version = d.Version
			}
		}
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			home, _ := os.UserHomeDir()
			gopath = filepath.Join(home, "go")
		}
		cache = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
	}
	// The module cache spells an upper-case letter as ! and the letter.
	var esc strings.Builder
	for _, r := range mod {
		if r >= 'A' && r <= 'Z' {
			esc.WriteByte('!')
			r += 'a' - 'A'
		}
		esc.WriteRune(r)
	}
	dir := filepath.Join(cache, esc.String()+"@"+version)
	if version == "" {
		return "", fmt.Errorf("no -mig-config, and this build does not say its mig-parted version")
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no -mig-config, and the mig-parted module is not in the module cache (%v)", err)
	}
	return dir, nil
}

// profileOf is a type's name without the model: the size a trace names.
func profileOf(typ string) string {
	if _, p, ok := strings.Cut(typ, "_"); ok {
		return p
	}
	return typ
}

// resolve maps a trace's profile to a type of the fleet: the type
// itself, its profile (1g.10gb), a generator's prefix (1g.: the
// smallest such profile), a whole GPU's model name, or a share of one
// GPU from 0 to 1 (byFraction).
func (f *fleetDef) resolve(profile string) (int, bool) {
	if share, ok := gpuFraction(profile); ok {
		if share <= 0 || share > 1 {
			return -1, false
		}
		return f.byFraction(share)
	}
	p := migProfile(strings.ToLower(profile))
	best := -1
	for t, typ := range f.types {
		switch {
		case typ == p || profileOf(typ) == p || typ == strings.ToLower(gresgen.ShortModel(profile)):
			return t, true
		case strings.HasSuffix(p, ".") && strings.HasPrefix(profileOf(typ), p) && !strings.Contains(typ, "+"):
			if best < 0 || profileOf(typ) < profileOf(f.types[best]) {
				best = t
			}
		}
	}
	return best, best >= 0
}

// migProfilePattern is a MIG profile's name: compute slices, then memory.
var migProfilePattern = regexp.MustCompile(`^[1-9]g\.[0-9]+gb`)

// migProfile strips what other tools write before a MIG profile:
// Kubernetes' resource name (nvidia.com/mig-1g.10gb), the device
// plugin's (mig-1g.10gb) and nvidia-smi -L's ("MIG 1g.10gb"). Kubernetes
// names a profile with media extensions 1g.10gb.me, since a resource
// name has no '+': it is nvidia-smi's 1g.10gb+me. The profile is in
// lower case.
func migProfile(p string) string {
	for _, prefix := range []string{"nvidia.com/", "mig-", "mig "} {
		p = strings.TrimPrefix(p, prefix)
	}
	if base, ok := strings.CutSuffix(p, ".me"); ok && strings.Contains(base, "g.") {
		p = base + "+me"
	}
	return p
}

// instance is one seed's trace, ready to run.
type instance struct {
	jobs   []job
	win    window
	load   float64 // offered, of what the best layout serves
	lp     []float64
	wanted []bool
}

func makeInstance(o options, f *fleetDef, seed uint64) (*instance, error) {
	var raw []traceJob
	var err error
	warm, meas, cool := o.warmup, o.measure, o.cooldown
	if o.trace != "" {
		if raw, err = readTrace(o.trace); err != nil {
			return nil, err
		}
	} else {
		if warm < 0 {
			warm = 1440
		}
		if meas < 0 {
			meas = 2880
		}
		if cool < 0 {
			cool = 480
		}
		// At one job a minute: the time scale comes from the load below,
		// so make enough for the run at the load asked for.
		per := 1.0
		jobs := 1.3 * (warm + meas + cool) * o.load * float64(o.nodes*o.gpus) * 2 / o.mean
		if jobs > maxGenerated {
			return nil, fmt.Errorf("-workload %s: the run asks for about %.0f jobs: at most %d; shorten -warmup, -measure or -cooldown, or lower -nodes or -load", o.workload, jobs, maxGenerated)
		}
		if raw, err = generate(o.workload, seed, jobs, o.mean, per); err != nil {
			return nil, err
		}
		// With real periods, the periods are counted in minutes at the
		// rate the load gives (jobs a minute). That rate depends on the
		// average mix, which depends on how the periods fall: a few
		// draws of the same seed settle it.
		for range 8 {
			if !o.realPeriods {
				break
			}
			rate, err := rateAtLoad(o, f, raw)
			if err != nil {
				return nil, err
			}
			if math.Abs(rate-per) < 0.005*rate {
				break
			}
			per = rate
			if raw, err = generate(o.workload, seed, jobs, o.mean, per); err != nil {
				return nil, err
			}
		}
	}
	in := &instance{wanted: make([]bool, len(f.types))}
	unknown := map[string]int{}
	first := map[string]int{}
	outside, outsideLine := 0, 0
	for _, r := range raw {
		if share, ok := gpuFraction(r.profile); ok && (share <= 0 || share > 1) {
			// No GPU, or several: outside a model of one device a job.
			if outside++; outsideLine == 0 {
				outsideLine = r.line
			}
			continue
		}
		t, ok := f.resolve(r.profile)
		if !ok {
			if unknown[r.profile] == 0 {
				first[r.profile] = r.line
			}
			unknown[r.profile]++
			continue
		}
		in.wanted[t] = true
		in.jobs = append(in.jobs, job{submit: r.submit, dur: r.dur, limit: max(r.limit, r.dur), typ: t})
	}
	if len(unknown) > 0 {
		// The first line (in the file's order) of a profile the fleet
		// lacks names the error; the others are counted after it.
		var names []string
		for p := range unknown {
			names = append(names, p)
		}
		sort.Slice(names, func(a, b int) bool { return first[names[a]] < first[names[b]] })
		p := names[0]
		where := nameOf(o)
		if first[p] > 0 {
			where = fmt.Sprintf("%s:%d", o.trace, first[p])
		}
		more := ""
		if n := len(raw) - len(in.jobs) - outside - 1; n > 0 {
			more = fmt.Sprintf(" (%d more jobs ask for profiles it lacks)", n)
			if n == 1 {
				more = " (1 more job asks for a profile it lacks)"
			}
		}
		want := "want a MIG profile like 1g.10gb, a whole GPU's model name, or a share of one GPU like 0.25"
		if migProfilePattern.MatchString(migProfile(strings.ToLower(p))) {
			// A MIG profile of other GPUs (an H200's 1g.18gb): the fleet is
			// the snapshot's.
			want = "the profiles are the snapshot's GPUs': give -snapshot a node of the GPUs the trace ran on (testdata/real/h200-snapshot-v2/snapshot.json is an H200's)"
		}
		return nil, fmt.Errorf("%s: no config offers profile %q on the GPUs of %s: %s%s", where, p, o.snapshot, want, more)
	}
	if outside > 0 && o.notes != nil && seed == o.seed {
		fmt.Fprintf(o.notes, "simulator: %s: %d jobs ask for no GPU or for more than one (the first at line %d): left out, a job here runs on one device\n", o.trace, outside, outsideLine)
	}
	if len(in.jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs", nameOf(o))
	}
	work := 0.0
	for _, j := range in.jobs {
		work += j.dur
	}
	if work == 0 {
		// No demand: no layout's capacity, and no load, can be taken of it.
		return nil, fmt.Errorf("%s: every job runs 0 minutes: there is no load to measure", nameOf(o))
	}
	// The run's clock starts at the first arrival, whatever the trace's
	// origin (minutes since 1970, or negative ones before a reference):
	// the window, the policy's history and the printed minutes count
	// from there.
	t0 := in.jobs[0].submit
	for i := range in.jobs {
		in.jobs[i].submit -= t0
	}
	span := in.jobs[len(in.jobs)-1].submit
	burst := span == 0
	if burst {
		span = 1
	}
	cap, lp := capacityOf(f, in.jobs, span, o.nodes)
	if cap <= 0 {
		return nil, fmt.Errorf("%s: no layout serves the trace", nameOf(o))
	}
	in.load = 1 / cap
	if burst && o.loadSet && o.notes != nil && seed == o.seed {
		fmt.Fprintf(o.notes, "simulator: %s: every job is submitted at once: -load cannot spread them out; the run measures how the fleet serves them all, and the load printed is of that one minute\n", o.trace)
	}
	if !burst && (o.trace == "" || o.loadSet) {
		// Rescale time: submit times spread out by load/L, runs kept.
		scale := in.load / o.load
		for i := range in.jobs {
			in.jobs[i].submit *= scale
		}
		span *= scale
		cap, lp = capacityOf(f, in.jobs, span, o.nodes)
		in.load = 1 / cap
	}
	in.lp = lp
	switch {
	case o.trace != "" && burst:
		// Every job arrives at once: there is no before or after to
		// warm up or cool down in. Every job is measured, and the run
		// lasts until each could have started, one after another.
		if warm < 0 {
			warm = 0
		}
		if meas < 0 {
			meas = 1
		}
		if cool < 0 {
			cool = work
		}
	case o.trace != "":
		if warm < 0 {
			warm = 0.1 * span
		}
		if meas < 0 {
			meas = 0.8 * span
		}
		if cool < 0 {
			cool = max(0, span-warm-meas)
		}
	}
	in.win = window{from: warm, to: warm + meas, end: warm + meas + cool}
	measured := 0
	for i := range in.jobs {
		if in.win.measured(&in.jobs[i]) {
			measured++
		}
	}
	if measured == 0 {
		return nil, fmt.Errorf("%s: no job is submitted in the measured window (minutes %.1f to %.1f of the run): set -warmup and -measure, and -cooldown for the minutes its jobs may still start in", nameOf(o), in.win.from, in.win.to)
	}
	return in, nil
}

// capacityOf is capacityLP of the jobs' average demand over span:
// load 1 is that many times the demand.
func capacityOf(f *fleetDef, jobs []job, span float64, nodes int) (float64, []float64) {
	d := make([]float64, len(f.types))
	for _, j := range jobs {
		d[j.typ] += j.dur / span
	}
	return capacityLP(f.configs, d, nodes)
}

// rateAtLoad is the arrival rate (jobs a minute) a generated trace has
// once rescaled to the load asked for.
func rateAtLoad(o options, f *fleetDef, raw []traceJob) (float64, error) {
	var jobs []job
	for _, r := range raw {
		t, ok := f.resolve(r.profile)
		if !ok {
			return 0, fmt.Errorf("%s: no config offers profile %q on the GPUs of %s", nameOf(o), r.profile, o.snapshot)
		}
		jobs = append(jobs, job{submit: r.submit, dur: r.dur, typ: t})
	}
	if len(jobs) < 2 {
		return 0, fmt.Errorf("%s: no jobs", nameOf(o))
	}
	span := jobs[len(jobs)-1].submit - jobs[0].submit
	cap, _ := capacityOf(f, jobs, span, o.nodes)
	if cap <= 0 {
		return 0, fmt.Errorf("%s: no layout serves the trace", nameOf(o))
	}
	// Time is rescaled by (1/cap)/load: the rate grows by its inverse.
	return float64(len(jobs)) / span * o.load * cap, nil
}

func nameOf(o options) string {
	if o.trace != "" {
		return o.trace
	}
	return "-workload " + o.workload
}

// sizeResult and policyResult are the JSON a run prints.
type sizeResult struct {
	MeanWait  float64 `json:"mean_wait_min"`
	Jobs      int     `json:"jobs"`
	Unstarted int     `json:"unstarted"`
}

type policyResult struct {
	Policy    string                `json:"policy"`
	Layout    string                `json:"layout"`
	MeanWait  float64               `json:"mean_wait_min"`
	P95       float64               `json:"p95_wait_min"`
	PerSize   map[string]sizeResult `json:"per_size"`
	Jobs      int                   `json:"jobs"`
	Unstarted int                   `json:"unstarted"`
	Failing   bool                  `json:"failing"`
	Reconfigs float64               `json:"reconfigs_per_node_hour"`
	Drained   float64               `json:"drained_node_hours"`
	Seed      uint64                `json:"seed"`
	Workload  string                `json:"workload"`
	Load      float64               `json:"load"`
	Gran      string                `json:"granularity"`
	win       window
}

// summarise makes a result from each measured job's wait (-1 when
// unstarted).
func summarise(f *fleetDef, in *instance, start func(i int) float64) policyResult {
	r := policyResult{PerSize: map[string]sizeResult{}}
	var waits []float64
	sums := make([]float64, len(f.types))
	jobs := make([]int, len(f.types))
	unst := make([]int, len(f.types))
	for i := range in.jobs {
		j := &in.jobs[i]
		if !in.win.measured(j) {
			continue
		}
		jobs[j.typ]++
		s := start(i)
		if s < 0 {
			unst[j.typ]++
			continue
		}
		waits = append(waits, s-j.submit)
		sums[j.typ] += s - j.submit
	}
	total := 0.0
	for t := range f.types {
		if jobs[t] == 0 {
			continue
		}
		sr := sizeResult{Jobs: jobs[t], Unstarted: unst[t]}
		if n := jobs[t] - unst[t]; n > 0 {
			sr.MeanWait = sums[t] / float64(n)
		}
		r.PerSize[profileOf(f.types[t])] = sr
		r.Jobs += jobs[t]
		r.Unstarted += unst[t]
		total += sums[t]
		if float64(unst[t]) > 0.005*float64(jobs[t]) {
			r.Failing = true
		}
	}
	if len(waits) > 0 {
		sort.Float64s(waits)
		r.MeanWait = total / float64(len(waits))
		r.P95 = waits[int(math.Ceil(0.95*float64(len(waits))))-1]
	}
	return r
}

// staticResult is a static layout's result, from the per-type queues.
func staticResult(f *fleetDef, in *instance, st *statics, counts []int) policyResult {
	starts := make([]float64, len(in.jobs))
	for i := range starts {
		starts[i] = -1
	}
	// Replay each type's queue with its devices to get each job's start.
	for t, idx := range st.byType {
		c := counts[t]
		free := make(floatHeap, min(c, len(idx)))
		for _, i := range idx {
			j := &in.jobs[i]
			if len(free) == 0 {
				break
			}
			s := max(j.submit, free[0])
			if s > in.win.end {
				break
			}
			starts[i] = s
			free[0] = s + j.dur
			heap.Fix(&free, 0)
		}
	}
	return summarise(f, in, func(i int) float64 { return starts[i] })
}

// fleetCounts is the devices of each type a layout (nodes per config)
// offers.
func fleetCounts(f *fleetDef, configs []config, x []int) []int {
	out := make([]int, len(f.types))
	for k, n := range x {
		for t, c := range configs[k].counts {
			out[t] += n * c
		}
	}
	return out
}

func layoutName(configs []config, x []int) string {
	var parts []string
	for k, n := range x {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d*%s", n, configs[k].name))
		}
	}
	return strings.Join(parts, "+")
}

// parseLayout reads -start: a config (every node) or N*CONFIG+...
func parseLayout(s string, f *fleetDef, nodes int) ([]int, error) {
	x := make([]int, len(f.configs))
	total := 0
	for _, part := range strings.Split(s, "+") {
		n, name := nodes, part
		if a, b, ok := strings.Cut(part, "*"); ok {
			v, err := strconv.Atoi(a)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("-start %q: %q is not a count", s, a)
			}
			n, name = v, b
		}
		k := -1
		for i, c := range f.configs {
			if c.name == name {
				k = i
			}
		}
		if k < 0 {
			return nil, fmt.Errorf("-start %q: no config %q holds these GPUs", s, name)
		}
		x[k] += n
		total += n
	}
	if total != nodes {
		return nil, fmt.Errorf("-start %q: %d nodes, not %d", s, total, nodes)
	}
	return x, nil
}

// runSeed runs one seed: every uniform static layout, the best static
// layout, and the policy.
func runSeed(o options, f *fleetDef, seed uint64) ([]policyResult, error) {
	in, err := makeInstance(o, f, seed)
	if err != nil {
		return nil, err
	}
	if err := checkRun(o, in); err != nil {
		return nil, err
	}
	st := newStatics(in.jobs, len(f.types), in.win)
	search := distinctConfigs(f.configs, in.wanted)
	// The LP's layout is over all configs; map it onto the distinct ones.
	var lp []float64
	if len(search) > 0 {
		lp = make([]float64, len(search))
		for k, v := range in.lp {
			for i, c := range search {
				if c.name == f.configs[k].name {
					lp[i] += v
				}
			}
		}
	}
	var out []policyResult
	bestX, _ := st.searchStatic(search, o.nodes, lp, seed, o.restarts)
	best := staticResult(f, in, st, fleetCounts(f, search, bestX))
	best.Policy, best.Layout = "static-best", layoutName(search, bestX)
	out = append(out, best)
	for k, c := range f.configs {
		x := make([]int, len(f.configs))
		x[k] = o.nodes
		r := staticResult(f, in, st, fleetCounts(f, f.configs, x))
		r.Policy, r.Layout = "static:"+c.name, layoutName(f.configs, x)
		out = append(out, r)
	}
	// The policy, from the best static layout or the one asked for.
	startX := make([]int, len(f.configs))
	if o.start == "static-best" {
		for i, n := range bestX {
			for k, c := range f.configs {
				if c.name == search[i].name {
					startX[k] += n
				}
			}
		}
	} else if startX, err = parseLayout(o.start, f, o.nodes); err != nil {
		return nil, err
	}
	var layout []int
	for k, n := range startX {
		for range n {
			layout = append(layout, k)
		}
	}
	dp := o.dyn
	dp.seed = seed
	dr := dynamic(in.jobs, f.types, f.configs, layout, in.win, dp)
	pol := summarise(f, in, func(i int) float64 { return dr.start[i] })
	pol.Policy, pol.Layout = "rebalance", "from "+layoutName(f.configs, startX)
	hours := (in.win.to - in.win.from) / 60
	// Per node: at gpu granularity a node is o.unit units, and each
	// GPU's change counts as one of its node's.
	pol.Reconfigs = float64(dr.reconfigs) / (float64(o.nodes) / float64(max(o.unit, 1))) / hours
	pol.Drained = dr.drained / 60 / float64(max(o.unit, 1))
	out = append(out, pol)
	if o.oracle > 0 {
		r := policyResult{Policy: "oracle", Layout: fmt.Sprintf("best static of each %g min, switched instantly, each from empty", o.oracle)}
		r.MeanWait, r.Unstarted = oracleBound(in.jobs, len(f.types), in.win, search, o.nodes, o.oracle, seed)
		out = append(out, r)
	}
	for i := range out {
		out[i].Seed, out[i].Workload, out[i].Load, out[i].win = seed, nameOf(o), in.load, in.win
		out[i].Gran = o.granularity
	}
	return out, nil
}

// Bounds on what one run may cost: a flag past them is refused rather
// than run for hours or fill the memory.
const (
	maxGPUs      = 8192 // -nodes times -gpus
	maxSeeds     = 10000
	maxRestarts  = 10000
	maxGenerated = 5_000_000 // jobs a generator makes for one seed, or a -trace holds
	maxTicks     = 1_000_000 // policy decisions in one run
	maxSlots     = 10_000    // -oracle's slots, a static search each
)

// flagValue is a flag's name and the value it was given.
type flagValue struct {
	name string
	v    float64
}

// checkOptions refuses flags that make no sense or cost without bound,
// each in one line naming the flag.
func checkOptions(o options) error {
	if o.nodes < 1 || o.gpus < 1 || o.nodes > maxGPUs || o.gpus > maxGPUs || o.nodes*o.gpus > maxGPUs {
		return fmt.Errorf("-nodes %d, -gpus %d: want at least one of each, and at most %d GPUs in all", o.nodes, o.gpus, maxGPUs)
	}
	if o.seeds < 1 || o.seeds > maxSeeds {
		return fmt.Errorf("-seeds %d: want 1 to %d", o.seeds, maxSeeds)
	}
	if o.restarts < 0 || o.restarts > maxRestarts {
		return fmt.Errorf("-restarts %d: want 0 to %d", o.restarts, maxRestarts)
	}
	lim := o.dyn.lim
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	for _, rule := range []struct {
		want  string
		ok    func(float64) bool
		flags []flagValue
	}{
		{"a positive number", func(x float64) bool { return x > 0 },
			[]flagValue{{"-load", o.load}, {"-mean", o.mean}, {"-tick", o.dyn.tick}, {"-window", o.dyn.window}, {"-long-window", o.dyn.long}}},
		// -1 is "not given": the default of a generator or a trace.
		{"minutes, 0 or more", func(x float64) bool { return x >= 0 || x == -1 },
			[]flagValue{{"-warmup", o.warmup}, {"-measure", o.measure}, {"-cooldown", o.cooldown}}},
		{"a number, 0 or more", func(x float64) bool { return x >= 0 },
			[]flagValue{{"-reconfig-min", lim.Reconfig}, {"-long-load", lim.LongLoad}, {"-blend", lim.Blend}, {"-undo", lim.Undo},
				{"-horizon", lim.Horizon}, {"-dwell", lim.Dwell}, {"-min-gain", lim.MinGain}, {"-min-gain-share", lim.MinGainShare}, {"-oracle", o.oracle}}},
	} {
		for _, f := range rule.flags {
			if !finite(f.v) || !rule.ok(f.v) {
				return fmt.Errorf("%s %g: want %s", f.name, f.v, rule.want)
			}
		}
	}
	if !(lim.MaxBusy >= 0 && lim.MaxBusy <= 1) {
		return fmt.Errorf("-max-busy %g: want a share from 0 to 1", lim.MaxBusy)
	}
	if lim.MaxDraining < 0 {
		return fmt.Errorf("-max-draining %d: want 0 or more", lim.MaxDraining)
	}
	if !(o.dyn.fail >= 0 && o.dyn.fail <= 1) {
		return fmt.Errorf("-reconfig-fail %g: want a chance from 0 to 1", o.dyn.fail)
	}
	return nil
}

// checkRun refuses a run whose policy would decide more than maxTicks
// times, or whose oracle would search more than maxSlots slots.
func checkRun(o options, in *instance) error {
	span := in.win.end - in.jobs[0].submit
	if n := span / o.dyn.tick; n > maxTicks {
		return fmt.Errorf("%s: the run lasts %.0f minutes, %.0f policy decisions at -tick %g: at most %d; raise -tick or shorten the run (-warmup, -measure, -cooldown)", nameOf(o), span, n, o.dyn.tick, maxTicks)
	}
	if o.oracle > 0 {
		if n := (in.win.to - in.win.from) / o.oracle; n > maxSlots {
			return fmt.Errorf("-oracle %g: %.0f slots of the measured window: at most %d", o.oracle, n, maxSlots)
		}
	}
	return nil
}

func run(o options, w io.Writer) error {
	if err := checkOptions(o); err != nil {
		return err
	}
	o.unit = 1
	switch o.granularity {
	case "", "node":
		o.granularity = "node"
	case "gpu":
		o.unit, o.nodes, o.gpus = o.gpus, o.nodes*o.gpus, 1
	default:
		return fmt.Errorf("-granularity %q: want node or gpu", o.granularity)
	}
	if o.dyn.lim.SameCount && o.granularity != "gpu" {
		return fmt.Errorf("-same-count is for -granularity gpu: a node changes drained and empty, and may change its count")
	}
	f, err := loadFleet(o)
	if err != nil {
		return err
	}
	began := time.Now()
	var all [][]policyResult
	for s := range o.seeds {
		rs, err := runSeed(o, f, o.seed+uint64(s))
		if err != nil {
			return err
		}
		all = append(all, rs)
		if o.json {
			enc := json.NewEncoder(w)
			for _, r := range rs {
				if err := enc.Encode(r); err != nil {
					return err
				}
			}
		}
	}
	if o.json {
		return nil
	}
	printTables(w, o, all, time.Since(began))
	return nil
}

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
		ratio := pol.MeanWait / best.MeanWait
		sizeWorst := 0.0
		for k, s := range best.PerSize {
			if s.MeanWait > 0 {
				sizeWorst = max(sizeWorst, pol.PerSize[k].MeanWait/s.MeanWait)
			}
		}
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
			tg += fmt.Sprintf("; oracle bound %.1f (%.3f)", or.MeanWait, or.MeanWait/best.MeanWait)
		}
		fmt.Fprintf(w, "| %d | %s | %.1f | %.1f | %.3f | %.2f | %.3f | %s |\n", best.Seed, best.Layout, best.MeanWait, pol.MeanWait, ratio, sizeWorst, pol.Reconfigs, tg)
	}
	if len(ratios) == 0 {
		fmt.Fprintln(w, "\nevery seed failing: no ratio averaged")
		return
	}
	lo, hi := bootstrapMedian(ratios, 2000, o.seed)
	fmt.Fprintf(w, "\nratio rebalance/static-best over %d seeds not failing: median %.3f (bootstrap 95%% interval %.3f..%.3f), mean %.3f, worst %.3f\n",
		len(ratios), median(ratios), lo, hi, mean(ratios), worst)
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
