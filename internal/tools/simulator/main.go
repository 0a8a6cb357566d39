// Command simulate is the benchmark of rebalance's policy: it replays a MIG
// job trace (a CSV file or a built-in generator) through an event model of
// a fleet, for the best static layout, every uniform one, and the policy
// (rebalance.Decide) starting from the best, and prints their waits over
// the measured jobs (docs/rebalance.md says how to read them). A job asks
// one node for one device of one type; load 1 is the most of the trace's
// mix that any fractional layout could carry; a size with more than 0.5% of
// its measured jobs unstarted fails the run.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"
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
	// granularity is what changes its layout at once: "node", or "gpu" (one
	// GPU changes while the node's others run on), modelled as nodes*gpus
	// units of one GPU, unit of them a node, for the per-node figures.
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
	// A bad flag is one line, as any other error, not the whole usage.
	flag.CommandLine.Init(os.Args[0], flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard)
	flag.StringVar(&o.trace, "trace", "", "a CSV trace: submit_min,duration_min,time_limit_min,profile (in place of -workload)")
	flag.StringVar(&o.workload, "workload", "phases", "a built-in generator: "+workloadNames())
	flag.StringVar(&o.snapshot, "snapshot", defaultSnapshot, "a node snapshot: its first GPU, -gpus times, is each node")
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
		flag.Func(w.name, w.usage, func(s string) error {
			v, err := strconv.ParseFloat(s, 64)
			if err == nil && !(v >= 0) {
				return errors.New("want minutes, 0 or more") // -1 would read as unset
			}
			*w.v = v
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
	flag.Float64Var(&o.dyn.foresight, "foresight", 0, "a bound: the policy is told each type's true arrival rate over the next this many minutes, and over the next -undo minutes as its long-run rate (0: it forecasts)")
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
	if err := flag.CommandLine.Parse(os.Args[1:]); err == flag.ErrHelp {
		flag.CommandLine.SetOutput(os.Stderr)
		flag.Usage()
		os.Exit(0)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "simulator:", err)
		os.Exit(2)
	}
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

func nameOf(o options) string {
	if o.trace != "" {
		return o.trace
	}
	return "-workload " + o.workload
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
	var traced *instance // a trace's jobs are the same for every seed: read once
	for s := range o.seeds {
		seed := o.seed + uint64(s)
		in := traced
		if in == nil {
			if in, err = makeInstance(o, f, seed); err != nil {
				return err
			}
			if o.trace != "" {
				traced = in
			}
		}
		rs, err := runSeed(o, f, in, seed)
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
