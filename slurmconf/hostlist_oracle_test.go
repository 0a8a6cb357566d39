package slurmconf

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// TestHostlistMatchesScontrol holds ExpandHostlist and CompressHostlist to
// Slurm's own answers: `scontrol show hostnames` and `scontrol show
// hostlist` over a few hundred generated expressions and name lists
// (prefixes, zero-padded ranges, single items, several brackets, mixed
// lists, /dev paths). Only expressions ExpandHostlist accepts are asked:
// where Slurm takes malformed input silently, we refuse it on purpose.
func TestHostlistMatchesScontrol(t *testing.T) {
	testtools.Require(t, testtools.SlurmPackages, "scontrol")
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=x\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := rand.New(rand.NewPCG(22, 5)) // fixed: the same cases every run
	var exprs []string
	var expanded [][]string
	for len(exprs) < 300 {
		expr := randomHostlist(r)
		names, err := ExpandHostlist(expr)
		if err != nil {
			continue
		}
		exprs = append(exprs, expr)
		expanded = append(expanded, names)
	}
	for i, names := range scontrolBatch(t, conf, "hostnames", exprs) {
		if diff := cmp.Diff(expanded[i], names); diff != "" {
			t.Errorf("ExpandHostlist(%q) (-ours +scontrol show hostnames):\n%s", exprs[i], diff)
		}
	}

	// Compress what the expressions expand to, and lists in no order.
	lists := expanded
	for range 300 {
		lists = append(lists, randomNames(r))
	}
	var joined []string
	for _, names := range lists {
		joined = append(joined, strings.Join(names, ","))
	}
	for i, got := range scontrolBatch(t, conf, "hostlist", joined) {
		if want := CompressHostlist(lists[i]); strings.Join(got, ",") != want {
			t.Errorf("CompressHostlist(%q) = %q, scontrol show hostlist: %q", lists[i], want, strings.Join(got, ","))
		}
	}
}

// oracleSep goes between the cases of one scontrol call. Without digits
// at its end it joins no range, and it starts the argument so that no
// case is read as a file (scontrol show hostlist takes an argument
// starting with '/' as a path).
const oracleSep = "oracle-sep"

// scontrolBatch asks `scontrol show <what>` about many cases, 100 to a
// call, each case set apart by oracleSep, and returns each case's answer:
// the names, one a line, for hostnames; the top-level items of the
// ranged list for hostlist.
func scontrolBatch(t *testing.T, conf, what string, cases []string) [][]string {
	t.Helper()
	var answers [][]string
	for start := 0; start < len(cases); start += 100 {
		batch := cases[start:min(start+100, len(cases))]
		arg := oracleSep + "," + strings.Join(batch, ","+oracleSep+",") + "," + oracleSep
		cmd := exec.Command("scontrol", "show", what, arg)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scontrol show %s: %v\n%s", what, err, out)
		}
		var words []string
		if what == "hostnames" {
			words = strings.Fields(string(out))
		} else {
			words = topLevelItems(strings.TrimSpace(string(out)))
		}
		got := splitAt(words, oracleSep)
		// Before the first separator and after the last: nothing.
		if len(got) != len(batch)+2 || len(got[0]) != 0 || len(got[len(got)-1]) != 0 {
			t.Fatalf("scontrol show %s %q: %d cases back, want %d:\n%s", what, arg, len(got)-2, len(batch), out)
		}
		answers = append(answers, got[1:len(got)-1]...)
	}
	return answers
}

// splitAt splits words into the runs between occurrences of sep.
func splitAt(words []string, sep string) [][]string {
	runs := [][]string{{}}
	for _, w := range words {
		if w == sep {
			runs = append(runs, []string{})
			continue
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], w)
	}
	return runs
}

// topLevelItems splits a ranged hostlist at the commas outside brackets.
func topLevelItems(s string) []string {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, s[start:i])
				start = i + 1
			}
		}
	}
	return append(items, s[start:])
}

// Prefixes of generated names: host names, names ending in digits (so a
// bracket extends a number), /dev paths as in gres.conf, and none.
var oraclePrefixes = []string{"n", "gpu", "node-", "rack1-n", "a1", "x9y", "/dev/nvidia", "/dev/nvidia-caps/nvidia-cap", ""}

// randomHostlist is one to three comma-separated items, each a plain name
// or a prefix with one to three bracketed range lists.
func randomHostlist(r *rand.Rand) string {
	items := make([]string, 1+r.IntN(3))
	for i := range items {
		prefix := oraclePrefixes[r.IntN(len(oraclePrefixes))]
		switch n := r.IntN(8); {
		case n == 0:
			items[i] = prefix + randomNumber(r) // a single name, no brackets
		case n < 5:
			items[i] = prefix + "[" + randomRanges(r, 3) + "]"
		case n < 7:
			items[i] = prefix + "[" + randomRanges(r, 2) + "]-s[" + randomRanges(r, 2) + "]"
		default:
			items[i] = prefix + "[" + randomRanges(r, 1) + "]b[" + randomRanges(r, 1) + "]c[" + randomRanges(r, 1) + "]"
		}
	}
	return strings.Join(items, ",")
}

// randomRanges is up to n "lo" or "lo-hi" items, zero-padded at times and
// sometimes crossing into more digits (9-11, 098-102).
func randomRanges(r *rand.Rand, n int) string {
	ranges := make([]string, 1+r.IntN(n))
	for i := range ranges {
		lo := []int{0, 1, 7, 9, 10, 42, 98, 99, 100, 998}[r.IntN(10)] + r.IntN(3)
		width := []int{0, 0, 2, 3}[r.IntN(4)]
		ranges[i] = fmt.Sprintf("%0*d", width, lo)
		if r.IntN(3) > 0 {
			ranges[i] += fmt.Sprintf("-%0*d", []int{0, 2, 3}[r.IntN(3)], lo+r.IntN(5))
		}
	}
	return strings.Join(ranges, ",")
}

func randomNumber(r *rand.Rand) string {
	return fmt.Sprintf("%0*d", []int{0, 0, 2, 3}[r.IntN(4)], r.IntN(120))
}

// randomNames is a list to compress: runs of one prefix with counting,
// repeated and zero-padded numbers, names without a number, in any order.
func randomNames(r *rand.Rand) []string {
	var names []string
	for range 1 + r.IntN(4) {
		prefix := oraclePrefixes[r.IntN(len(oraclePrefixes))]
		n, width := r.IntN(120), []int{0, 0, 2, 3}[r.IntN(4)]
		for range 1 + r.IntN(6) {
			switch r.IntN(6) {
			case 0:
				names = append(names, prefix+"ib") // no number
			case 1: // a repeat
			default:
				n++
			}
			if r.IntN(8) == 0 {
				width = []int{0, 2, 3}[r.IntN(3)]
			}
			names = append(names, fmt.Sprintf("%s%0*d", prefix, width, n))
		}
	}
	if r.IntN(3) == 0 {
		r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	}
	return names
}
