package slurmconf_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// slurmConfSeeds are slurm.conf texts for both node targets; the golden
// tests' *.conf and *.want files are added to them at test time.
var slurmConfSeeds = []string{
	"ClusterName=demo\nSlurmctldHost=head\nNodeName=DEFAULT CPUs=128 RealMemory=1000000 \\\n   Gres=gpu:a100:1,gpu:a100_1g.10gb:8\nNodeName=n[1-16] State=UNKNOWN\nNodeName=DEFAULT Gres=gpu:h100:8\nNodeName=other[001-100]\nPartitionName=gpu Nodes=n[1-16] Default=YES\n",
	"nodename=n1 CPUs=128 Gres=shard:64,gpu:a100:1 # trailing comment\n",
	"NodeName=DEFAULT Gres=gpu:1\nNodeName=\"n1\" CPUs=4\nNodeName=n2 Gres=gpu:2 # keep\n",
	"NodeName=n1 a=1\nNodeName=n1 b=2\n",
	"NodeName=n[1-2] Gres=gpu:2\n",
	"NodeName=n1 Gres=\"gpu:a100:1\" CPUs=2\r\nNodeName=n2\r\n",
	"NodeName=n1 CPUs=2 Gres=gpu:1 \\\n  RealMemory=5\n",
	"NodeName=n1 CPUs=2 Gres=gpu:\\\n1\n",
	"NodeName=n1 Gres=\nNodeName=n2 Gres=gpu:x:1\n",
	"NodeName=n1 Gres=gpu:1\\#x Feature=a\\\\b\n",
	"Include inc.conf\nNodeName=n1\n",
	"NodeName=n1\nInclude slurm.conf\n",
	"NodeName=n[1-3\n", "NodeName=n1 Gres=\"gpu\n", "NodeName=n2 Gres=gpu:1\n", "",
	"NodeName=n1",
	"NodeName=n1 Gres=gpu:1 CPUs=2 gres=gpu:2\n", // two Gres=: Slurm and --update take the last
}

// FuzzNodeGres: ReadNodeGres never panics; an error starts with the path of
// the file at fault; a result's Pos names the file and line it came from.
func FuzzNodeGres(f *testing.F) {
	for _, s := range slurmConfSeeds {
		f.Add(s)
	}
	for _, s := range txtarSeeds(f, isConfSeed) {
		f.Add(s)
	}
	dir := confDir(f, incSlurm)
	f.Fuzz(func(t *testing.T, data string) {
		if !confinedIncludes(data) {
			return
		}
		path := writeConf(t, dir, "slurm.conf", data)
		ng, err := slurmconf.ReadNodeGres(path, "n1")
		if err != nil {
			if !namesFile(err, dir) {
				t.Fatalf("error %q does not start with the path of the file at fault", err)
			}
			return
		}
		if !strings.HasPrefix(ng.Pos, path+":") && !strings.HasPrefix(ng.Pos, filepath.Join(dir, "inc.conf")+":") {
			t.Fatalf("Pos %q does not name the file", ng.Pos)
		}
	})
}

// FuzzUpdateNodeGres: UpdateNodeGres(data, "slurm.conf", "n1", gres, ...)
// never panics and its errors name the file. On success:
//   - only one physical line changes, and only inside it: every other line
//     is byte-identical;
//   - updating the result again changes nothing;
//   - where ReadNodeGres reads data without error, it reads the result's
//     Gres= for n1 as gres's gpu items, all together, among the other
//     items of n1's Gres= in data, kept in their order; and it reads the
//     other nodes (n2, n10) exactly as in data.
func FuzzUpdateNodeGres(f *testing.F) {
	for _, s := range slurmConfSeeds {
		f.Add(s)
	}
	for _, s := range txtarSeeds(f, isConfSeed) {
		f.Add(s)
	}
	const gres = "gpu:a100:2,gpu:a100_1g.10gb:3"
	dir, dir2 := confDir(f, incSlurm), confDir(f, incSlurm)
	f.Fuzz(func(t *testing.T, data string) {
		// The Gres= n1 inherits is read from data written out, where
		// its Includes stay in the directory.
		inherited := func() (string, error) {
			if !confinedIncludes(data) {
				return "", fmt.Errorf("slurm.conf: an Include outside the test's directory")
			}
			ng, err := slurmconf.ReadNodeGres(writeConf(t, dir, "slurm.conf", data), "n1")
			return ng.Gres, err
		}
		out, err := slurmconf.UpdateNodeGres(data, "slurm.conf", "n1", gres, inherited)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "slurm.conf:") && !namesFile(err, dir) {
				t.Fatalf("error %q does not start with %q or the file's path", err, "slurm.conf:")
			}
			return
		}

		// One physical line changes.
		p := 0
		for p < len(data) && p < len(out) && data[p] == out[p] {
			p++
		}
		s := 0
		for s < len(data)-p && s < len(out)-p && data[len(data)-1-s] == out[len(out)-1-s] {
			s++
		}
		if old, neu := data[p:len(data)-s], out[p:len(out)-s]; strings.Contains(old, "\n") || strings.Contains(neu, "\n") {
			t.Fatalf("the edit %q -> %q spans lines:\n%q\n->\n%q", old, neu, data, out)
		}
		dataLines, outLines := strings.Split(data, "\n"), strings.Split(out, "\n")
		if len(dataLines) != len(outLines) {
			t.Fatalf("%d lines became %d", len(dataLines), len(outLines))
		}
		changed := 0
		for i := range dataLines {
			if dataLines[i] != outLines[i] {
				changed++
				if !strings.Contains(outLines[i], gres) {
					t.Fatalf("line %d changed but does not hold %q: %q -> %q", i+1, gres, dataLines[i], outLines[i])
				}
			}
		}
		if changed > 1 {
			t.Fatalf("%d lines changed", changed)
		}

		again, err := slurmconf.UpdateNodeGres(out, "slurm.conf", "n1", gres, inherited)
		if err != nil || again != out {
			t.Fatalf("updating the result again: %v\n%q\n->\n%q", err, out, again)
		}

		// Read back, where the input reads at all.
		if !confinedIncludes(data) {
			return
		}
		path := writeConf(t, dir, "slurm.conf", data)
		path2 := writeConf(t, dir2, "slurm.conf", out)
		before, err := slurmconf.ReadNodeGres(path, "n1")
		if err != nil {
			return
		}
		ng, err := slurmconf.ReadNodeGres(path2, "n1")
		if err != nil {
			t.Fatalf("the input reads, but not the result: %v\n%q\n->\n%q", err, data, out)
		}
		if want := wantGres(before.Gres, gres); ng.Gres != want {
			t.Fatalf("the result reads as Gres=%s (%s), want %s:\n%q\n->\n%q", ng.Gres, ng.Pos, want, data, out)
		}
		for _, node := range []string{"n2", "n10"} {
			a, errA := slurmconf.ReadNodeGres(path, node)
			b, errB := slurmconf.ReadNodeGres(path2, node)
			sa, sb := strings.ReplaceAll(a.Gres+" "+a.Pos, dir, "DIR"), strings.ReplaceAll(b.Gres+" "+b.Pos, dir2, "DIR")
			if errA != nil {
				sa = strings.ReplaceAll(errA.Error(), dir, "DIR")
			}
			if errB != nil {
				sb = strings.ReplaceAll(errB.Error(), dir2, "DIR")
			}
			if sa != sb {
				t.Fatalf("%s reads as %q before the update, %q after:\n%q\n->\n%q", node, sa, sb, data, out)
			}
		}
	})
}

// wantGres is the Gres= value old with its gpu items replaced by gpus, as
// a reader of Gres= lists sees it: the items are split on the commas
// outside parentheses, and an item is gpu when its name, before any ':'
// or '(', is gpu in any case. gpus take the first gpu item's place, or
// come first.
func wantGres(old, gpus string) string {
	var items []string
	depth, start := 0, 0
	for i := 0; i <= len(old); i++ {
		switch {
		case i == len(old) || old[i] == ',' && depth == 0:
			items = append(items, old[start:i])
			start = i + 1
		case old[i] == '(':
			depth++
		case old[i] == ')':
			depth--
		}
	}
	if t := strings.TrimSpace(old); t == "" || t == "(null)" {
		items = nil
	}
	var out []string
	placed := false
	for _, it := range items {
		name, _, _ := strings.Cut(it, ":")
		name, _, _ = strings.Cut(name, "(")
		if !strings.EqualFold(strings.TrimSpace(name), "gpu") {
			out = append(out, it)
			continue
		}
		if !placed {
			out = append(out, gpus)
			placed = true
		}
	}
	if !placed {
		out = append([]string{gpus}, out...)
	}
	return strings.Join(out, ",")
}
