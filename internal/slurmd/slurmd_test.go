package slurmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// readNodeText writes a gres.conf and a slurm.conf (GresTypes= and node
// n1's line with Gres=gres) and reads n1 as slurmd of v.
func readNodeText(t *testing.T, grestypes, gres, conf string, v slurmconf.Version) NodeCheck {
	t.Helper()
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("gres.conf", conf)
	write("slurm.conf", "GresTypes="+grestypes+"\nNodeName=n1 Gres="+gres+"\n")
	nc, err := ReadNode(filepath.Join(dir, "gres.conf"), filepath.Join(dir, "slurm.conf"), "n1", v)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// indexFiles lists each GPU index's files, joined.
func indexFiles(gpus []GPUIndex) []string {
	var out []string
	for i, g := range gpus {
		if g.Index != i {
			out = append(out, "bad index")
		}
		out = append(out, strings.Join(g.Files, "+"))
	}
	return out
}

// TestReadNodeIndices: the GPU indices that SLURM_JOB_GPUS names, as
// slurmd numbers them (gres.c _merge_gres, gres_common.c), checked
// index by index against real slurmd -G in internal/slurmtest.
func TestReadNodeIndices(t *testing.T) {
	const mixed = `NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0
NodeName=n1 Name=gpu Type=1g MultipleFiles=/dev/nvidia1,/dev/c1,/dev/c2
NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia2
NodeName=n1 Name=gpu Type=1g MultipleFiles=/dev/nvidia1,/dev/c3,/dev/c4
NodeName=n2 Name=gpu Type=1g MultipleFiles=/dev/nvidia9,/dev/c8,/dev/c9
`
	const mig = "Name=gpu Type=1g MultipleFiles=/dev/nvidia0,/dev/c1,/dev/c2\nName=gpu Type=1g MultipleFiles=/dev/nvidia0,/dev/c1,/dev/c3\n"
	v2205, v2411 := slurmconf.Version{Major: 22, Minor: 5, Micro: 8}, slurmconf.Version{Major: 24, Minor: 11, Micro: 1}
	for _, tc := range []struct {
		name, types, gres, conf string
		v                       slurmconf.Version
		want                    []string
		misread, fatal          string // a word of the problem
	}{
		{"types in slurm.conf order, records in file order", "gpu", "gpu:1g:2,gpu:a100:2", mixed, v2205,
			[]string{"/dev/nvidia1+/dev/c1+/dev/c2", "/dev/nvidia1+/dev/c3+/dev/c4", "/dev/nvidia0", "/dev/nvidia2"}, "", ""},
		{"the other order", "gpu", "gpu:a100:2,gpu:1g:2", mixed, v2205,
			[]string{"/dev/nvidia0", "/dev/nvidia2", "/dev/nvidia1+/dev/c1+/dev/c2", "/dev/nvidia1+/dev/c3+/dev/c4"}, "", ""},
		{"types compare without case; socket bindings dropped", "gpu", "gpu:1G:2(S:0),gpu:A100:2", mixed, v2205,
			[]string{"/dev/nvidia1+/dev/c1+/dev/c2", "/dev/nvidia1+/dev/c3+/dev/c4", "/dev/nvidia0", "/dev/nvidia2"}, "", ""},
		{"a count below gres.conf's ignores the rest", "gpu", "gpu:a100:1,gpu:1g:1", mixed, v2205,
			[]string{"/dev/nvidia0", "/dev/nvidia1+/dev/c1+/dev/c2"}, "has 1 more configured than expected", ""},
		{"a type slurm.conf lacks is ignored", "gpu", "gpu:1g:2", mixed, v2205,
			[]string{"/dev/nvidia1+/dev/c1+/dev/c2", "/dev/nvidia1+/dev/c3+/dev/c4"}, "declares no gpu:a100", ""},
		{"a repeated type adds up where it first stands", "gpu", "gpu:1g:1,gpu:a100:2,gpu:1g:1", mixed, v2205,
			[]string{"/dev/nvidia1+/dev/c1+/dev/c2", "/dev/nvidia1+/dev/c3+/dev/c4", "/dev/nvidia0", "/dev/nvidia2"}, "", ""},
		{"untyped takes records in file order", "gpu", "gpu:4", mixed, v2205,
			[]string{"/dev/nvidia0", "/dev/nvidia1+/dev/c1+/dev/c2", "/dev/nvidia2", "/dev/nvidia1+/dev/c3+/dev/c4"}, "", ""},
		{"compact ranges, one index a file, cut to the count", "gpu", "gpu:a100:3,gpu:1g:2",
			"Name=gpu Type=a100 File=/dev/nvidia[0-3]\nName=gpu Type=1g File=/dev/nvidia-caps/nvidia-cap[337,346]\n", v2205,
			[]string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap337", "/dev/nvidia-caps/nvidia-cap346"}, "has 1 more configured", ""},
		{"records without NodeName= come first", "gpu", "gpu:a100:2",
			"NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia1\nName=gpu Type=a100 File=/dev/nvidia0\n", v2205,
			[]string{"/dev/nvidia0", "/dev/nvidia1"}, "", ""},
		{"mps and shard sharing the GPUs' files take no index", "gpu,mps,shard", "gpu:a100:2,mps:200,shard:8",
			"Name=gpu Type=a100 File=/dev/nvidia[0-1]\nName=mps Count=200 File=/dev/nvidia[0-1]\nName=shard Count=8 File=/dev/nvidia0\n", v2205,
			[]string{"/dev/nvidia0", "/dev/nvidia1"}, "", ""},
		// Types that differ only in case are two types of Gres= (tried,
		// 22.05: slurmd -G prints both records).
		{"case-only types", "gpu", "gpu:a:1,gpu:A:1", "Name=gpu Type=A File=/dev/nvidia0\nName=gpu Type=a File=/dev/nvidia1\n", v2205,
			[]string{"/dev/nvidia0", "/dev/nvidia1"}, "", ""},
		{"case-only types, one record", "gpu", "gpu:A:1,gpu:a:1", "Name=gpu Type=a File=/dev/nvidia[0-1]\n", v2205,
			[]string{"/dev/nvidia0"}, "has 1 more configured", ""},
		// Before 23.02.7, beside mps or shard, each MultipleFiles= record
		// is one GPU per file.
		{"MultipleFiles beside shard, 22.05", "gpu,shard", "gpu:1g:2,shard:8", mig + "Name=shard Count=8\n", v2205,
			[]string{"/dev/nvidia0", "/dev/c1", "/dev/c2", "/dev/nvidia0", "/dev/c1", "/dev/c3"}, "splits the record", ""},
		{"MultipleFiles beside shard, 24.11", "gpu,shard", "gpu:1g:2,shard:8", mig + "Name=shard Count=8\n", v2411,
			[]string{"/dev/nvidia0+/dev/c1+/dev/c2", "/dev/nvidia0+/dev/c1+/dev/c3"}, "", ""},
		{"MultipleFiles without mps or shard, 22.05", "gpu", "gpu:1g:2", mig, v2205,
			[]string{"/dev/nvidia0+/dev/c1+/dev/c2", "/dev/nvidia0+/dev/c1+/dev/c3"}, "", ""},
		{"typed and untyped in Gres=", "gpu", "gpu:2,gpu:a100:1", mixed, v2205, nil, "", "have a type while others do not"},
		{"a GPU record without files beside one with", "gpu", "gpu:a100:3", "Name=gpu Type=a100 Count=1\nName=gpu Type=a100 File=/dev/nvidia[0-1]\n", v2205, nil, "", "File"},
		{"no gpu", "gpu", "", mixed, v2205, nil, "declares no gpu", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := readNodeText(t, tc.types, tc.gres, tc.conf, tc.v)
			if tc.fatal != "" {
				if !nc.Fatal() || !strings.Contains(nc.Problems[len(nc.Problems)-1].Message, tc.fatal) {
					t.Fatalf("problems %v, want fatal %q", nc.Problems, tc.fatal)
				}
				return
			}
			if nc.Fatal() {
				t.Fatalf("fatal: %v", nc.Problems)
			}
			if diff := cmp.Diff(tc.want, indexFiles(nc.GPUs)); diff != "" {
				t.Errorf("indices (-want +got):\n%s", diff)
			}
			switch {
			case tc.misread == "" && len(nc.Misread) > 0:
				t.Errorf("misread: %v", nc.Misread)
			case tc.misread != "" && (len(nc.Misread) == 0 || !strings.Contains(nc.Misread[0].Message, tc.misread)):
				t.Errorf("misread: %v, want %q", nc.Misread, tc.misread)
			}
		})
	}
}

// TestReadNodeReleaseMatters: without a release, MultipleFiles= beside
// shard is read as the newest releases read it, and said to depend on
// the release.
func TestReadNodeReleaseMatters(t *testing.T) {
	conf := "Name=gpu Type=1g MultipleFiles=/dev/nvidia0,/dev/c1,/dev/c2\nName=shard Count=8\n"
	nc := readNodeText(t, "gpu,shard", "gpu:1g:1,shard:8", conf, slurmconf.Version{})
	if !strings.HasSuffix(nc.ReleaseMatters, "gres.conf:1") || len(nc.GPUs) != 1 {
		t.Errorf("ReleaseMatters %q, GPUs %v", nc.ReleaseMatters, nc.GPUs)
	}
	if nc := readNodeText(t, "gpu", "gpu:1g:1", conf[:strings.IndexByte(conf, '\n')+1], slurmconf.Version{}); nc.ReleaseMatters != "" {
		t.Errorf("without shard: ReleaseMatters %q", nc.ReleaseMatters)
	}
}

// TestNodeDeclaredTwice: slurmctld and slurmd die where two NodeName=
// lines name a node (tried, 22.05: "fatal: Duplicated NodeHostName"),
// and every reader of slurm.conf says so.
func TestNodeDeclaredTwice(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(path, []byte("GresTypes=gpu\nNodeName=n[1-2] Gres=gpu:a:1\nNodeName=n2 Gres=gpu:a:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := path + ":3: n2 is declared twice, at " + path + ":2 and " + path + ":3"
	if _, err := slurmconf.ReadSlurmNode(path, "n2"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ReadSlurmNode: %v, want %s", err, want)
	}
	if _, err := slurmconf.ReadNodeGres(path, "n2"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ReadNodeGres: %v, want %s", err, want)
	}
	if _, err := slurmconf.ReadNodesGres(path, []string{"n1", "n2"}); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ReadNodesGres: %v, want %s", err, want)
	}
	// node --update: neither line is the one to set.
	if _, err := slurmconf.UpdateNodeGresFile(path, "n2", "gpu:b:1"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("UpdateNodeGresFile: %v, want %s", err, want)
	}
	if n, err := slurmconf.ReadSlurmNode(path, "n1"); err != nil || n.Gres != "gpu:a:1" {
		t.Errorf("n1: %v, %v", n, err)
	}
}
