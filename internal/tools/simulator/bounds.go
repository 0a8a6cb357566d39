package main

import (
	"fmt"
	"math"
)

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
				{"-horizon", lim.Horizon}, {"-dwell", lim.Dwell}, {"-min-gain", lim.MinGain}, {"-min-gain-share", lim.MinGainShare}, {"-oracle", o.oracle}, {"-foresight", o.dyn.foresight}}},
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
