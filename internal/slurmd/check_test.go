package slurmd

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// A Checker, which works out each set of lines once for the nodes that
// share it, says of every node what CheckNode says of it alone.
func TestCheckerAgreesWithCheckNode(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{"gres.conf": "AutoDetect=off\n" +
		"NodeName=n[1-4] Name=gpu Type=a File=/dev/nvidia[0-1]\n" +
		"NodeName=n2 Type=a File=/dev/nvidia2\n" +
		"NodeName=n3 Name=gpu Type=b File=/dev/nvidia2 Cores=0-99\n" +
		"NodeName=[bad] Name=gpu File=/dev/nvidia3\n" +
		"NodeName=n4 Name=gpu Type=a File=/dev/nvidia[0-1] Count=3\n" +
		"Name=gpu Type=a File=/dev/nvidia3\n"})
	f, err := slurmconf.ReadGresFile(filepath.Join(dir, "gres.conf"))
	if err != nil {
		t.Fatal(err)
	}
	decls := []*slurmconf.SlurmNode{
		{Nodes: "n[1-2]", Gres: "gpu:a:3", GresTypes: "gpu", CPUs: 8, Pos: "slurm.conf:1"},
		{Nodes: "n3", Gres: "gpu:a:3,gpu:b:1", GresTypes: "gpu", CPUs: 8, Pos: "slurm.conf:2"},
	}
	v := slurmconf.Version{Major: 22, Minor: 5, Micro: 8}
	alone := map[string]NodeCheck{}
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
		alone[n] = CheckNode(f, n, v, declOf(decls, n))
	}
	c := NewChecker(f, v)
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5", "n1", "n2"} {
		if diff := cmp.Diff(alone[n], c.Check(n, declOf(decls, n)), cmp.AllowUnexported(SlurmdRecord{}, slurmconf.SlurmNode{})); diff != "" {
			t.Errorf("%s (-alone +Checker):\n%s", n, diff)
		}
	}
	if !alone["n4"].Fatal() || alone["n1"].Fatal() || len(alone["n2"].Problems) != 2 || len(alone["n3"].Problems) != 2 {
		t.Errorf("n4 must be fatal, n2 have the skipped line and the bad hostlist, n3 the bad hostlist and Cores=: %+v", alone)
	}
}

func declOf(decls []*slurmconf.SlurmNode, node string) *slurmconf.SlurmNode {
	for _, d := range decls {
		names, _ := slurmconf.ExpandHostlist(d.Nodes)
		if slices.Contains(names, node) {
			return d
		}
	}
	return nil
}

// mps and shard are spread over the GPUs they share, with the GPU's type,
// as slurmd -G 22.05.8 printed this file (GresTypes=gpu,mps,shard): mps
// 33, 33, 34; shard 0, 4, 4.
func TestCheckSpreadsSharedGres(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{"gres.conf": "Name=gpu Type=a File=/dev/nvidia[0-1]\n" +
		"Name=gpu Type=b File=/dev/nvidia2\nName=mps Count=100\nName=shard Count=8 File=/dev/nvidia[1-2]\n"})
	f, err := slurmconf.ReadGresFile(filepath.Join(dir, "gres.conf"))
	if err != nil {
		t.Fatal(err)
	}
	decl := &slurmconf.SlurmNode{Nodes: "n1", Gres: "gpu:a:2,gpu:b:1,mps:100,shard:8", GresTypes: "gpu,mps,shard", Pos: "slurm.conf:1"}
	nc := CheckNode(f, "n1", slurmconf.Version{Major: 22, Minor: 5, Micro: 8}, decl)
	var got []string
	for _, r := range nc.Records {
		if r.Name != "gpu" {
			got = append(got, fmt.Sprintf("%s %s %d %s", r.Name, r.Type, r.Count, r.Files[0]))
		}
	}
	want := []string{"mps a 33 /dev/nvidia0", "mps a 33 /dev/nvidia1", "mps b 34 /dev/nvidia2",
		"shard a 0 /dev/nvidia0", "shard a 4 /dev/nvidia1", "shard b 4 /dev/nvidia2"}
	if diff := cmp.Diff(want, got); diff != "" || len(nc.Problems) != 0 {
		t.Errorf("shared records (-want +got):\n%s\nproblems: %v", diff, nc.Problems)
	}
}

// A slurm.conf without GresTypes=gpu gives one error for the node's
// gres.conf records and Gres= entries of that name, not one each: seven
// typed gpu entries are one mistake, and seven identical lines would
// bury the rest. It is said at GresTypes=.
func TestCheckGresTypesMissingOnce(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{"gres.conf": "Name=gpu Type=a File=/dev/nvidia0\n" +
		"Name=gpu Type=b File=/dev/nvidia1\n"})
	f, err := slurmconf.ReadGresFile(filepath.Join(dir, "gres.conf"))
	if err != nil {
		t.Fatal(err)
	}
	decl := &slurmconf.SlurmNode{Nodes: "n1", Gres: "gpu:a:1,gpu:b:1,nic:2", GresTypes: "nic", GresTypesPos: "slurm.conf:1", CPUs: 8, Pos: "slurm.conf:3"}
	got := CheckNode(f, "n1", slurmconf.Version{Major: 22, Minor: 5, Micro: 8}, decl)
	var all []string
	for _, p := range got.Problems {
		all = append(all, p.String())
	}
	want := []string{`slurm.conf:1: error: GresTypes=nic does not name gpu; slurmd ignores gres.conf's records (first at ` + filepath.Join(dir, "gres.conf") +
		`:1: "Ignoring gres.conf record, invalid name") and Gres= of the node line (slurm.conf:3: "Invalid GRES configured on node")`}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
