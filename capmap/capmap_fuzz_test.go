package capmap

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// The fuzz targets of this file check Parse through its public API only
// (GI, CI, Len and the error text). FuzzParse in capmap_test.go already
// compares the whole map with a reference reading of every rule, through
// the package's internals; FuzzFastLine checks the fast path against the
// general one. Those are left as they are.
//
// Seeds: the f.Add calls below, the files in testdata/fuzz/FuzzParseMigMinors,
// the real H100 mig-minors (testdata/real/h100-driver-580, 107 KB, not
// copied into the corpus), and every mig-minors file (good or corrupt) of
// the golden tests in testdata/script/*.txtar, read at test time.

// txtarSeeds returns the contents of the files in the golden tests
// (testdata/script/*.txtar) whose name matches keep.
func txtarSeeds(tb testing.TB, keep func(name string) bool) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, p := range fixture.Glob(tb, "script/*.txtar") {
		a, err := txtar.ParseFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range a.Files {
			if keep(f.Name) {
				out = append(out, f.Data)
			}
		}
	}
	return out
}

// refEntry is one well-formed GI (ci < 0) or CI line.
type refEntry struct {
	gpu, gi uint32
	ci      int64 // -1 for a GI
}

// canonNum cuts a canonical unsigned decimal (no sign, no leading zero)
// off the front of s, reporting whether there was one.
func canonNum(s string) (num, rest string, ok bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || (i > 1 && s[0] == '0') {
		return "", s, false
	}
	return s[:i], s[i:], true
}

// refName splits a GI name gpu<N>/gi<X>/access or a CI name
// gpu<N>/gi<X>/ci<Y>/access with canonical numbers into its numbers (ci ""
// for a GI).
func refName(name string) (gpu, gi, ci string, ok bool) {
	rest, ok := strings.CutPrefix(name, "gpu")
	if !ok {
		return
	}
	if gpu, rest, ok = canonNum(rest); !ok {
		return
	}
	if rest, ok = strings.CutPrefix(rest, "/gi"); !ok {
		return
	}
	if gi, rest, ok = canonNum(rest); !ok {
		return
	}
	if after, isCI := strings.CutPrefix(rest, "/ci"); isCI {
		if ci, rest, ok = canonNum(after); !ok {
			return
		}
	}
	return gpu, gi, ci, rest == "/access"
}

// refEntries is a small reference reader for the lines it is sure of: a
// line of exactly two blank-separated fields whose first is a GI or CI
// name with canonical numbers and whose second is a decimal minor, all
// fitting 32 bits. Other lines are ignored; the last minor of an entry
// wins (when Parse succeeds, duplicates agree).
func refEntries(data []byte) map[refEntry]uint32 {
	out := map[refEntry]uint32{}
	u32 := func(s string) (uint32, bool) {
		v, err := strconv.ParseUint(s, 10, 32)
		return uint32(v), err == nil
	}
	isBlank := func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f' }
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.FieldsFunc(line, isBlank)
		if len(f) != 2 {
			continue
		}
		gpuS, giS, ciS, ok := refName(f[0])
		if !ok {
			continue
		}
		minor, ok1 := u32(f[1])
		gpu, ok2 := u32(gpuS)
		gi, ok3 := u32(giS)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		e := refEntry{gpu, gi, -1}
		if ciS != "" {
			ci, ok := u32(ciS)
			if !ok {
				continue
			}
			e.ci = int64(ci)
		}
		out[e] = minor
	}
	return out
}

// errPrefix is the shape of every Parse error for source "f": "f:" and a
// line number, or "f:" alone for what concerns the whole file.
var errPrefix = regexp.MustCompile(`^f(:[1-9][0-9]*)?: `)

// FuzzParseMigMinors: Parse never panics; an error names the source (and
// the line); on success every well-formed GI/CI line is found by GI/CI
// with its minor, a GI is not found through a CI of it (nor a CI through
// its GI), Len counts the distinct entries, Source is the name given, and
// the same lines in reverse order parse to the same map.
func FuzzParseMigMinors(f *testing.F) {
	for _, s := range []string{
		"config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n",
		"gpu0/gi0/ci0/access 4\n", // a CI whose GI is absent
		"gpu0/gi0/access 3\n",     // a GI without CIs
		"gpu1/gi2/ci8/access 8\ngpu1/gi2/ci4294967295/access 9\ngpu1/gi2/access 7\n", // wide CIs
		"gpu4294967295/gi4294967295/ci7/access 4294967295\n",
		"gpu0/gi0/access 3\r\ngpu0/gi0/ci0/access\t4 \r\n\v\f\n",
		"gpu0/gi0/access 0003\ngpu0/gi0/access 3\n", // same entry, same minor
		"gpu0/gi0/access 3\ngpu0/gi0/access 4\n",    // same entry, two minors
		"gpu0/gi00/access 3\n", "gpu0/gi0/ci-1/access 3\n", "gpu0/gi0/access 4294967296\n",
		"gpu0/gi0/ci0/foo/access 3\ngpu0/foo/access 4\nfabric-imex-mgmt 5\ngpu0/gi0/access 6\n",
		"gpu0/gi0/access 3 4\n", "gpu0/gi0/access\n", "\xff 1\n", "",
		"gpu0/gi0/access 3\n" + strings.Repeat("x", 70000) + " 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Add(fixture.Read(f, fixture.RealMigMinors))
	for _, data := range txtarSeeds(f, func(name string) bool { return strings.HasSuffix(name, "mig-minors") }) {
		f.Add(data)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(bytes.NewReader(data), "f")
		if err != nil {
			if m != nil {
				t.Fatalf("Parse returned a map with error %v", err)
			}
			if !errPrefix.MatchString(err.Error()) {
				t.Fatalf("error %q does not start with the source name and a line number", err)
			}
			return
		}
		if m.Source() != "f" {
			t.Fatalf("Source() = %q, want %q", m.Source(), "f")
		}
		ref := refEntries(data)
		if m.Len() != len(ref) {
			t.Fatalf("Len() = %d, but the input has %d distinct well-formed GI/CI entries", m.Len(), len(ref))
		}
		for e, want := range ref {
			if e.ci < 0 {
				if got, ok := m.GI(e.gpu, e.gi); !ok || got != want {
					t.Fatalf("GI(%d, %d) = (%d, %v), input says %d", e.gpu, e.gi, got, ok, want)
				}
				continue
			}
			if got, ok := m.CI(e.gpu, e.gi, uint32(e.ci)); !ok || got != want {
				t.Fatalf("CI(%d, %d, %d) = (%d, %v), input says %d", e.gpu, e.gi, e.ci, got, ok, want)
			}
			// The GI of a listed CI, and a neighbouring CI, are found only
			// when listed too.
			if _, listed := ref[refEntry{e.gpu, e.gi, -1}]; !listed {
				if got, ok := m.GI(e.gpu, e.gi); ok {
					t.Fatalf("GI(%d, %d) = %d found, but only its CI %d is listed", e.gpu, e.gi, got, e.ci)
				}
			}
			if e.ci < 1<<32-1 {
				if _, listed := ref[refEntry{e.gpu, e.gi, e.ci + 1}]; !listed {
					if got, ok := m.CI(e.gpu, e.gi, uint32(e.ci+1)); ok {
						t.Fatalf("CI(%d, %d, %d) = %d found, but it is not listed", e.gpu, e.gi, e.ci+1, got)
					}
				}
			}
		}

		// Order does not matter: the same lines reversed give the same map.
		lines := strings.Split(string(data), "\n")
		for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
			lines[i], lines[j] = lines[j], lines[i]
		}
		rm, err := Parse(strings.NewReader(strings.Join(lines, "\n")), "f")
		if err != nil {
			t.Fatalf("the input parses, but its lines reversed do not: %v", err)
		}
		if rm.Len() != m.Len() {
			t.Fatalf("reversed: Len() = %d, in order %d", rm.Len(), m.Len())
		}
		for e, want := range ref {
			var got uint32
			var ok bool
			if e.ci < 0 {
				got, ok = rm.GI(e.gpu, e.gi)
			} else {
				got, ok = rm.CI(e.gpu, e.gi, uint32(e.ci))
			}
			if !ok || got != want {
				t.Fatalf("reversed: entry %+v = (%d, %v), want %d", e, got, ok, want)
			}
		}
	})
}
