package capmap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// realMigMinors is the name the tests give the mig-minors file copied from
// an H100 node on driver 580.159.04 (testdata/real/h100-driver-580: 4,322
// lines, config, monitor and 32 GPUs x 135 GI/CI entries).
const realMigMinors = "/proc/driver/nvidia-caps/mig-minors"

func readReal(tb testing.TB) []byte {
	tb.Helper()
	return fixture.Read(tb, fixture.RealMigMinors)
}

// entry is one GI (isCI false) or CI entry of a Map.
type entry struct {
	key   ciKey
	isCI  bool
	minor uint32
}

// entries lists every entry m holds, in no particular order.
func entries(m *Map) []entry {
	var out []entry
	for k, r := range m.gis {
		if r.has&(1<<giBit) != 0 {
			out = append(out, entry{ciKey{k.gpu, k.gi, 0}, false, r.gi})
		}
		for ci := uint32(0); ci < inlineCIs; ci++ {
			if r.has&(1<<ci) != 0 {
				out = append(out, entry{ciKey{k.gpu, k.gi, ci}, true, r.ci[ci]})
			}
		}
	}
	for k, v := range m.wideCI {
		out = append(out, entry{k, true, v})
	}
	return out
}

// dump lists the entries of m by capability name, for comparison with cmp.
func dump(m *Map) map[string]uint32 {
	out := make(map[string]uint32, m.Len())
	for _, e := range entries(m) {
		if e.isCI {
			out[fmt.Sprintf("gpu%d/gi%d/ci%d/access", e.key.gpu, e.key.gi, e.key.ci)] = e.minor
		} else {
			out[fmt.Sprintf("gpu%d/gi%d/access", e.key.gpu, e.key.gi)] = e.minor
		}
	}
	if len(out) != m.Len() {
		panic(fmt.Sprintf("Len() = %d but the map holds %d entries", m.Len(), len(out)))
	}
	return out
}

func TestParseRealH100(t *testing.T) {
	data := readReal(t)
	m, err := Parse(bytes.NewReader(data), realMigMinors)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Len(), 4320; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	if got := m.Source(); got != realMigMinors {
		t.Errorf("Source() = %q, want %q", got, realMigMinors)
	}

	for _, tc := range []struct {
		name         string
		gpu, gi, ci  uint32
		isCI         bool
		want         uint32
		wantNotFound bool
	}{
		{name: "gpu0/gi0", gpu: 0, gi: 0, want: 3},
		{name: "gpu0/gi0/ci0", gpu: 0, gi: 0, ci: 0, isCI: true, want: 4},
		{name: "gpu2/gi7", gpu: 2, gi: 7, want: 336},
		{name: "gpu2/gi7/ci0", gpu: 2, gi: 7, ci: 0, isCI: true, want: 337},
		{name: "gpu31/gi14/ci7", gpu: 31, gi: 14, ci: 7, isCI: true, want: 4322},
		{name: "gpu32/gi0 absent", gpu: 32, gi: 0, wantNotFound: true},
		{name: "gpu0/gi15 absent", gpu: 0, gi: 15, wantNotFound: true},
		{name: "gpu0/gi0/ci8 absent", gpu: 0, gi: 0, ci: 8, isCI: true, wantNotFound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got uint32
			var ok bool
			if tc.isCI {
				got, ok = m.CI(tc.gpu, tc.gi, tc.ci)
			} else {
				got, ok = m.GI(tc.gpu, tc.gi)
			}
			if tc.wantNotFound {
				if ok {
					t.Errorf("found minor %d, want not found", got)
				}
				return
			}
			if !ok || got != tc.want {
				t.Errorf("got (%d, %v), want (%d, true)", got, ok, tc.want)
			}
		})
	}

	// Cross-check every entry against the layout today's drivers follow. The
	// package itself never uses this formula.
	giMinor := func(gpu, gi uint32) uint32 { return 3 + 135*gpu + 9*gi }
	all := entries(m)
	if len(all) != 4320 {
		t.Errorf("map holds %d entries, want 4320", len(all))
	}
	for _, e := range all {
		k := e.key
		if e.isCI {
			if want := giMinor(k.gpu, k.gi) + 1 + k.ci; e.minor != want {
				t.Errorf("CI(%d, %d, %d) = %d, formula says %d", k.gpu, k.gi, k.ci, e.minor, want)
			}
		} else if want := giMinor(k.gpu, k.gi); e.minor != want {
			t.Errorf("GI(%d, %d) = %d, formula says %d", k.gpu, k.gi, e.minor, want)
		}
	}
	// And every entry the layout predicts is present.
	for gpu := uint32(0); gpu < 32; gpu++ {
		for gi := uint32(0); gi < 15; gi++ {
			if _, ok := m.GI(gpu, gi); !ok {
				t.Errorf("GI(%d, %d) missing", gpu, gi)
			}
			for ci := uint32(0); ci < 8; ci++ {
				if _, ok := m.CI(gpu, gi, ci); !ok {
					t.Errorf("CI(%d, %d, %d) missing", gpu, gi, ci)
				}
			}
		}
	}
}

func TestParse(t *testing.T) {
	const name = "/root/proc/driver/nvidia-caps/mig-minors"
	for _, tc := range []struct {
		name    string
		in      string
		want    map[string]uint32
		wantErr string
	}{
		{
			name: "minimal",
			in:   "config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n",
			want: map[string]uint32{"gpu0/gi0/access": 3, "gpu0/gi0/ci0/access": 4},
		},
		{
			name: "whitespace, blank lines, CRLF, no final newline",
			in:   "\n  config 1\r\n\t\ngpu1/gi2/access\t\t12  \r\n   gpu1/gi2/ci3/access   16",
			want: map[string]uint32{"gpu1/gi2/access": 12, "gpu1/gi2/ci3/access": 16},
		},
		{
			name: "unknown names skipped",
			in: "config 1\nmonitor 2\nfabric-imex-mgmt 4323\nfabric-mgmt 0\n" +
				"gpu0/foo/access 9\ngpu0/gi0/bar 10\ngpu0/mig/gi0/access 11\n" +
				"gpu0/gi0/ci0/foo/access 12\ngpu0/gi0/xx0/access 13\ngpu0 14\n" +
				"gpu0/access 15\nnvlink/gpu0/gi0/access 16\ngpu0/gi0/ci0/ci0/access 17\n" +
				"gpu0/gi0/access 3\n",
			want: map[string]uint32{"gpu0/gi0/access": 3},
		},
		{
			name: "duplicate with the same minor is harmless",
			in:   "gpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n",
			want: map[string]uint32{"gpu0/gi0/access": 3, "gpu0/gi0/ci0/access": 4},
		},
		{
			name: "largest numbers",
			in:   "gpu4294967295/gi4294967295/ci4294967295/access 4294967295\ngpu0/gi0/access 007\n",
			want: map[string]uint32{"gpu4294967295/gi4294967295/ci4294967295/access": 4294967295, "gpu0/gi0/access": 7},
		},
		{
			name: "CI ids beyond the inline ones, and CIs without their GI",
			in: "gpu0/gi0/ci7/access 11\ngpu0/gi0/ci8/access 12\ngpu0/gi0/ci4294967295/access 13\n" +
				"gpu0/gi0/ci8/access 12\ngpu5/gi1/ci9/access 14\n",
			want: map[string]uint32{
				"gpu0/gi0/ci7/access": 11, "gpu0/gi0/ci8/access": 12,
				"gpu0/gi0/ci4294967295/access": 13, "gpu5/gi1/ci9/access": 14,
			},
		},
		{
			name:    "non-numeric minor",
			in:      "config 1\ngpu0/gi0/access x3\n",
			wantErr: name + `:2: malformed line "gpu0/gi0/access x3": want "<name> <minor>"`,
		},
		{
			name:    "missing minor",
			in:      "gpu0/gi0/access\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/access": want "<name> <minor>"`,
		},
		{
			name:    "three fields",
			in:      "gpu0/gi0/access 3 4\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/access 3 4": want "<name> <minor>"`,
		},
		{
			name:    "four fields",
			in:      "gpu0/gi0/access 3 4 5\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/access 3 4 5": want "<name> <minor>"`,
		},
		{
			name:    "negative minor",
			in:      "gpu0/gi0/access -3\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/access -3": want "<name> <minor>"`,
		},
		{
			name:    "signed minor",
			in:      "gpu0/gi0/access +3\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/access +3": want "<name> <minor>"`,
		},
		{
			name:    "overflowing minor",
			in:      "gpu0/gi0/access 4294967296\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/access 4294967296": want "<name> <minor>"`,
		},
		{
			name:    "hex minor",
			in:      "gpu0/gi0/access 0x3\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/access 0x3": want "<name> <minor>"`,
		},
		{
			name:    "malformed line with an unknown name",
			in:      "gpu0/gi0/access 3\nconfig one\n",
			wantErr: name + `:2: malformed line "config one": want "<name> <minor>"`,
		},
		{
			name:    "bad gpu number",
			in:      "gpuX/gi1/access 3\n",
			wantErr: name + `:1: malformed line "gpuX/gi1/access 3": bad gpu number in name "gpuX/gi1/access"`,
		},
		{
			name:    "negative gi number",
			in:      "gpu0/gi-1/access 3\n",
			wantErr: name + `:1: malformed line "gpu0/gi-1/access 3": bad gi number in name "gpu0/gi-1/access"`,
		},
		{
			name:    "empty ci number",
			in:      "gpu0/gi0/ci/access 3\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/ci/access 3": bad ci number in name "gpu0/gi0/ci/access"`,
		},
		{
			name:    "empty gpu number",
			in:      "gpu/gi0/access 3\n",
			wantErr: name + `:1: malformed line "gpu/gi0/access 3": bad gpu number in name "gpu/gi0/access"`,
		},
		{
			name:    "leading zero in name",
			in:      "gpu01/gi0/access 3\n",
			wantErr: name + `:1: malformed line "gpu01/gi0/access 3": bad gpu number in name "gpu01/gi0/access"`,
		},
		{
			name:    "overflowing gi number",
			in:      "gpu0/gi4294967296/ci0/access 3\n",
			wantErr: name + `:1: malformed line "gpu0/gi4294967296/ci0/access 3": bad gi number in name "gpu0/gi4294967296/ci0/access"`,
		},
		{
			name:    "duplicate GI with a different minor",
			in:      "gpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu0/gi0/access 5\n",
			wantErr: name + `:3: duplicate entry "gpu0/gi0/access" with minor 5, listed before with minor 3`,
		},
		{
			name:    "duplicate CI with a different minor",
			in:      "gpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu0/gi0/ci0/access 3\n",
			wantErr: name + `:3: duplicate entry "gpu0/gi0/ci0/access" with minor 3, listed before with minor 4`,
		},
		{
			name:    "adjacent duplicate with a different minor",
			in:      "gpu0/gi0/access 3\ngpu0/gi0/access 4\n",
			wantErr: name + `:2: duplicate entry "gpu0/gi0/access" with minor 4, listed before with minor 3`,
		},
		{
			name:    "duplicate after out-of-order lines",
			in:      "gpu1/gi0/access 138\ngpu0/gi0/ci0/access 4\ngpu1/gi0/ci0/access 139\ngpu0/gi0/ci0/access 5\n",
			wantErr: name + `:4: duplicate entry "gpu0/gi0/ci0/access" with minor 5, listed before with minor 4`,
		},
		{
			name:    "duplicate of an entry from the ordered part",
			in:      "gpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu0/gi1/access 12\ngpu0/gi0/ci0/access 5\n",
			wantErr: name + `:4: duplicate entry "gpu0/gi0/ci0/access" with minor 5, listed before with minor 4`,
		},
		{
			name: "out of order without duplicates",
			in:   "gpu1/gi0/ci0/access 139\ngpu1/gi0/access 138\ngpu0/gi0/ci0/access 4\ngpu0/gi0/access 3\n",
			want: map[string]uint32{"gpu0/gi0/access": 3, "gpu0/gi0/ci0/access": 4, "gpu1/gi0/access": 138, "gpu1/gi0/ci0/access": 139},
		},
		{
			name:    "duplicate wide CI with a different minor",
			in:      "gpu0/gi0/ci8/access 12\ngpu0/gi0/access 3\ngpu0/gi0/ci8/access 13\n",
			wantErr: name + `:3: duplicate entry "gpu0/gi0/ci8/access" with minor 13, listed before with minor 12`,
		},
		{
			name:    "empty file",
			in:      "",
			wantErr: name + `: no MIG capability entries`,
		},
		{
			name:    "blank lines only",
			in:      "\n \n\t\n",
			wantErr: name + `: no MIG capability entries`,
		},
		{
			name:    "config and monitor only",
			in:      "config 1\nmonitor 2\n",
			wantErr: name + `: no MIG capability entries`,
		},
		{
			name:    "NUL bytes",
			in:      "gpu0/gi0/access 3\n\x00\x00\x00\x00\n",
			wantErr: name + `:2: malformed line "\x00\x00\x00\x00": byte 0x00 at column 1 is not printable ASCII`,
		},
		{
			name:    "NUL after the minor",
			in:      "gpu0/gi0/access 3\x00\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/access 3\x00": byte 0x00 at column 18 is not printable ASCII`,
		},
		{
			name:    "ELF header",
			in:      "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00>\x00\x01\x00\x00\x00",
			wantErr: name + `:1: malformed line "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00>\x00\x01\x00\x00\x00": byte 0x7f at column 1 is not printable ASCII`,
		},
		{
			name:    "non-ASCII",
			in:      "gpu0/gi0/accèss 3\n",
			wantErr: name + `:1: malformed line "gpu0/gi0/accèss 3": byte 0xc3 at column 13 is not printable ASCII`,
		},
		{
			name: "long junk line is truncated in the message",
			in:   "gpu0/gi0/access 3\n" + strings.Repeat("ab", 100) + "\n",
			wantErr: name + `:2: malformed line "` + strings.Repeat("ab", 40) +
				`"...: want "<name> <minor>"`,
		},
		{
			name:    "too long line",
			in:      "gpu0/gi0/access 3\n" + strings.Repeat("a", 70000) + " 4\ngpu0/gi1/access 12\n",
			wantErr: name + `:2: line too long (limit 65536 bytes): bufio.Scanner: token too long`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(strings.NewReader(tc.in), name)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse succeeded with %v, want error %q", dump(m), tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
					t.Fatalf("error mismatch (-want +got):\n%s", diff)
				}
				if m != nil {
					t.Errorf("Parse returned a map with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, dump(m)); diff != "" {
				t.Errorf("entries mismatch (-want +got):\n%s", diff)
			}
			if got, want := m.Len(), len(tc.want); got != want {
				t.Errorf("Len() = %d, want %d", got, want)
			}
			if got := m.Source(); got != name {
				t.Errorf("Source() = %q, want %q", got, name)
			}
		})
	}
}

func TestParseRealOrderIndependent(t *testing.T) {
	// The real file is in driver order, each GI followed by its CIs, which
	// Parse batches; reversed and shuffled copies must give the same Map.
	data := readReal(t)
	want, err := Parse(bytes.NewReader(data), "driver order")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	reversed := make([]string, len(lines))
	for i, l := range lines {
		reversed[len(lines)-1-i] = strings.TrimSuffix(l, "\n") + "\n"
	}
	shuffled := append([]string(nil), reversed...)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) {
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	})
	doubled := append(append([]string(nil), reversed...), shuffled...)
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{"reversed", reversed},
		{"shuffled", shuffled},
		{"every line twice", doubled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(strings.Join(tc.lines, "")), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(dump(want), dump(got)); diff != "" {
				t.Errorf("entries differ from the parse in driver order (-driver order +%s):\n%s", tc.name, diff)
			}
		})
	}
}

func TestParseLongestAcceptedLine(t *testing.T) {
	// A line just under the limit is still accepted (and skipped as unknown).
	in := strings.Repeat("a", maxLineLen-10) + " 1\ngpu0/gi0/access 3\n"
	m, err := Parse(strings.NewReader(in), "x")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint32{"gpu0/gi0/access": 3}, dump(m)); diff != "" {
		t.Errorf("entries mismatch (-want +got):\n%s", diff)
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Parse(iotest.ErrReader(boom), "src")
	if !errors.Is(err, boom) {
		t.Fatalf("Parse error = %v, want one wrapping %v", err, boom)
	}
	if got, want := err.Error(), "src: read error after line 0: boom"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

func TestParseRandomJunk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		junk := make([]byte, r.IntN(4096))
		for j := range junk {
			junk[j] = byte(r.Uint32())
		}
		m, err := Parse(bytes.NewReader(junk), "junk")
		if err == nil {
			t.Fatalf("Parse of %d random bytes succeeded with %d entries", len(junk), m.Len())
		}
		if !strings.HasPrefix(err.Error(), "junk:") {
			t.Fatalf("error %q does not name the source", err)
		}
	}
}

func TestLookups(t *testing.T) {
	m, err := Parse(strings.NewReader("gpu1/gi2/ci0/access 7\ngpu1/gi2/ci8/access 8\ngpu1/gi3/access 9\n"), "x")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Minor uint32
		OK    bool
	}
	r := func(v uint32, ok bool) result { return result{v, ok} }
	got := []result{
		r(m.GI(1, 2)), r(m.CI(1, 2, 0)), r(m.CI(1, 2, 1)), r(m.CI(1, 2, 8)), r(m.CI(1, 2, 9)),
		r(m.GI(1, 3)), r(m.CI(1, 3, 0)), r(m.CI(1, 3, 8)), r(m.GI(2, 2)), r(m.CI(2, 2, 0)),
	}
	want := []result{
		{0, false}, {7, true}, {0, false}, {8, true}, {0, false},
		{9, true}, {0, false}, {0, false}, {0, false}, {0, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	if m.Len() != 3 {
		t.Errorf("Len() = %d, want 3", m.Len())
	}
}

func TestNilMap(t *testing.T) {
	var m *Map
	if _, ok := m.GI(0, 0); ok {
		t.Error("nil GI found an entry")
	}
	if _, ok := m.CI(0, 0, 0); ok {
		t.Error("nil CI found an entry")
	}
	if m.Len() != 0 || m.Source() != "" {
		t.Error("nil map not empty")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n"))
	f.Add([]byte("gpu0/gi0/access x3\n"))
	f.Add([]byte("gpuX/gi1/access 3\n"))
	f.Add([]byte("\x00\xff\n"))
	f.Add([]byte("gpu1/gi0/access 3\ngpu0/gi0/access 3\ngpu1/gi0/access 3\n"))
	f.Add([]byte(" gpu0/gi0/ci0/access\t4 \r\nconfig 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(bytes.NewReader(data), "fuzz")
		if err != nil && m != nil {
			t.Fatal("map returned with error")
		}
		if err == nil && m.Len() == 0 {
			t.Fatal("empty map without error")
		}
		if len(data) >= maxLineLen {
			return // the reference below knows no line limit
		}
		want, ok := referenceParse(string(data))
		if ok != (err == nil) {
			t.Fatalf("Parse error = %v, reference parser ok = %v", err, ok)
		}
		if ok {
			if diff := cmp.Diff(want, dump(m)); diff != "" {
				t.Fatalf("entries differ from the reference (-ref +got):\n%s", diff)
			}
		}
	})
}

// referenceParse is a slow, plain reading of the rules Parse documents, for
// differential fuzzing.
func referenceParse(data string) (map[string]uint32, bool) {
	out := map[string]uint32{}
	num := func(s string, canonical bool) (uint32, bool) {
		if s == "" || strings.Trim(s, "0123456789") != "" || (canonical && len(s) > 1 && s[0] == '0') {
			return 0, false
		}
		v, err := strconv.ParseUint(s, 10, 32)
		return uint32(v), err == nil
	}
	lines := strings.Split(data, "\n")
	for _, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		for _, c := range []byte(line) {
			if (c < 0x21 || c > 0x7e) && !strings.ContainsRune(" \t\r\v\f", rune(c)) {
				return nil, false
			}
		}
		f := strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\r\v\f", r) })
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, false
		}
		minor, ok := num(f[1], false)
		if !ok {
			return nil, false
		}
		parts := strings.Split(f[0], "/")
		if (len(parts) != 3 && len(parts) != 4) || parts[len(parts)-1] != "access" ||
			!strings.HasPrefix(parts[0], "gpu") || !strings.HasPrefix(parts[1], "gi") ||
			(len(parts) == 4 && !strings.HasPrefix(parts[2], "ci")) {
			continue
		}
		for i, prefix := range []string{"gpu", "gi", "ci"}[:len(parts)-1] {
			if _, ok := num(strings.TrimPrefix(parts[i], prefix), true); !ok {
				return nil, false
			}
		}
		// Same number, same spelling: canonical numbers make names keys.
		if old, dup := out[f[0]]; dup && old != minor {
			return nil, false
		}
		out[f[0]] = minor
	}
	return out, len(out) > 0
}

// FuzzFastLine checks that the fast path for driver-written lines agrees
// with the general path.
func FuzzFastLine(f *testing.F) {
	for _, s := range []string{
		"gpu0/gi0/access 3", "gpu31/gi14/ci7/access 4322", "gpu01/gi0/access 3",
		"gpu0/gi0/ci0/foo/access 3", "gpu4294967296/gi0/access 3", "gpu0/gi0/ci/access 3",
		"gpu0/gi00/access 3", "gpu0/gi0/accessx 3", "gpu0/gi0//access 3", "config 1",
		"gpu0/gi0/access  3", "gpu0/gi0/access 3 ", "gpu0/gi0/access 4294967296",
		"gpu0/gi0/cix/access 3", "gpu0/gi0/ci0/access\t3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		kind, key, sp, minor, ok := fastLine([]byte(line))
		if !ok {
			return
		}
		if sp <= 0 || sp >= len(line) || line[sp] != ' ' {
			t.Fatalf("fastLine(%q): bad sp %d", line, sp)
		}
		wantMinor, ok := parseUint32([]byte(line[sp+1:]), false)
		if !ok || minor != wantMinor {
			t.Fatalf("fastLine(%q) minor = %d, general path (%d, %v)", line, minor, wantMinor, ok)
		}
		wantKind, wantKey, _ := parseName([]byte(line[:sp]))
		if kind != wantKind || key != wantKey {
			t.Fatalf("fastLine(%q) = %v %+v, parseName = %v %+v", line, kind, key, wantKind, wantKey)
		}
	})
}

func capFile(minor int) string {
	return fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 256\nDeviceFileModify: 1\n", minor)
}

func TestLoad(t *testing.T) {
	const tree = CapabilitiesDir + "/"
	goodTree := map[string]string{
		tree + "mig/config":                  capFile(1),
		tree + "mig/monitor":                 capFile(2),
		tree + "fabric-imex-mgmt":            capFile(4323),
		tree + "gpu0/mig/gi1/access":         capFile(12),
		tree + "gpu0/mig/gi1/ci0/access":     capFile(13),
		tree + "gpu0/mig/gi1/ci1/access":     "DeviceFileMode: 256\n  DeviceFileMinor:\t14  \n",
		tree + "gpu0/mig/gi2/access":         capFile(21),
		tree + "gpu1/README":                 "a GPU without MIG has no mig directory\n",
		tree + "gpu3/mig/gi0/access":         capFile(408),
		tree + "gpu3/mig/gi0/ci0/access":     "DeviceFileMinor: 409", // no final newline
		tree + "gpu3/mig/gi0/ci12/access":    capFile(500),
		tree + "gpu3/mig/gi0/notes":          "ignored\n",
		tree + "gpu3/mig/gi0/foo/access":     capFile(999),
		tree + "gpu3/mig/gimem/access":       capFile(999),
		tree + "gpux/mig/gi0/access":         capFile(999),
		tree + "gpu3/mig/gi0/ci01/access":    capFile(999),
		tree + "gpu3/mig/gi0/ci0/ci0/access": capFile(999),
	}
	goodTreeWant := map[string]uint32{
		"gpu0/gi1/access":      12,
		"gpu0/gi1/ci0/access":  13,
		"gpu0/gi1/ci1/access":  14,
		"gpu0/gi2/access":      21,
		"gpu3/gi0/access":      408,
		"gpu3/gi0/ci0/access":  409,
		"gpu3/gi0/ci12/access": 500,
	}
	with := func(base map[string]string, extra map[string]string) map[string]string {
		out := make(map[string]string, len(base)+len(extra))
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}

	for _, tc := range []struct {
		name       string
		files      map[string]string
		dirs       []string
		want       map[string]uint32
		wantSource string // relative to root
		// wantErr is the exact error text, with ROOT standing for the root.
		wantErr string
		wantIs  error
	}{
		{
			name: "mig-minors",
			files: map[string]string{
				MigMinorsPath: "config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n",
			},
			want:       map[string]uint32{"gpu0/gi0/access": 3, "gpu0/gi0/ci0/access": 4},
			wantSource: MigMinorsPath,
		},
		{
			name: "mig-minors wins over the tree",
			files: with(goodTree, map[string]string{
				MigMinorsPath: "gpu0/gi0/access 3\n",
			}),
			want:       map[string]uint32{"gpu0/gi0/access": 3},
			wantSource: MigMinorsPath,
		},
		{
			name: "malformed mig-minors is not papered over by the tree",
			files: with(goodTree, map[string]string{
				MigMinorsPath: "config 1\ngpu0/gi0/access x3\n",
			}),
			wantErr: `ROOT/` + MigMinorsPath + `:2: malformed line "gpu0/gi0/access x3": want "<name> <minor>"`,
		},
		{
			name:    "empty mig-minors",
			files:   with(goodTree, map[string]string{MigMinorsPath: ""}),
			wantErr: `ROOT/` + MigMinorsPath + `: no MIG capability entries`,
		},
		{
			name:       "fallback to the capabilities tree",
			files:      goodTree,
			want:       goodTreeWant,
			wantSource: CapabilitiesDir,
		},
		{
			name:    "neither",
			files:   map[string]string{"proc/driver/nvidia/version": "NVRM version: 580\n"},
			wantErr: `no MIG capability minors: neither ROOT/` + MigMinorsPath + ` nor ROOT/` + CapabilitiesDir + ` exists: file does not exist`,
			wantIs:  fs.ErrNotExist,
		},
		{
			name:    "empty capabilities tree",
			dirs:    []string{CapabilitiesDir},
			wantErr: `ROOT/` + CapabilitiesDir + `: no MIG capability entries`,
		},
		{
			name:    "tree with config and monitor only",
			files:   map[string]string{tree + "mig/config": capFile(1), tree + "mig/monitor": capFile(2)},
			dirs:    []string{tree + "gpu0/mig"},
			wantErr: `ROOT/` + CapabilitiesDir + `: no MIG capability entries`,
		},
		{
			name: "malformed DeviceFileMinor",
			files: with(goodTree, map[string]string{
				tree + "gpu0/mig/gi1/ci1/access": "DeviceFileMode: 256\nDeviceFileMinor: x14\n",
			}),
			wantErr: `ROOT/` + CapabilitiesDir + `/gpu0/mig/gi1/ci1/access:2: malformed DeviceFileMinor: line "DeviceFileMinor: x14": want "DeviceFileMinor: <minor>"`,
		},
		{
			name: "negative DeviceFileMinor",
			files: with(goodTree, map[string]string{
				tree + "gpu0/mig/gi2/access": "DeviceFileMinor: -1\n",
			}),
			wantErr: `ROOT/` + CapabilitiesDir + `/gpu0/mig/gi2/access:1: malformed DeviceFileMinor: line "DeviceFileMinor: -1": want "DeviceFileMinor: <minor>"`,
		},
		{
			name: "empty DeviceFileMinor",
			files: with(goodTree, map[string]string{
				tree + "gpu0/mig/gi2/access": "DeviceFileMinor:\n",
			}),
			wantErr: `ROOT/` + CapabilitiesDir + `/gpu0/mig/gi2/access:1: malformed DeviceFileMinor: line "DeviceFileMinor:": want "DeviceFileMinor: <minor>"`,
		},
		{
			name: "two DeviceFileMinor lines",
			files: with(goodTree, map[string]string{
				tree + "gpu0/mig/gi2/access": "DeviceFileMinor: 21\nDeviceFileMinor: 22\n",
			}),
			wantErr: `ROOT/` + CapabilitiesDir + `/gpu0/mig/gi2/access:2: second DeviceFileMinor: line`,
		},
		{
			name: "missing DeviceFileMinor",
			files: with(goodTree, map[string]string{
				tree + "gpu3/mig/gi0/ci0/access": "DeviceFileMode: 256\n",
			}),
			wantErr: `ROOT/` + CapabilitiesDir + `/gpu3/mig/gi0/ci0/access: no DeviceFileMinor: line`,
		},
		{
			name:    "gi directory without access file",
			files:   goodTree,
			dirs:    []string{tree + "gpu0/mig/gi5"},
			wantErr: `reading MIG capability file: open ROOT/` + CapabilitiesDir + `/gpu0/mig/gi5/access: no such file or directory`,
			wantIs:  fs.ErrNotExist,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fixture.WriteTree(t, root, tc.files)
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			m, err := Load(root)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Load succeeded with %v, want error", dump(m))
				}
				want := strings.ReplaceAll(tc.wantErr, "ROOT", root)
				if diff := cmp.Diff(want, err.Error()); diff != "" {
					t.Errorf("error mismatch (-want +got):\n%s", diff)
				}
				if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
					t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tc.want, dump(m)); diff != "" {
				t.Errorf("entries mismatch (-want +got):\n%s", diff)
			}
			if got, want := m.Source(), filepath.Join(root, tc.wantSource); got != want {
				t.Errorf("Source() = %q, want %q", got, want)
			}
		})
	}
}

func TestLoadTreeSymlinks(t *testing.T) {
	// Directories reached through symbolic links are walked; links to files
	// and dangling links are not directories and are skipped.
	root := t.TempDir()
	capDir := filepath.Join(root, CapabilitiesDir)
	fixture.WriteTree(t, root, map[string]string{
		"elsewhere/gpu4/mig/gi2/access":     capFile(561),
		"elsewhere/gpu4/mig/gi2/ci1/access": capFile(563),
		"elsewhere/file":                    "not a directory\n",
	})
	if err := os.MkdirAll(capDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"gpu4": filepath.Join(root, "elsewhere/gpu4"),
		"gpu5": filepath.Join(root, "elsewhere/file"),
		"gpu6": filepath.Join(root, "elsewhere/missing"),
	} {
		if err := os.Symlink(target, filepath.Join(capDir, link)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint32{"gpu4/gi2/access": 561, "gpu4/gi2/ci1/access": 563}
	if diff := cmp.Diff(want, dump(m)); diff != "" {
		t.Errorf("entries mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadMigMinorsUnreadable(t *testing.T) {
	// mig-minors exists but cannot be read as a file: the error is returned,
	// not hidden by the fallback.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, MigMinorsPath), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Load(root)
	if err == nil {
		t.Fatal("Load succeeded on a directory named mig-minors")
	}
	if !strings.Contains(err.Error(), filepath.Join(root, MigMinorsPath)) {
		t.Errorf("error %q does not name the path", err)
	}
	if !errors.Is(err, syscall.EISDIR) {
		t.Errorf("error %q does not wrap the system's EISDIR", err)
	}
}

func TestLoadRealFixtureRoot(t *testing.T) {
	data := readReal(t)
	root := t.TempDir()
	fixture.WriteTree(t, root, map[string]string{MigMinorsPath: string(data)})
	m, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Len(), 4320; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	if got, ok := m.CI(31, 14, 7); !ok || got != 4322 {
		t.Errorf("CI(31, 14, 7) = (%d, %v), want (4322, true)", got, ok)
	}
}

func BenchmarkParseRealMigMinors(b *testing.B) {
	data := readReal(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		m, err := Parse(bytes.NewReader(data), realMigMinors)
		if err != nil {
			b.Fatal(err)
		}
		if m.Len() != 4320 {
			b.Fatalf("Len() = %d", m.Len())
		}
	}
}
