// Command gencluster writes the synthetic inputs of the cluster-scale
// benchmarks (scripts/bench-cluster.sh): a cluster-wide gres.conf, the
// snapshot of its last node, and that node's slurm.conf line. With -fleet
// it writes instead each node's `slurm-mig gen` output under
// DIR/fragments, for scripts/bench-merge.sh; with -plan, each node's
// snapshot (schema 2) under DIR/snapshots, with DIR/mig.yaml and
// DIR/assign.txt, for scripts/bench-plan.sh.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

func main() {
	nodes := flag.Int("nodes", 10000, "nodes in the cluster")
	dir := flag.String("dir", ".", "directory to write gres.conf, snapshot.json and node.txt into")
	devDir := flag.String("dev", "", "if set, device paths in gres.conf start here instead of /dev (for slurmd -G)")
	fleet := flag.Bool("fleet", false, "write one gen fragment a node under DIR/fragments instead")
	plan := flag.Bool("plan", false, "write one snapshot a node under DIR/snapshots, DIR/mig.yaml and DIR/assign.txt instead")
	flag.Parse()
	run := run
	switch {
	case *fleet:
		run = runFleet
	case *plan:
		run = runPlan
	}
	if err := run(*nodes, *dir, *devDir); err != nil {
		fmt.Fprintln(os.Stderr, "gencluster:", err)
		os.Exit(1)
	}
}

func run(nodes int, dir, devDir string) error {
	var gres strings.Builder
	if err := synth.WriteClusterGresConf(&gres, nodes); err != nil {
		return err
	}
	text := gres.String()
	if devDir != "" {
		text = strings.ReplaceAll(text, "/dev/", strings.TrimSuffix(devDir, "/")+"/")
	}
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(text), 0o644); err != nil {
		return err
	}
	node := synth.Snapshot(4, 7)
	node.Hostname = synth.ClusterNode(nodes - 1)
	var snap bytes.Buffer
	if err := snapshot.Write(&snap, node); err != nil {
		return err
	}
	// os.WriteFile reports the error of the close, which a deferred Close
	// would drop: a full disk shows there.
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), snap.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "node.txt"), []byte(node.Hostname+"\n"), 0o644)
}

// runFleet writes DIR/fragments/<node>.conf for every node, as gen writes
// it, and the last node's name in node.txt.
func runFleet(nodes int, dir, devDir string) error {
	if devDir == "" {
		devDir = "/dev"
	}
	frags := filepath.Join(dir, "fragments")
	if err := os.MkdirAll(frags, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for i := range nodes {
		b.Reset()
		if err := synth.WriteFleetFragment(&b, i, strings.TrimSuffix(devDir, "/")); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(frags, synth.ClusterNode(i)+".conf"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "node.txt"), []byte(synth.ClusterNode(nodes-1)+"\n"), 0o644)
}

// runPlan writes DIR/snapshots/<node>.json for every node, the
// mig-parted config DIR/mig.yaml and the assignment DIR/assign.txt.
func runPlan(nodes int, dir, _ string) error {
	snaps := filepath.Join(dir, "snapshots")
	if err := os.MkdirAll(snaps, 0o755); err != nil {
		return err
	}
	var b bytes.Buffer
	for i := range nodes {
		b.Reset()
		if err := snapshot.Write(&b, synth.PlanSnapshot(i)); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(snaps, synth.ClusterNode(i)+".json"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mig.yaml"), []byte(synth.PlanConfig), 0o644); err != nil {
		return err
	}
	b.Reset()
	if err := synth.WritePlanAssign(&b, nodes); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "assign.txt"), b.Bytes(), 0o644)
}
