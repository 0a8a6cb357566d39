package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

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
		// With real periods, periods are minutes at the rate the load
		// gives, which depends on the mix, which depends on how the periods
		// fall: a few draws of the same seed settle it.
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
		if share, ok := gpuFraction(r.profile); ok && share < 0 {
			return nil, fmt.Errorf("%s:%d: profile %s: a share of a GPU is not negative", o.trace, r.line, quoted(r.profile))
		} else if ok && (share == 0 || share > 1) {
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
		return nil, fmt.Errorf("%s: no config offers profile %s on the GPUs of %s: %s%s", where, quoted(p), o.snapshot, want, more)
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
	// origin (minutes since 1970, or negative before a reference); the
	// window, the policy's history and the printed minutes count from it.
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
	if o.trace != "" {
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
	measured := in.measuredJobs()
	if measured == 0 && o.trace != "" && o.warmup < 0 && o.measure < 0 {
		// Jobs that arrive at once, or a few far apart, fit none of the
		// default shares of the span: every job is measured, and the run
		// lasts, unless -cooldown says, until each could start in turn.
		last := in.jobs[len(in.jobs)-1].submit
		if o.cooldown < 0 {
			cool = work
		}
		in.win = window{from: 0, to: last + 1, end: last + 1 + cool}
		measured = in.measuredJobs()
		if o.notes != nil && seed == o.seed {
			fmt.Fprintf(o.notes, "simulator: %s: no job is submitted in the default measured window: every job is measured\n", o.trace)
		}
	}
	if measured == 0 {
		return nil, fmt.Errorf("%s: no job is submitted in the measured window (minutes %.1f to %.1f of the run): set -warmup and -measure, and -cooldown for the minutes its jobs may still start in", nameOf(o), in.win.from, in.win.to)
	}
	return in, nil
}

// measuredJobs is how many of the jobs the window measures.
func (in *instance) measuredJobs() int {
	n := 0
	for i := range in.jobs {
		if in.win.measured(&in.jobs[i]) {
			n++
		}
	}
	return n
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
