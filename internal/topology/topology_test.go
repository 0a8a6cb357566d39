package topology

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slurm-mig/slurm-mig/internal/cpulist"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// intelLayout numbers CPUs the way Intel servers do: thread 0 of every core
// of every socket first, then thread 1 of every core, and so on, so that on a
// 2×16×2 node cpu0 and cpu32 are siblings. coreIDs gives the core_id of each
// core within a socket (nil: 0, 1, 2, ...).
func intelLayout(sockets, cores, threads int, coreIDs []int) []CPU {
	var cpus []CPU
	for t := range threads {
		for s := range sockets {
			for c := range cores {
				id := c
				if coreIDs != nil {
					id = coreIDs[c]
				}
				cpus = append(cpus, CPU{ID: t*sockets*cores + s*cores + c, Socket: s, Core: id})
			}
		}
	}
	return cpus
}

// amdLayout numbers the threads of a core next to each other: cpu0 and cpu1
// are one core.
func amdLayout(sockets, cores, threads int) []CPU {
	var cpus []CPU
	for s := range sockets {
		for c := range cores {
			for t := range threads {
				cpus = append(cpus, CPU{ID: (s*cores+c)*threads + t, Socket: s, Core: c})
			}
		}
	}
	return cpus
}

// without drops the CPUs whose ids are listed (to take them offline).
func without(cpus []CPU, ids ...int) []CPU {
	return slices.DeleteFunc(slices.Clone(cpus), func(c CPU) bool { return slices.Contains(ids, c.ID) })
}

// sysfsNode is a node to write as a fake sysfs tree.
type sysfsNode struct {
	name    string
	cpus    []CPU // online CPUs
	offline []int // CPUs that have a cpuN directory but are not online
	noDie   bool  // write no die_id/die_cpus files (old kernels, non-x86)
	queries []query
	hw      NodeHardware // RealMemoryMiB is fixtureMemMiB
}

type query struct {
	cpuList string
	want    []int
}

// fixtureMemKiB is the MemTotal of every fixture: 16 GiB, which gives 16384
// MiB at any page size.
const (
	fixtureMemKiB = 16 << 20
	fixtureMemMiB = 16 << 10
)

var fixtures = []sysfsNode{
	{
		// (a) Intel 2 sockets × 16 cores × 2 threads: socket 0 is cpu0-15
		// and their siblings cpu32-47, socket 1 is cpu16-31 and cpu48-63.
		name: "intel-2x16x2",
		cpus: intelLayout(2, 16, 2, nil),
		queries: []query{
			{"16-31,48-63", rangeInts(16, 31)}, // a GPU affine to socket 1
			{"0-15,32-47", rangeInts(0, 15)},
			{"0-63", rangeInts(0, 31)},
			{"32", []int{0}}, // one thread is enough for its core
			{"47,48", []int{15, 16}},
			{"16-31", rangeInts(16, 31)},
			{"", nil},
			{"64-127", nil}, // not online
		},
		hw: NodeHardware{CPUs: 64, Boards: 1, SocketsPerBoard: 2, CoresPerSocket: 16, ThreadsPerCore: 2},
	},
	{
		// (b) AMD style: siblings adjacent, cpu0 and cpu1 are one core.
		name: "amd-2x4x2",
		cpus: amdLayout(2, 4, 2),
		queries: []query{
			{"0-7", rangeInts(0, 3)},
			{"8-15", rangeInts(4, 7)},
			{"1", []int{0}},
			{"3,4", []int{1, 2}},
		},
		hw: NodeHardware{CPUs: 16, Boards: 1, SocketsPerBoard: 2, CoresPerSocket: 4, ThreadsPerCore: 2},
	},
	{
		// (c) Offline CPUs: online is "0-5,8-15", so core_id 3 (cpu6, cpu7)
		// is gone and the cores after it move down one abstract id, as
		// hwloc numbers only what is online.
		name:    "offline",
		cpus:    without(amdLayout(1, 8, 2), 6, 7),
		offline: []int{6, 7},
		queries: []query{
			{"0-15", rangeInts(0, 6)},
			{"6-7", nil},
			{"8-9", []int{3}},
			{"14-15", []int{6}},
			{"5-8", []int{2, 3}},
		},
		hw: NodeHardware{CPUs: 14, Boards: 1, SocketsPerBoard: 1, CoresPerSocket: 7, ThreadsPerCore: 2},
	},
	{
		// (d) Non-contiguous core_ids within a socket, as on many Intel
		// parts: abstract ids are dense whatever the core_ids are.
		name: "intel-sparse-core-ids",
		cpus: intelLayout(1, 6, 2, []int{0, 1, 2, 8, 9, 10}),
		queries: []query{
			{"3", []int{3}},
			{"9", []int{3}},
			{"0-5", rangeInts(0, 5)},
			{"5,11", []int{5}},
		},
		hw: NodeHardware{CPUs: 12, Boards: 1, SocketsPerBoard: 1, CoresPerSocket: 6, ThreadsPerCore: 2},
	},
	{
		// (e) Single socket, no SMT, no die_id files (kernels before 5.2
		// and non-x86 machines).
		name:  "single-socket-no-smt",
		cpus:  amdLayout(1, 4, 1),
		noDie: true,
		queries: []query{
			{"0-3", rangeInts(0, 3)},
			{"2", []int{2}},
		},
		hw: NodeHardware{CPUs: 4, Boards: 1, SocketsPerBoard: 1, CoresPerSocket: 4, ThreadsPerCore: 1},
	},
	{
		// Package ids and core_ids that run against the CPU numbering:
		// cpu0-3 are package 1, cpu4-7 package 0, core_ids descend. hwloc
		// (and so Slurm) orders by lowest CPU id, so cpuN is core N here;
		// sorting by (physical_package_id, core_id) would make cpu7 core 0.
		name: "ids-against-cpu-order",
		cpus: []CPU{
			{ID: 0, Socket: 1, Core: 3}, {ID: 1, Socket: 1, Core: 2}, {ID: 2, Socket: 1, Core: 1}, {ID: 3, Socket: 1, Core: 0},
			{ID: 4, Socket: 0, Core: 3}, {ID: 5, Socket: 0, Core: 2}, {ID: 6, Socket: 0, Core: 1}, {ID: 7, Socket: 0, Core: 0},
		},
		queries: []query{
			{"0", []int{0}},
			{"7", []int{7}},
			{"4-5", []int{4, 5}},
		},
		hw: NodeHardware{CPUs: 8, Boards: 1, SocketsPerBoard: 2, CoresPerSocket: 4, ThreadsPerCore: 1},
	},
	{
		// Two dies whose CPUs interleave (die = id%2), with core_ids that
		// repeat across the dies. hwloc numbers die 0's cores first, then
		// die 1's: the die is needed both to tell cores apart and to order
		// them.
		name: "interleaved-dies",
		cpus: func() []CPU {
			var cpus []CPU
			for id := range 8 {
				cpus = append(cpus, CPU{ID: id, Socket: 0, Die: id % 2, Core: id / 2})
			}
			return cpus
		}(),
		queries: []query{
			{"0-1", []int{0, 4}},
			{"1", []int{4}},
			{"2", []int{1}},
			{"7", []int{7}},
			{"0,2,4,6", rangeInts(0, 3)},
		},
		hw: NodeHardware{CPUs: 8, Boards: 1, SocketsPerBoard: 1, CoresPerSocket: 8, ThreadsPerCore: 1},
	},
	{
		// Hybrid: four cores with two threads (cpu0-7), four with one
		// (cpu8-11). slurmd divides 12 CPUs by 8 cores: ThreadsPerCore=1.
		name: "hybrid",
		cpus: append(amdLayout(1, 4, 2), CPU{ID: 8, Core: 4}, CPU{ID: 9, Core: 5}, CPU{ID: 10, Core: 6}, CPU{ID: 11, Core: 7}),
		queries: []query{
			{"0-1", []int{0}},
			{"7", []int{3}},
			{"8", []int{4}},
			{"6-11", rangeInts(3, 7)},
		},
		hw: NodeHardware{CPUs: 12, Boards: 1, SocketsPerBoard: 1, CoresPerSocket: 8, ThreadsPerCore: 1},
	},
}

func rangeInts(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

// writeTree writes f as a sysfs tree complete enough for Load and for hwloc's
// Linux backend (hwloc-calc -i DIR --if fsroot, HWLOC_FSROOT=DIR slurmd -C):
// the online list, a cpuN directory per CPU, and for online CPUs the topology
// ids and sibling masks, plus proc/meminfo.
func writeTree(tb testing.TB, f sysfsNode) string {
	tb.Helper()
	root := tb.TempDir()
	dir := filepath.Join(root, cpuDir)
	ids := []int{}
	maxID := 0
	for _, c := range f.cpus {
		ids = append(ids, c.ID)
		maxID = max(maxID, c.ID)
	}
	for _, id := range f.offline {
		maxID = max(maxID, id)
		mustWrite(tb, filepath.Join(dir, "cpu"+strconv.Itoa(id), "online"), "0")
	}
	mustWrite(tb, filepath.Join(dir, "online"), cpulist.Format(ids))
	mustWrite(tb, filepath.Join(root, "proc", "meminfo"),
		fmt.Sprintf("MemTotal:       %d kB\nMemFree:        1234 kB\n", fixtureMemKiB))

	// match lists the online CPUs for which same(c) holds.
	match := func(same func(CPU) bool) []int {
		var out []int
		for _, c := range f.cpus {
			if same(c) {
				out = append(out, c.ID)
			}
		}
		return out
	}
	for _, c := range f.cpus {
		topo := filepath.Join(dir, "cpu"+strconv.Itoa(c.ID), "topology")
		files := map[string]string{
			"physical_package_id": strconv.Itoa(c.Socket),
			"core_id":             strconv.Itoa(c.Core),
		}
		masks := map[string][]int{
			"thread_siblings": match(func(o CPU) bool { return o.Socket == c.Socket && o.Die == c.Die && o.Core == c.Core }),
			"core_siblings":   match(func(o CPU) bool { return o.Socket == c.Socket }),
		}
		masks["core_cpus"] = masks["thread_siblings"]
		masks["package_cpus"] = masks["core_siblings"]
		if !f.noDie {
			files["die_id"] = strconv.Itoa(c.Die)
			masks["die_cpus"] = match(func(o CPU) bool { return o.Socket == c.Socket && o.Die == c.Die })
		}
		for name, set := range masks {
			files[name] = hexMask(set, maxID+1)
			files[name+"_list"] = cpulist.Format(set)
		}
		for name, content := range files {
			mustWrite(tb, filepath.Join(topo, name), content)
		}
	}
	return root
}

// hexMask renders a CPU set as the kernel prints cpumasks: 32-bit words in
// hex, most significant first, separated by commas.
func hexMask(ids []int, nbits int) string {
	words := make([]uint32, (nbits+31)/32)
	for _, id := range ids {
		words[id/32] |= 1 << (id % 32)
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ",")
}

func mustWrite(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// TestFixtures writes each fixture as a sysfs tree once and checks Load,
// AbstractCores and Hardware on it; where hwloc-calc and slurmd are
// installed, it also runs them over the same tree (hwloc's Linux backend, the
// parser slurmd itself uses) as oracles.
func TestFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			root := writeTree(t, f)
			topo, err := Load(hostfs.FS(root))
			if err != nil {
				t.Fatal(err)
			}

			t.Run("AbstractCores", func(t *testing.T) {
				for _, q := range f.queries {
					got, err := topo.AbstractCores(q.cpuList)
					if err != nil {
						t.Errorf("AbstractCores(%q): %v", q.cpuList, err)
						continue
					}
					if diff := cmp.Diff(q.want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("AbstractCores(%q) (-want +got):\n%s", q.cpuList, diff)
					}
				}
			})

			t.Run("CPUs", func(t *testing.T) {
				want := slices.Clone(f.cpus)
				slices.SortFunc(want, func(a, b CPU) int { return a.ID - b.ID })
				if diff := cmp.Diff(want, topo.CPUs()); diff != "" {
					t.Errorf("CPUs() (-want +got):\n%s", diff)
				}
				// A snapshot's CPUs, in any order, rebuild the same numbering.
				shuffled := topo.CPUs()
				slices.Reverse(shuffled)
				rebuilt, err := New(shuffled)
				if err != nil {
					t.Fatal(err)
				}
				if !cmp.Equal(topo.absCore, rebuilt.absCore) {
					t.Errorf("New(CPUs()) numbers cores differently from Load")
				}
			})

			t.Run("Hardware", func(t *testing.T) {
				got, err := topo.Hardware(hostfs.FS(root))
				if err != nil {
					t.Fatal(err)
				}
				want := f.hw
				want.RealMemoryMiB = fixtureMemMiB
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Hardware (-want +got):\n%s", diff)
				}
			})

			t.Run("hwloc-calc", func(t *testing.T) {
				hwlocCalc := requireTool(t, "hwloc-calc", "hwloc")
				for _, q := range f.queries {
					if q.cpuList == "" {
						continue
					}
					got := hwlocCores(t, hwlocCalc, q.cpuList, "--input", root, "--input-format", "fsroot")
					if diff := cmp.Diff(q.want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("hwloc-calc on %q (-want +hwloc):\n%s", q.cpuList, diff)
					}
				}
				// And the whole map, one CPU at a time.
				for _, c := range f.cpus {
					list := strconv.Itoa(c.ID)
					got, _ := topo.AbstractCores(list)
					want := hwlocCores(t, hwlocCalc, list, "--input", root, "--input-format", "fsroot")
					if !cmp.Equal(want, got) {
						t.Errorf("cpu%d: AbstractCores says core %v, hwloc-calc says %v", c.ID, got, want)
					}
				}
			})

			// slurmd's hwloc reads the tree through HWLOC_FSROOT. RealMemory
			// is left out: slurmd takes it from sysconf, not from the tree.
			t.Run("slurmd -C", func(t *testing.T) {
				slurmd := requireTool(t, "slurmd", "slurmd")
				got, err := topo.Hardware(hostfs.FS(root))
				if err != nil {
					t.Fatal(err)
				}
				want, line := slurmdHardware(t, slurmd, "HWLOC_FSROOT="+root)
				got.RealMemoryMiB, want.RealMemoryMiB = 0, 0
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Hardware differs from slurmd -C %q (-slurmd +got):\n%s", line, diff)
				}
			})
		})
	}
}

func TestRealMemoryMiB(t *testing.T) {
	tests := []struct {
		name        string
		memKiB      uint64
		pageSize    uint64
		want        uint64
		description string
	}{
		{"this dev VM", 24684092, 4096, 24105, "slurmd -C printed RealMemory=24105 for MemTotal 24684092 kB"},
		{"exact GiB", 16 << 20, 4096, 16 << 10, ""},
		{"64K pages", 16 << 20, 65536, 16 << 10, ""},
		{"under a MiB boundary", 1023, 4096, 0, ""},
		// 33554687 pages (one page short of 131073 MiB) is over 2^25, where a
		// float holds multiples of 4: it rounds up to 33554688, so slurmd
		// reports 131073, not the exact floor 131072.
		{"float rounds up", 33554687 * 4, 4096, 131073, ""},
		// 2^24 pages and below are exact in a float.
		{"float exact", (1<<24 - 1) * 4, 4096, 65535, ""},
	}
	for _, tt := range tests {
		if got := realMemoryMiB(tt.memKiB, tt.pageSize); got != tt.want {
			t.Errorf("%s: realMemoryMiB(%d, %d) = %d, want %d %s", tt.name, tt.memKiB, tt.pageSize, got, tt.want, tt.description)
		}
	}
}

func TestNodeHardwareString(t *testing.T) {
	h := NodeHardware{CPUs: 2, Boards: 1, SocketsPerBoard: 1, CoresPerSocket: 1, ThreadsPerCore: 2, RealMemoryMiB: 23989}
	want := "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=1 ThreadsPerCore=2 RealMemory=23989"
	if got := h.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestAbstractCoresMalformed(t *testing.T) {
	topo, err := New(amdLayout(1, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"0-", "x", "1,,2", "2-1"} {
		if got, err := topo.AbstractCores(bad); err == nil {
			t.Errorf("AbstractCores(%q) = %v, want an error", bad, got)
		}
	}
}

func TestNewErrors(t *testing.T) {
	tests := map[string][]CPU{
		"no CPUs":   nil,
		"duplicate": {{ID: 0}, {ID: 1, Core: 1}, {ID: 0, Core: 2}},
		"negative":  {{ID: -1}},
		"too large": {{ID: 1 << 16}},
	}
	for name, cpus := range tests {
		if _, err := New(cpus); err == nil {
			t.Errorf("%s: New succeeded, want an error", name)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	base := sysfsNode{name: "base", cpus: amdLayout(1, 2, 2)}
	cpu1 := filepath.Join(cpuDir, "cpu1", "topology")
	tests := []struct {
		name     string
		mutate   func(root string) error
		wantFile string // the error must name this file (relative to root)
		wantText string
	}{
		{
			name:     "missing online",
			mutate:   func(root string) error { return os.Remove(filepath.Join(root, cpuDir, "online")) },
			wantFile: filepath.Join(cpuDir, "online"),
		},
		{
			name: "malformed online",
			mutate: func(root string) error {
				return os.WriteFile(filepath.Join(root, cpuDir, "online"), []byte("0-3,\n"), 0o644)
			},
			wantFile: filepath.Join(cpuDir, "online"),
		},
		{
			name:     "missing physical_package_id",
			mutate:   func(root string) error { return os.Remove(filepath.Join(root, cpu1, "physical_package_id")) },
			wantFile: filepath.Join(cpu1, "physical_package_id"),
		},
		{
			name:     "missing core_id",
			mutate:   func(root string) error { return os.Remove(filepath.Join(root, cpu1, "core_id")) },
			wantFile: filepath.Join(cpu1, "core_id"),
		},
		{
			name:     "missing topology directory",
			mutate:   func(root string) error { return os.RemoveAll(filepath.Join(root, cpu1)) },
			wantFile: filepath.Join(cpu1, "physical_package_id"),
		},
		{
			name: "non-integer core_id",
			mutate: func(root string) error {
				return os.WriteFile(filepath.Join(root, cpu1, "core_id"), []byte("one\n"), 0o644)
			},
			wantFile: filepath.Join(cpu1, "core_id"),
			wantText: `"one"`,
		},
		{
			name: "malformed die_id",
			mutate: func(root string) error {
				return os.WriteFile(filepath.Join(root, cpu1, "die_id"), []byte("\n"), 0o644)
			},
			wantFile: filepath.Join(cpu1, "die_id"),
		},
		{
			// cpu2 claims core_id 0 like cpu0 and cpu1, but the kernel says
			// it is no sibling of theirs: a repeated core_id.
			name: "core_id repeated across distinct cores",
			mutate: func(root string) error {
				return os.WriteFile(filepath.Join(root, cpuDir, "cpu2", "topology", "core_id"), []byte("0\n"), 0o644)
			},
			wantFile: filepath.Join(cpuDir, "cpu0", "topology", "thread_siblings_list"),
			wantText: "not thread siblings",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, base)
			if err := tt.mutate(root); err != nil {
				t.Fatal(err)
			}
			_, err := Load(hostfs.FS(root))
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if !strings.Contains(err.Error(), filepath.Join(root, tt.wantFile)) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Load error %q does not name %s or say %q", err, tt.wantFile, tt.wantText)
			}
		})
	}
}

func TestLoadWithoutDieOrSiblingFiles(t *testing.T) {
	// The minimum a kernel must offer: online, physical_package_id, core_id.
	root := t.TempDir()
	dir := filepath.Join(root, cpuDir)
	mustWrite(t, filepath.Join(dir, "online"), "0-3")
	for id := range 4 {
		mustWrite(t, filepath.Join(dir, "cpu"+strconv.Itoa(id), "topology", "physical_package_id"), "0")
		mustWrite(t, filepath.Join(dir, "cpu"+strconv.Itoa(id), "topology", "core_id"), strconv.Itoa(id/2))
	}
	topo, err := Load(hostfs.FS(root))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := topo.AbstractCores("2")
	if !cmp.Equal(got, []int{1}) {
		t.Errorf("AbstractCores(2) = %v, want [1]", got)
	}
}

func TestHardwareMeminfoErrors(t *testing.T) {
	topo, err := New(amdLayout(1, 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]*string{
		"missing":      nil,
		"no MemTotal":  ptr("MemFree: 1 kB\n"),
		"no unit":      ptr("MemTotal: 1234\n"),
		"not a number": ptr("MemTotal: lots kB\n"),
	} {
		root := t.TempDir()
		path := filepath.Join(root, "proc", "meminfo")
		if content != nil {
			mustWrite(t, path, *content)
		}
		if _, err := topo.Hardware(hostfs.FS(root)); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Hardware error %v does not name %s", name, err, path)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// requireTool returns the path of an external oracle, by the one rule of
// the tests: skip without it, fail in CI, which must install it.
func requireTool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	return testtools.Require(t, debianPackage, name)
}

// hwlocCores asks hwloc-calc for the logical indexes of the cores that
// intersect an OS CPU list. hwloc-calc takes one pu:A-B location per range
// (it rejects commas) and, with -q, drops PUs that do not exist. extra goes
// before the locations (-i DIR --if fsroot to read a fixture tree).
func hwlocCores(t *testing.T, hwlocCalc, cpuList string, extra ...string) []int {
	t.Helper()
	args := append(slices.Clone(extra), "-q", "--physical-input", "--logical-output", "--intersect", "core")
	for _, item := range strings.Split(cpuList, ",") {
		args = append(args, "pu:"+item)
	}
	out, err := exec.Command(hwlocCalc, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", hwlocCalc, strings.Join(args, " "), err)
	}
	ids, err := cpulist.Parse(string(out))
	if err != nil {
		t.Fatalf("%s %s printed %q: %v", hwlocCalc, strings.Join(args, " "), out, err)
	}
	return ids
}

// slurmdHardware runs slurmd -C with env added and parses its first line.
func slurmdHardware(t *testing.T, slurmd string, env ...string) (NodeHardware, string) {
	t.Helper()
	cmd := exec.Command(slurmd, "-C")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -C: %v", slurmd, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	var h NodeHardware
	fields := map[string]any{
		"CPUs": &h.CPUs, "Boards": &h.Boards, "SocketsPerBoard": &h.SocketsPerBoard,
		"CoresPerSocket": &h.CoresPerSocket, "ThreadsPerCore": &h.ThreadsPerCore, "RealMemory": &h.RealMemoryMiB,
	}
	seen := 0
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		if p, ok := fields[k]; ok {
			if _, err := fmt.Sscan(v, p); err != nil {
				t.Fatalf("slurmd -C: %s in %q: %v", k, line, err)
			}
			seen++
		}
	}
	if seen != len(fields) {
		t.Fatalf("slurmd -C: cannot parse %q", line)
	}
	return h, line
}

// TestRealMachineMatchesHwloc checks AbstractCores on this machine's /sys
// against hwloc-calc on the same machine.
func TestRealMachineMatchesHwloc(t *testing.T) {
	hwlocCalc := requireTool(t, "hwloc-calc", "hwloc")
	topo, err := Load("/")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, c := range topo.CPUs() {
		ids = append(ids, c.ID)
	}
	// All CPUs, each half, each socket's CPUs, and every CPU alone.
	lists := []string{cpulist.Format(ids), cpulist.Format(ids[:len(ids)/2+1]), cpulist.Format(ids[len(ids)/2:])}
	bySocket := map[int][]int{}
	for _, c := range topo.CPUs() {
		bySocket[c.Socket] = append(bySocket[c.Socket], c.ID)
	}
	for _, s := range bySocket {
		lists = append(lists, cpulist.Format(s))
	}
	for _, id := range ids {
		lists = append(lists, strconv.Itoa(id))
	}
	for _, list := range lists {
		got, err := topo.AbstractCores(list)
		if err != nil {
			t.Fatal(err)
		}
		want := hwlocCores(t, hwlocCalc, list)
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("AbstractCores(%q) differs from hwloc-calc (-hwloc +got):\n%s", list, diff)
		}
	}
}

// TestRealMachineMatchesSlurmd checks Hardware("/") against slurmd -C.
func TestRealMachineMatchesSlurmd(t *testing.T) {
	slurmd := requireTool(t, "slurmd", "slurmd")
	topo, err := Load("/")
	if err != nil {
		t.Fatal(err)
	}
	got, err := topo.Hardware("/")
	if err != nil {
		t.Fatal(err)
	}
	want, line := slurmdHardware(t, slurmd)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Hardware(\"/\") differs from slurmd -C %q (-slurmd +got):\n%s", line, diff)
	}
}

func BenchmarkAbstractCores(b *testing.B) {
	// 2 sockets × 64 cores × 2 threads, Intel numbering; a GPU on socket 1.
	topo, err := New(intelLayout(2, 64, 2, nil))
	if err != nil {
		b.Fatal(err)
	}
	const list = "64-127,192-255"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := topo.AbstractCores(list); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	root := writeTree(b, sysfsNode{cpus: intelLayout(2, 64, 2, nil)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(hostfs.FS(root)); err != nil {
			b.Fatal(err)
		}
	}
}
