package fleetplan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// writeFleet writes the snapshots of the synthetic fleet's first nodes
// (eight H100s each, four layouts assigned) and gives Make's inputs for
// them.
func writeFleet(t *testing.T, nodes int) (Inputs, []string) {
	t.Helper()
	dir := t.TempDir()
	paths := make([]string, nodes)
	for i := range nodes {
		f, err := os.Create(filepath.Join(dir, synth.ClusterNode(i)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := snapshot.Write(f, synth.PlanSnapshot(i)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		paths[i] = f.Name()
	}
	return inputs(t, paths, nodes), paths
}

// hardware declares nodes to have the GPUs of the snapshot at path.
func hardware(t *testing.T, spec string, nodes []string, path string) migplan.Hardware {
	t.Helper()
	snap, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return migplan.Hardware{Spec: spec, Nodes: nodes, Snapshot: snap}
}

// TestHardwareMatchesSnapshots: one snapshot for every node of the same
// GPUs plans the fleet as each node's own snapshot does, node lines,
// each node's line and counts, and what a slurm.conf must change, with
// some nodes of their own snapshots beside the declared ones. The nodes
// the synthetic fleet puts on all-1g.10gb are in that layout now and the
// declared snapshot's node is not: every config takes every GPU, so the
// layouts now do not matter.
func TestHardwareMatchesSnapshots(t *testing.T) {
	const n = 40
	in, paths := writeFleet(t, n)
	want, warnings, err := Make(in)
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	names := make([]string, n)
	for i := range n {
		names[i] = synth.ClusterNode(i)
	}
	// Nodes 0 to 4 by their own snapshots, 5 to 29 and 30 to 39 by two
	// declarations, the second of a node now in another layout.
	in.Snapshots = paths[:5]
	in.Hardware = []migplan.Hardware{
		hardware(t, "a", names[5:30], paths[0]),
		hardware(t, "b", names[30:], paths[6]),
	}
	got, warnings, err := Make(in)
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	if !slices.Equal(got.NodeLines, want.NodeLines) || len(want.NodeLines) != 4 {
		t.Errorf("node lines %q, want %q", got.NodeLines, want.NodeLines)
	}
	if len(got.Nodes) != n {
		t.Fatalf("%d nodes, want %d", len(got.Nodes), n)
	}
	for i, g := range got.Nodes {
		w := want.Nodes[i]
		if g.Node != w.Node || g.NodeLine != w.NodeLine || !slices.Equal(g.Counts, w.Counts) || g.Config != w.Config {
			t.Errorf("node %d: %s %q (%s), want %s %q (%s)", i, g.Node, g.NodeLine, g.Config, w.Node, w.NodeLine, w.Config)
		}
	}
	if got.Nodes[7].Snapshot != paths[0] || got.Nodes[35].Snapshot != paths[6] {
		t.Errorf("snapshots %s, %s: want the declared ones", got.Nodes[7].Snapshot, got.Nodes[35].Snapshot)
	}

	conf := filepath.Join(t.TempDir(), "slurm.conf")
	text := "NodeName=gpu[00000-00039] Gres=gpu:h100:8\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var texts [2]strings.Builder
	for i, f := range []*Fleet{want, got} {
		d, err := f.Diff(conf)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.WriteText(&texts[i]); err != nil {
			t.Fatal(err)
		}
	}
	if texts[0].String() != texts[1].String() || !strings.Contains(texts[0].String(), "36 nodes of 40 must change") {
		t.Errorf("slurm.conf diff:\n%s\nwant:\n%s", texts[1].String(), texts[0].String())
	}
}

// TestHardwareRefusals: a node that a snapshot and a declaration both
// give is refused, naming both; so is a config that leaves a GPU of
// declared nodes as it is (its counts are each node's own), naming the
// nodes, the declaration, the config and the GPU; a config such nodes
// cannot hold is refused as for a node's own snapshot; and a node name
// Slurm would not read is refused too.
func TestHardwareRefusals(t *testing.T) {
	in, paths := writeFleet(t, 2)
	in.Snapshots = paths[:1]
	in.Hardware = []migplan.Hardware{hardware(t, "h", []string{"gpu00000", "gpu00001"}, paths[1])}
	if _, _, err := Make(in); err == nil || err.Error() != "node gpu00000 is given twice: "+paths[0]+" and h" {
		t.Errorf("twice: %v", err)
	}

	cfg, err := migplan.ParseConfig("mig.yaml", []byte(`version: v1
mig-configs:
  first-half:
    - devices: [0, 1, 2, 3]
      mig-enabled: false
  all-disabled:
    - devices: all
      mig-enabled: false
  too-full:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "2g.20gb": 1
        "1g.10gb": 2
`))
	if err != nil {
		t.Fatal(err)
	}
	in.Snapshots = nil
	for _, tc := range []struct {
		config, assign string
		want           string
	}{
		{"first-half", "", `nodes gpu[00000-00001] (h): mig.yaml: config "first-half": GPU 4 (NVIDIA H100 80GB HBM3): no entry takes it, so it keeps each node's own layout, which one snapshot for many nodes does not know; give the nodes their own snapshots`},
		{"all-disabled", "gpu00001 first-half\n", `node gpu00001 (h): mig.yaml: config "first-half": GPU 4 (NVIDIA H100 80GB HBM3): no entry takes it, so it keeps each node's own layout, which one snapshot for many nodes does not know; give the node its own snapshot`},
		{"too-full", "", `nodes gpu[00000-00001] (h): mig.yaml:10: config "too-full": GPU 0 (NVIDIA H100 80GB HBM3): 4g.40gb + 2g.20gb + 2x1g.10gb: no set of placements without overlap holds them all`},
	} {
		a, err := NewAssign(cfg, tc.config)
		if err != nil {
			t.Fatal(err)
		}
		if tc.assign != "" {
			path := filepath.Join(t.TempDir(), "assign.txt")
			if err := os.WriteFile(path, []byte(tc.assign), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := a.Read(path); err != nil {
				t.Fatal(err)
			}
		}
		in.Assign = a
		_, _, err = Make(in)
		said := fmt.Sprint(err)
		if h := advice.Hinter(nil); errors.As(err, &h) {
			said += h.Hint()
		}
		if err == nil || said != tc.want {
			t.Errorf("%s, %q:\n got %s\nwant %s", tc.config, tc.assign, said, tc.want)
		}
	}

	in.Hardware[0].Nodes = []string{"gpu00000", "bad=name"}
	a, err := NewAssign(cfg, "all-disabled")
	if err != nil {
		t.Fatal(err)
	}
	in.Assign = a
	if _, _, err := Make(in); err == nil || !strings.HasPrefix(err.Error(), "h: node \"bad=name\": ") {
		t.Errorf("bad name: %v", err)
	}
}

// TestHardwareWarnsOnce: what a config warns of for declared nodes is
// said once for them all, naming them and the declaration, not once a
// node.
func TestHardwareWarnsOnce(t *testing.T) {
	in, paths := writeFleet(t, 1)
	cfg, err := migplan.ParseConfig("mig.yaml", []byte("version: v1\nmig-configs:\n  empty:\n    - devices: [0]\n      mig-enabled: true\n      mig-devices: {}\n    - devices: [1, 2, 3, 4, 5, 6, 7]\n      mig-enabled: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if in.Assign, err = NewAssign(cfg, "empty"); err != nil {
		t.Fatal(err)
	}
	in.Snapshots = nil
	in.Hardware = []migplan.Hardware{hardware(t, "h", []string{"gpu00001", "gpu00002", "gpu00003"}, paths[0])}
	f, warns, err := Make(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.NodeLines) != 1 || f.NodeLines[0] != "NodeName=gpu[00001-00003] Gres=gpu:h100:7" {
		t.Errorf("node lines %q", f.NodeLines)
	}
	want := `nodes gpu[00001-00003] (h): mig.yaml: config "empty": GPU 0 (NVIDIA H100 80GB HBM3): MIG will be enabled with no MIG devices; it offers Slurm nothing`
	if len(warns) != 1 || warns[0].Error() != want || errors.Unwrap(warns[0]) == nil {
		t.Errorf("warnings %v, want one: %s", warns, want)
	}
}
