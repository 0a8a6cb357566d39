package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// job is one job of a trace: it asks one node for one device of type
// typ (an index into the fleet's types).
type job struct {
	submit, dur, limit float64 // minutes
	typ                int
}

// traceJob is a job as a trace file or a generator gives it: its
// profile is a MIG profile (1g.10gb) or a whole GPU's model name.
type traceJob struct {
	submit, dur, limit float64
	profile            string
	line               int // of a -trace file, for its errors
}

// readTrace reads the -trace file at path (parseTrace).
func readTrace(path string) ([]traceJob, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseTrace(f, path)
}

// parseTrace parses a -trace CSV whose header names submit_min, duration_min,
// time_limit_min and profile, in any order, among others, with a BOM, CRLF,
// blank lines or # comments; a bad line's error names path and line.
func parseTrace(r io.Reader, path string) ([]traceJob, error) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	cr := csv.NewReader(&blankLines{r: br})
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var out []traceJob
	header := true
	// col[i] is the column of the i-th of traceColumns, by the header's
	// names: columns may come in any order, and others (a job id, a
	// user, pandas' unnamed index) are left unread.
	var col [4]int
	width := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %v", path, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		num, _ := cr.FieldPos(0)
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if header {
			header = false
			if col, err = traceHeader(rec); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, num, err)
			}
			width = len(rec)
			continue
		}
		if len(rec) != width {
			return nil, fmt.Errorf("%s:%d: want %d fields, as the header has, got %d", path, num, width, len(rec))
		}
		var v [3]float64
		for i := range v {
			x, err := traceMinutes(rec[col[i]], i)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s %s %v", path, num, traceColumns[i], quoted(rec[col[i]]), err)
			}
			v[i] = x
		}
		profile := rec[col[3]]
		if profile == "" {
			return nil, fmt.Errorf("%s:%d: no profile (want a MIG profile like 1g.10gb or a whole GPU's model name like h100)", path, num)
		}
		// Slurm ends a job at its time limit: a longer run is cut to it.
		v[1] = min(v[1], v[2])
		if len(out) == maxGenerated {
			return nil, fmt.Errorf("%s:%d: more than %d jobs: split the trace", path, num, maxGenerated)
		}
		out = append(out, traceJob{submit: v[0], dur: v[1], limit: v[2], profile: profile, line: num})
	}
	if header {
		return nil, fmt.Errorf("%s: empty: want the header submit_min,duration_min,time_limit_min,profile", path)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no jobs", path)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].submit < out[b].submit })
	return out, nil
}

// blankLines empties each line of only blanks and each indented # comment
// outside a quoted field, which encoding/csv would read as a record; lines
// are kept, so that csv's line numbers stay the file's.
type blankLines struct {
	r       *bufio.Reader
	buf     []byte
	inQuote bool
	err     error
}

func (b *blankLines) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		var line []byte
		line, b.err = b.r.ReadBytes('\n')
		if t := bytes.TrimLeft(line, " \t\r\n"); !b.inQuote && (len(t) == 0 || t[0] == '#') {
			line = line[:0]
			if b.err == nil {
				line = append(line, '\n') // a line of its own still
			}
		} else if bytes.Count(line, []byte{'"'})%2 == 1 {
			b.inQuote = !b.inQuote
		}
		b.buf = line
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// traceMinutes reads field, minutes in column col of traceColumns: a finite
// number, negative only for a submit time. A limit may also be none, as Slurm
// or a trace writes it (UNLIMITED, Partition_Limit, 0, empty, inf): +Inf.
func traceMinutes(field string, col int) (float64, error) {
	limit := col == 2
	if limit {
		switch strings.ToLower(field) {
		case "", "unlimited", "partition_limit", "inf", "+inf", "infinity":
			return math.Inf(1), nil
		}
	}
	x, err := strconv.ParseFloat(field, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, errors.New("is not a number of minutes")
	}
	if x < 0 && col != 0 {
		return 0, errors.New("is negative")
	}
	if math.Abs(x) > maxMinutes {
		return 0, errors.New("is more than a billion minutes (1,900 years)")
	}
	if limit && x == 0 {
		return math.Inf(1), nil
	}
	return x, nil
}

// quoted is s quoted for an error, at most 80 bytes of it (cut at a rune)
// and then its length: a field of megabytes would fill the terminal.
func quoted(s string) string {
	const most = 80
	if len(s) <= most {
		return strconv.Quote(s)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// maxMinutes bounds a trace's times: minutes since 1970 are 3e7, and past
// this the load and the layouts' capacities lose their meaning.
const maxMinutes = 1e9

// traceColumns are the columns a -trace must name in its header.
var traceColumns = [4]string{"submit_min", "duration_min", "time_limit_min", "profile"}

// traceHeader finds traceColumns in a header, each once, in any case
// (a spreadsheet may write Submit_Min).
func traceHeader(rec []string) ([4]int, error) {
	var col [4]int
	for i, name := range traceColumns {
		col[i] = -1
		for j, h := range rec {
			if !strings.EqualFold(h, name) {
				continue
			}
			if col[i] >= 0 {
				return col, fmt.Errorf("the header names %s twice", name)
			}
			col[i] = j
		}
		if col[i] < 0 {
			return col, fmt.Errorf("want a header naming submit_min,duration_min,time_limit_min,profile, got %s", quoted(strings.Join(rec, ",")))
		}
	}
	return col, nil
}

// workloads are the built-in generators; shifting says which change
// their mix of sizes over time (the demand rebalance is for).
var workloads = []struct {
	name, what string
	shifting   bool
}{
	{"phases", "the mix moves every 8 h between inference (80/15/5/0 % of 1g/2g/3g/7g), training (10/10/40/40) and mixed (30/30/30/10), in an order drawn from the seed", true},
	{"random", "a random mix (Dirichlet) every 6 h", true},
	{"diurnal", "the rate and the mix follow the day: inference by day at 1.5x the mean rate, training by night at 0.5x", true},
	{"stationary", "one mix (30/30/30/10) throughout", false},
	{"lognormal", "the stationary mix with lognormal runs (sigma 1.5, same mean)", false},
	{"arrays", "the stationary mix in job arrays of 5 to 50 tasks of one size", false},
	{"services", "the stationary mix, 5% of jobs long-lived services (20x the mean run)", false},
}

// genSizes are the generators' sizes, by profile prefix; each maps to
// the fleet's smallest profile of that many compute slices.
var genSizes = []string{"1g.", "2g.", "3g.", "7g."}

var (
	inference = []float64{0.80, 0.15, 0.05, 0.00}
	training  = []float64{0.10, 0.10, 0.40, 0.40}
	mixed     = []float64{0.30, 0.30, 0.30, 0.10}
)

// generate makes a trace of workload name over minutes, one job a minute
// on average, of mean run mean and genSizes' prefixes. Its periods (8 h
// phases, 6 h mixes, the day) hold once rescaled to per jobs a minute.
func generate(name string, seed uint64, minutes, mean, per float64) ([]traceJob, error) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var out []traceJob
	add := func(t float64, mix []float64, dur float64) {
		u, k := r.Float64(), 0
		for k < len(mix)-1 && u >= mix[k] {
			u -= mix[k]
			k++
		}
		out = append(out, traceJob{submit: t, dur: dur, limit: limitFor(r, dur), profile: genSizes[k]})
	}
	exp := func() float64 { return r.ExpFloat64() * mean }
	switch name {
	case "phases":
		order := r.Perm(3)
		mixes := [][]float64{inference, training, mixed}
		for t := r.ExpFloat64(); t < minutes; t += r.ExpFloat64() {
			add(t, mixes[order[int(t/(480*per))%3]], exp())
		}
	case "random":
		var mixes [][]float64
		// With periods in minutes of the rescaled run, the mixes come
		// from their own stream, so that the draws that settle the rate
		// (makeInstance) see the same mixes.
		mr := r
		if per != 1 {
			mr = rand.New(rand.NewPCG(seed, 0x1111))
		}
		for t := r.ExpFloat64(); t < minutes; t += r.ExpFloat64() {
			p := int(t / (360 * per))
			for len(mixes) <= p {
				mixes = append(mixes, dirichlet(mr, 4))
			}
			add(t, mixes[p], exp())
		}
	case "diurnal":
		// A thinned Poisson process: rate 1.5 by day (8:00 to 20:00) and
		// 0.5 by night, one a minute on average.
		for t := r.ExpFloat64() / 1.5; t < minutes; t += r.ExpFloat64() / 1.5 {
			day := math.Mod(t/per, 1440) >= 480 && math.Mod(t/per, 1440) < 1200
			if day {
				add(t, inference, exp())
			} else if r.Float64() < 0.5/1.5 {
				add(t, training, exp())
			}
		}
	case "stationary":
		for t := r.ExpFloat64(); t < minutes; t += r.ExpFloat64() {
			add(t, mixed, exp())
		}
	case "lognormal":
		const sigma = 1.5
		mu := math.Log(mean) - sigma*sigma/2
		for t := r.ExpFloat64(); t < minutes; t += r.ExpFloat64() {
			add(t, mixed, math.Exp(mu+sigma*r.NormFloat64()))
		}
	case "arrays":
		// Arrays of 5 to 50 tasks (27.5 on average) at 1/27.5 a minute.
		for t := r.ExpFloat64() * 27.5; t < minutes; t += r.ExpFloat64() * 27.5 {
			n := 5 + r.IntN(46)
			u, k := r.Float64(), 0
			for k < len(mixed)-1 && u >= mixed[k] {
				u -= mixed[k]
				k++
			}
			for range n {
				d := exp()
				out = append(out, traceJob{submit: t, dur: d, limit: limitFor(r, d), profile: genSizes[k]})
			}
		}
	case "services":
		// 5% of jobs run 20 times longer; the others are shorter so that
		// the mean stays mean.
		short := mean / (0.95 + 0.05*20)
		for t := r.ExpFloat64(); t < minutes; t += r.ExpFloat64() {
			d := r.ExpFloat64() * short
			if r.Float64() < 0.05 {
				d *= 20
			}
			add(t, mixed, d)
		}
	default:
		var names []string
		for _, w := range workloads {
			names = append(names, w.name)
		}
		return nil, fmt.Errorf("-workload %q: want one of %s", name, strings.Join(names, ", "))
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].submit < out[b].submit })
	return out, nil
}

// limitFor is a time limit as users give them: above the run, by a
// factor of 1 to 4, rounded up to a half hour.
func limitFor(r *rand.Rand, dur float64) float64 {
	return math.Ceil(dur*(1+3*r.Float64())/30) * 30
}

func dirichlet(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	sum := 0.0
	for i := range out {
		out[i] = r.ExpFloat64()
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}
