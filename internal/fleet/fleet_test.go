package fleet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Fragments as gen writes them: gpu01, gpu02 and gpu04 have one layout,
// gpu03 another (a MIG device first, then a whole GPU), gpu10 the records
// of gpu03 in another order (so another layout: order is indices).
const (
	wholeA = "Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15\n"
	migA   = "Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap201,/dev/nvidia-caps/nvidia-cap202 Cores=16-31\n"
	migB   = "Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap210,/dev/nvidia-caps/nvidia-cap211 Cores=16-31\n"
)

// fragment is what gen prints for node with these records.
func fragment(node string, recs ...string) string {
	var b strings.Builder
	// The header's Gres= counts the records' GPUs, type by type.
	var types []string
	count := map[string]int{}
	for _, r := range recs {
		word := func(key string) string {
			_, v, _ := strings.Cut(r, key+"=")
			v, _, _ = strings.Cut(strings.TrimSpace(v), " ")
			return v
		}
		if word("Name") != "gpu" {
			continue
		}
		t, n := word("Type"), 1
		if files, err := slurmconf.ExpandHostlist(word("File")); err == nil && word("File") != "" {
			n = len(files)
		}
		if count[t] == 0 {
			types = append(types, t)
		}
		count[t] += n
	}
	var gres []string
	for _, t := range types {
		gres = append(gres, fmt.Sprintf("gpu:%s:%d", t, count[t]))
	}
	b.WriteString("# gres.conf written by slurm-mig dev; regenerate it, do not edit by hand.\n# slurm.conf: NodeName=" + node + " Gres=" + strings.Join(gres, ",") + "\n")
	for _, r := range recs {
		b.WriteString("NodeName=" + node + " " + r)
	}
	return b.String()
}

func mergeArgs(t *testing.T, args ...string) (*Fleet, error) {
	t.Helper()
	return Merge(args, "")
}

func TestMergeGroupsIdenticalNodes(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"gpu01.conf":           fragment("gpu01", wholeA, migA, migB),
		"gpu02.conf":           fragment("gpu02", wholeA, migA, migB),
		"gpu03.conf":           fragment("gpu03", migA, wholeA),
		"gpu04.conf":           fragment("gpu04", wholeA, migA, migB),
		"gpu10.conf":           fragment("gpu10", wholeA, migA),
		"README":               "not a fragment: not *.conf",
		".gpu05.conf.tmp.conf": "a temporary file of gen -o: starts with '.'",
	})
	f, err := mergeArgs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := `# gres.conf written by slurm-mig test merge; regenerate it, do not edit by hand.
# 5 nodes, 3 layouts: nodes with identical records share lines.

# layout 1 of 3: 3 nodes; slurm.conf: NodeName=gpu[01-02,04] Gres=gpu:a100:1,gpu:a100_1g.10gb:2
NodeName=gpu[01-02,04] Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15
NodeName=gpu[01-02,04] Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap201,/dev/nvidia-caps/nvidia-cap202 Cores=16-31
NodeName=gpu[01-02,04] Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap210,/dev/nvidia-caps/nvidia-cap211 Cores=16-31

# layout 2 of 3: 1 node; slurm.conf: NodeName=gpu03 Gres=gpu:a100_1g.10gb:1,gpu:a100:1
NodeName=gpu03 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap201,/dev/nvidia-caps/nvidia-cap202 Cores=16-31
NodeName=gpu03 Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15

# layout 3 of 3: 1 node; slurm.conf: NodeName=gpu10 Gres=gpu:a100:1,gpu:a100_1g.10gb:1
NodeName=gpu10 Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15
NodeName=gpu10 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap201,/dev/nvidia-caps/nvidia-cap202 Cores=16-31
`
	if diff := cmp.Diff(want, string(f.GresConf("test"))); diff != "" {
		t.Errorf("gres.conf (-want +got):\n%s", diff)
	}
	// gpu03 and gpu10 declare the same counts in another order: Slurm
	// adds them up by type, so they share one slurm.conf line.
	wantLines := `NodeName=gpu[01-02,04] Gres=gpu:a100:1,gpu:a100_1g.10gb:2
NodeName=gpu03 Gres=gpu:a100_1g.10gb:1,gpu:a100:1
NodeName=gpu10 Gres=gpu:a100:1,gpu:a100_1g.10gb:1
`
	if diff := cmp.Diff(wantLines, string(f.NodeLines())); diff != "" {
		t.Errorf("node lines (-want +got):\n%s", diff)
	}
}

// A merged file is a fragment too: merging it again, alone or with the
// fragments it came from, gives the same file.
func TestMergeAgainIsTheSame(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"gpu01.conf": fragment("gpu01", wholeA, migA),
		"gpu02.conf": fragment("gpu02", wholeA, migA),
		"gpu03.conf": fragment("gpu03", migB),
	})
	f, err := mergeArgs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(t.TempDir(), "gres.conf")
	if err := os.WriteFile(merged, f.GresConf("test"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{merged}, {merged, dir}, {dir, merged, filepath.Join(dir, "gpu03.conf")}} {
		again, err := mergeArgs(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if diff := cmp.Diff(string(f.GresConf("test")), string(again.GresConf("test"))); diff != "" {
			t.Errorf("merging %v again (-first +again):\n%s", args, diff)
		}
	}
}

// Slurm's sharing layout names a GPU's file again for mps or shard:
// other GRES, not the device twice.
func TestMergeKeepsSharingGres(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"gpu01.conf": fragment("gpu01", wholeA, "Name=mps Count=100 File=/dev/nvidia0\n", "Name=shard Count=4 File=/dev/nvidia0\n"),
	})
	f, err := mergeArgs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(f.NodeLines()); !strings.Contains(got, "gpu:a100:1") || !strings.Contains(got, "mps:100") || !strings.Contains(got, "shard:4") {
		t.Errorf("node lines:\n%s", got)
	}
}

func TestMergeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // the error, less the temp dir
	}{
		{"different records twice", map[string]string{
			"a.conf": fragment("gpu01", wholeA, migA),
			"b.conf": fragment("gpu01", wholeA, migB),
		}, "node gpu01 is given twice with different records: a.conf:4 has " + strings.TrimSpace(migA) + ", b.conf:4 has " + strings.TrimSpace(migB)},
		{"one more record", map[string]string{
			"a.conf": fragment("gpu01", wholeA),
			"b.conf": fragment("gpu01", wholeA, migB),
		}, "node gpu01 is given twice with different records: b.conf:4 has " + strings.TrimSpace(migB) + ", but a.conf has no more records for it (its last is at line 3)"},
		{"in a hostlist too", map[string]string{
			"a.conf":       fragment("gpu01", wholeA),
			"merged.conf":  "NodeName=gpu[00-02] " + migA,
			"z-other.conf": fragment("gpu07", wholeA),
		}, "node gpu01 is given twice with different records: a.conf:3 has " + strings.TrimSpace(wholeA) + ", merged.conf:1 has " + strings.TrimSpace(migA)},
		{"no NodeName", map[string]string{
			"a.conf": fragment("gpu01", wholeA) + wholeA,
		}, "a.conf:4: record without NodeName=: a fleet fragment must name its node"},
		{"empty", map[string]string{
			"a.conf": fragment("gpu01", wholeA),
			"b.conf": "# gres.conf written by slurm-mig dev\n# slurm.conf: NodeName=gpu02\n",
		}, "b.conf: no gres.conf records (a node without GPUs needs no fragment; an empty one may be a failed gen)"},
		{"Include", map[string]string{
			"a.conf": fragment("gpu01", wholeA) + "Include /etc/slurm/more.conf\n",
		}, "a.conf:4: Include is not followed here: give the included file itself"},
		{"AutoDetect", map[string]string{
			"a.conf": "AutoDetect=off\n" + fragment("gpu01", wholeA),
		}, "a.conf:1: AutoDetect= is a setting of the node reading gres.conf, not a record; set it in the cluster's gres.conf by hand"},
		{"not gen's syntax", map[string]string{
			"a.conf": fragment("gpu01", wholeA, "Name=gpu Typo=a100 File=/dev/nvidia1\n"),
		}, `a.conf:4: unknown gres.conf keyword "Typo"`},
		{"bad hostlist", map[string]string{
			"a.conf": "NodeName=gpu[01-02 " + wholeA,
		}, `a.conf:1: NodeName=: hostlist "gpu[01-02": '[' without ']'`},
		{"one device twice", map[string]string{
			"a.conf": fragment("gpu01", wholeA, migA, migA),
		}, "a.conf:5: device /dev/nvidia1,/dev/nvidia-caps/nvidia-cap201,/dev/nvidia-caps/nvidia-cap202 is given twice for node gpu01 (first at line 4)"},
		{"one device twice, its files in another order", map[string]string{
			"a.conf": fragment("gpu01", migA, "Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia-caps/nvidia-cap202,/dev/nvidia1,/dev/nvidia-caps/nvidia-cap201\n"),
		}, "a.conf:4: device /dev/nvidia-caps/nvidia-cap202,/dev/nvidia1,/dev/nvidia-caps/nvidia-cap201 is given twice for node gpu01 (first at line 3)"},
		// A fragment cut short: its header declares more than its
		// records give (a full disk, a copy interrupted).
		{"truncated", map[string]string{
			"a.conf": strings.TrimSuffix(fragment("gpu01", wholeA, migA, migB), "NodeName=gpu01 "+migB),
		}, "a.conf:2: the records do not add up to this header (NodeName=gpu01 Gres=gpu:a100:1,gpu:a100_1g.10gb:2): a.conf:2: Gres=gpu:a100_1g.10gb:2 declared, but the records have 1; slurmctld drains the node (\"gres/gpu count reported lower than configured (1 < 2)\"); a fragment cut short or edited after gen wrote it (run gen again on the node)"},
		{"more records than the header", map[string]string{
			"a.conf": fragment("gpu01", wholeA, migA) + "NodeName=gpu01 " + migB,
		}, "a.conf:2: the records do not add up to this header (NodeName=gpu01 Gres=gpu:a100:1,gpu:a100_1g.10gb:1): a.conf:5: Gres=gpu:a100:1,gpu:a100_1g.10gb:1 (a.conf:2) declares fewer; slurmd: \"A line in gres.conf for GRES gpu:a100_1g.10gb has 1 more configured than expected in slurm.conf. Ignoring extra GRES.\"; a fragment cut short or edited after gen wrote it (run gen again on the node)"},
		{"a gpu record without files", map[string]string{
			"a.conf": fragment("gpu01", wholeA, "Name=gpu Type=a100 Count=1\n"),
		}, "a.conf:4: a gpu record without File= or MultipleFiles=: slurmd gives a job no device file for it; gen writes every GPU with its files"},
		{"one file twice in a range", map[string]string{
			"a.conf": fragment("gpu01", "Name=gpu Type=a100 File=/dev/nvidia[0-1]\n", "Name=gpu Type=a100 File=/dev/nvidia1\n"),
		}, "a.conf:4: device /dev/nvidia1 is given twice for node gpu01 (first at line 3)"},
		{"binary", map[string]string{
			"a.conf": fragment("gpu01", wholeA) + "\x00",
		}, "a.conf: binary data (NUL byte); not a Slurm config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture.Tree(t, tc.files)
			_, err := mergeArgs(t, dir)
			if err == nil {
				t.Fatalf("merged; want the error %s", tc.want)
			}
			said := err.Error()
			if h := advice.Hinter(nil); errors.As(err, &h) {
				said += h.Hint()
			}
			if got := strings.ReplaceAll(said, dir+"/", ""); got != tc.want {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
			// A record without NodeName= carries the fix: gen names the
			// node unless told not to.
			if got, want := hasFix(err, advice.FragmentNodeName), tc.name == "no NodeName"; got != want {
				t.Errorf("error carries advice.FragmentNodeName: %v, want %v", got, want)
			}
		})
	}
}

// The first bad fragment in the order given is the one reported, however
// the reads are spread over goroutines.
func TestMergeReportsTheFirstError(t *testing.T) {
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("gpu%03d.conf", i)] = fragment(fmt.Sprintf("gpu%03d", i), wholeA)
	}
	files["gpu150.conf"] = "bad\n"
	files["gpu170.conf"] = "worse\n"
	dir := fixture.Tree(t, files)
	for range 5 {
		_, err := mergeArgs(t, dir)
		if err == nil || !strings.Contains(err.Error(), "gpu150.conf:1:") {
			t.Fatalf("error %v, want gpu150.conf's", err)
		}
	}
}

func TestFragments(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"b.conf": "", "a.conf": "", "notes.txt": "", ".a.conf.lock.conf": "", "sub/c.conf": "",
	})
	got, err := Fragments([]string{dir, filepath.Join(dir, "notes.txt")}, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		names = append(names, strings.TrimPrefix(g, dir+"/"))
	}
	// sub/ is a directory named .conf-less: not read; sub/c.conf is not
	// read either (no recursion).
	if diff := cmp.Diff([]string{"a.conf", "b.conf", "notes.txt"}, names); diff != "" {
		t.Errorf("fragments (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		args   []string
		output string
		want   string
	}{
		{[]string{filepath.Join(dir, "sub"), filepath.Join(dir, "none")}, "", "none: no such file or directory"},
		{[]string{filepath.Join(t.TempDir())}, "", "no *.conf fragments in this directory"},
		{[]string{dir}, filepath.Join(dir, "a.conf"), "a.conf is among the inputs"},
		{[]string{dir}, filepath.Join(dir, "cluster.conf"), "cluster.conf is among the inputs"}, // next time
		{[]string{filepath.Join(dir, "b.conf")}, filepath.Join(dir, "b.conf"), "b.conf is among the inputs"},
	} {
		_, err := Fragments(tc.args, tc.output)
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("Fragments(%v, %q): %v, want %q", tc.args, tc.output, err, tc.want)
		}
		// The output among the inputs carries its fix, as the command
		// line words it.
		if got, want := hasFix(err, advice.OutputIsInput), strings.Contains(tc.want, "among the inputs"); got != want {
			t.Errorf("Fragments(%v, %q): carries advice.OutputIsInput: %v, want %v", tc.args, tc.output, got, want)
		}
	}
	// An output beside the fragments that is not one is fine.
	for _, name := range []string{"cluster-gres", ".cluster.conf", "sub/gres.conf"} {
		if _, err := Fragments([]string{dir}, filepath.Join(dir, name)); err != nil {
			t.Errorf("output %s beside the fragments: %v", name, err)
		}
	}
}

// TestMergeRandomFleets is the property the merge exists for: whatever the
// fleet, every node reads back from the merged file exactly its own
// records, in its own order (slurmconf.ReadGresConf reads as slurmd does
// for one node); there is one group of lines per distinct layout; and
// each node's slurm.conf line is what `node` counts for it.
func TestMergeRandomFleets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 18))
	pool := []string{wholeA, migA, migB,
		"Name=gpu Type=a100 File=/dev/nvidia[2-3] Links=-1,0\n",
		"Name=gpu Type=h100_3g.40gb MultipleFiles=/dev/nvidia4,/dev/nvidia-caps/nvidia-cap552,/dev/nvidia-caps/nvidia-cap553\n",
		"Name=mps Count=100\n"}
	parsed := map[string]slurmconf.GresRecord{}
	for _, line := range pool {
		parsed[line] = parseLine(t, line)
	}
	for round := range 30 {
		// A few layouts: random subsets of the pool in random order.
		layouts := make([][]string, 1+rng.IntN(5))
		for i := range layouts {
			perm := rng.Perm(len(pool))[:1+rng.IntN(len(pool))]
			for _, p := range perm {
				layouts[i] = append(layouts[i], pool[p])
			}
		}
		// Nodes with random names, some given twice (same records).
		files := map[string]string{}
		want := map[string][]string{}
		for i := range 1 + rng.IntN(60) {
			node := fmt.Sprintf("%s%0*d", []string{"gpu", "a", "rack1-n"}[rng.IntN(3)], 1+rng.IntN(3), rng.IntN(200))
			if _, dup := want[node]; dup {
				continue
			}
			l := layouts[rng.IntN(len(layouts))]
			want[node] = l
			files[fmt.Sprintf("f%03d.conf", i)] = fragment(node, l...)
			if rng.IntN(10) == 0 {
				files[fmt.Sprintf("f%03d-again.conf", i)] = fragment(node, l...)
			}
		}
		dir := fixture.Tree(t, files)
		f, err := mergeArgs(t, dir)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		merged := filepath.Join(t.TempDir(), "gres.conf")
		if err := os.WriteFile(merged, f.GresConf("test"), 0o644); err != nil {
			t.Fatal(err)
		}
		distinct := map[string]bool{}
		for _, l := range want {
			distinct[strings.Join(l, "")] = true
		}
		if len(f.Layouts) != len(distinct) || f.Nodes() != len(want) {
			t.Errorf("round %d: %d nodes in %d layouts, want %d in %d", round, f.Nodes(), len(f.Layouts), len(want), len(distinct))
		}
		nodeLines := string(f.NodeLines())
		for node, recs := range want {
			conf, err := slurmconf.ReadGresConf(merged, node)
			if err != nil {
				t.Fatal(err)
			}
			var got, wantRecs []slurmconf.GresRecord
			for _, r := range conf.GresRecords() {
				r.NodeName = ""
				got = append(got, r)
			}
			for _, line := range recs {
				wantRecs = append(wantRecs, parsed[line])
			}
			if diff := cmp.Diff(wantRecs, got); diff != "" {
				t.Fatalf("round %d: %s reads back (-fragment +merged):\n%s", round, node, diff)
			}
			counts, err := slurmconf.CountGres(wantRecs)
			if err != nil {
				t.Fatal(err)
			}
			gres := slurmconf.GresList(counts)
			if !slices.ContainsFunc(strings.Split(nodeLines, "\n"), func(line string) bool {
				hosts, g, _ := strings.Cut(strings.TrimPrefix(line, "NodeName="), " Gres=")
				names, _ := slurmconf.ExpandHostlist(hosts)
				return g == gres && slices.Contains(names, node)
			}) {
				t.Fatalf("round %d: no node line gives %s Gres=%s:\n%s", round, node, gres, nodeLines)
			}
		}
	}
}

// parseLine reads one record line (no NodeName=) as a merge reads it.
func parseLine(t *testing.T, line string) slurmconf.GresRecord {
	t.Helper()
	path := filepath.Join(t.TempDir(), "line.conf")
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	var r slurmconf.RecordReader
	lines, err := r.Read(path)
	if err != nil || len(lines) != 1 {
		t.Fatalf("%q: %v", line, err)
	}
	return lines[0].Record.GresRecord
}

// The synthetic fleet of the benchmark merges into its four layouts, each
// node's Gres= being what its fragment's header says `node` prints.
func TestMergeSyntheticFleet(t *testing.T) {
	dir := writeFleet(t, 500)
	f, err := mergeArgs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if f.Nodes() != 500 || len(f.Layouts) != synth.FleetLayouts {
		t.Fatalf("%d nodes in %d layouts, want 500 in %d", f.Nodes(), len(f.Layouts), synth.FleetLayouts)
	}
	for _, l := range f.Layouts {
		for _, node := range l.Nodes {
			data, err := os.ReadFile(filepath.Join(dir, node+".conf"))
			if err != nil {
				t.Fatal(err)
			}
			want := "# slurm.conf: " + slurmconf.NodeLine(node, l.Counts()) + "\n"
			if !strings.Contains(string(data), want) {
				t.Fatalf("%s: merged Gres= %s is not its fragment's:\n%s", node, slurmconf.GresList(l.Counts()), data)
			}
		}
	}
}

// hasFix reports whether err carries the fix.
func hasFix(err error, fix advice.Fix) bool {
	var a *advice.Error
	return errors.As(err, &a) && a.Fix == fix
}

// merge -o and merge --node-lines -o refuse to replace a file with a line
// they do not write, or one they cannot read: the error is the line, or
// the reader's, with the writer's fix naming the file, which the command
// line words.
func TestWriteRefuses(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"frags/gpu01.conf": fragment("gpu01", wholeA),
		"foreign.conf":     "# the admin's\n",
		"unreadable.conf":  "Name=gpu Typ=a100\n",
		"foreign.nodes":    "# the admin's\n",
		"unreadable.nodes": "NodeName=gpu01\x00\n",
	})
	f, err := mergeArgs(t, filepath.Join(dir, "frags"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  string
		write func(path string) (*Written, error)
		want  string
		fix   advice.Fix
	}{
		{"foreign.conf", func(p string) (*Written, error) { return f.WriteGresConf(p, "dev", false) }, "foreign.conf:1: a comment", advice.ClusterGresConfForeignLine},
		{"unreadable.conf", func(p string) (*Written, error) { return f.WriteGresConf(p, "dev", false) }, `unreadable.conf:1: unknown gres.conf keyword "Typ"`, advice.ClusterGresConfUnreadable},
		{"foreign.nodes", func(p string) (*Written, error) { return f.WriteNodeLines(p, false) }, "foreign.nodes:1: a comment", advice.ClusterNodeLinesForeignLine},
		{"unreadable.nodes", func(p string) (*Written, error) { return f.WriteNodeLines(p, false) }, "unreadable.nodes: binary data (NUL byte); not a Slurm config", advice.ClusterNodeLinesUnreadable},
	} {
		path := filepath.Join(dir, tc.file)
		before, _ := os.ReadFile(path)
		_, err := tc.write(path)
		var a *advice.Error
		if !errors.As(err, &a) || a.Fix != tc.fix || !slices.Equal(a.Args, []any{path}) || strings.ReplaceAll(err.Error(), dir+"/", "") != tc.want {
			t.Errorf("%s: %v (%+v); want %s with fix %v naming the file", tc.file, err, a, tc.want, tc.fix)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Errorf("%s changed:\n%s", tc.file, after)
		}
	}
}

// A fragment without the share line of one of its types cannot be billed;
// the hint, apart from the message, is to write it again.
func TestAccountingNodesWithoutShareLine(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{"gpu01.conf": fragment("gpu01", wholeA)})
	f, err := mergeArgs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.AccountingNodes()
	var h advice.Hinter
	if !errors.As(err, &h) || !strings.HasSuffix(err.Error(), "no \"# share: a100 ...\" line for node gpu01's type a100") ||
		h.Hint() != ": regenerate the fragment with this slurm-mig's gen, from NVML or a snapshot with MIG profile tables (schema 2)" {
		t.Errorf("err = %v; want the missing share line, with the hint to regenerate the fragment", err)
	}
}
