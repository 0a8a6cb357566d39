package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// a100Snapshot is one NVIDIA A100-SXM4-40GB (0x20B010DE), MIG off, with
// its GPU-instance profile table: 1g.5gb (7, one slice), 1g.10gb (4,
// placements {0,2,4,6}:2), 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb. Its
// 1g.10gb is two memory slices; an H100 80GB's 1g.10gb is one (seven of
// them, {0..6}:1). NVIDIA's own mig-parted config-default.yaml says so:
// all-1g.10gb is "1g.10gb": 7 for H100-80GB/A100-80GB and "1g.10gb": 4
// for A100-40GB (0x20B010DE).
const a100Snapshot = `{"schema_version": 2, "hostname": "gpu03.cluster.test", "driver_version": "580.159.04", "gpus": [{"index": 0, "minor": 0, "uuid": "GPU-11111111-2222-3333-4444-555555555555", "name": "NVIDIA A100-SXM4-40GB", "pci_bus_id": "00000000:00:06.0", "memory_mib": 40960, "mig_enabled": false, "mig_pending": false, "cpu_affinity": "0-15", "cores": "0-15", "pci_device_id": "0x20B010DE", "mig_profiles": [{"id": 19, "name": "1g.5gb", "instances": 7, "memory_mib": 4864, "slices": 1, "placements": [{"start": 0, "size": 1}, {"start": 1, "size": 1}, {"start": 2, "size": 1}, {"start": 3, "size": 1}, {"start": 4, "size": 1}, {"start": 5, "size": 1}, {"start": 6, "size": 1}], "ci_profiles": [{"id": 0, "name": "1g.5gb", "slices": 1, "instances": 1}]}, {"id": 15, "name": "1g.10gb", "instances": 4, "memory_mib": 9856, "slices": 1, "placements": [{"start": 0, "size": 2}, {"start": 2, "size": 2}, {"start": 4, "size": 2}, {"start": 6, "size": 2}], "ci_profiles": [{"id": 0, "name": "1g.10gb", "slices": 1, "instances": 1}]}, {"id": 14, "name": "2g.10gb", "instances": 3, "memory_mib": 9856, "slices": 2, "placements": [{"start": 0, "size": 2}, {"start": 2, "size": 2}, {"start": 4, "size": 2}], "ci_profiles": [{"id": 1, "name": "2g.10gb", "slices": 2, "instances": 1}]}, {"id": 9, "name": "3g.20gb", "instances": 2, "memory_mib": 19968, "slices": 3, "placements": [{"start": 0, "size": 4}, {"start": 4, "size": 4}], "ci_profiles": [{"id": 2, "name": "3g.20gb", "slices": 3, "instances": 1}]}, {"id": 5, "name": "4g.20gb", "instances": 1, "memory_mib": 19968, "slices": 4, "placements": [{"start": 0, "size": 4}], "ci_profiles": [{"id": 3, "name": "4g.20gb", "slices": 4, "instances": 1}]}, {"id": 0, "name": "7g.40gb", "instances": 1, "memory_mib": 40320, "slices": 7, "placements": [{"start": 0, "size": 8}], "ci_profiles": [{"id": 4, "name": "7g.40gb", "slices": 7, "instances": 1}]}]}]}`

// A fleet of H100s and A100-40GBs (docs/accounting.md's own example
// tells such models apart with --type-map): --explain took one table of
// memory slices by profile name for all snapshots, so "1g.10gb" was 1
// slice or 2, whichever snapshot came last, and h100_ and a100_ types
// alike were counted with it. Each node now has its own snapshot's.
//
//   - gpu01 (H100): 4g.40gb busy, three 1g.10gb, one busy: two idle
//     slices (1g.10gb at 4, 5, 6; slice 7 free): no 3g.40gb fits there
//     even re-laid out (a 3g.40gb starts at 0 or 4). gpu02's two 3g.40gb
//     are busy. Job 3001 (h100_3g.40gb) waits for a busy device: busy.
//   - gpu04 (A100-40GB): 3g.20gb busy, two 1g.10gb idle (4 slices at
//     4-7): re-laid out, a 3g.20gb fits at 4. Job 3002 (a100_3g.20gb):
//     fragmentation.
//
// With the H100 snapshot first, an H100's idle 1g.10gb counted 2 slices
// and 3001 was told "fragmentation: gpu01 has idle memory slices enough"
// (an admin re-lays gpu01 out for nothing); with the A100 first, 3002 was
// told "busy", though gpu04 would start it re-laid out.
func TestExplainTablesPerModel(t *testing.T) {
	dir := t.TempDir()
	mixedModels(t, dir, "3001 2026-11-24T09:00:00 1 gres/gpu:h100_3g.40gb:1\n3002 2026-11-24T09:01:00 1 gres/gpu:a100_3g.20gb:1\n", `NodeName=gpu01 Gres=gpu:h100_4g.40gb:1,gpu:h100_1g.10gb:3 State=MIXED GresUsed=gpu:h100_4g.40gb:1(IDX:0),gpu:h100_1g.10gb:1(IDX:1) AllocTRES=cpu=2
NodeName=gpu02 Gres=gpu:h100_3g.40gb:2 State=MIXED GresUsed=gpu:h100_3g.40gb:2(IDX:0-1) AllocTRES=cpu=2
NodeName=gpu03 Gres=gpu:a100_7g.40gb:1 State=MIXED GresUsed=gpu:a100_7g.40gb:1(IDX:0) AllocTRES=cpu=1
NodeName=gpu04 Gres=gpu:a100_3g.20gb:1,gpu:a100_1g.10gb:2 State=MIXED GresUsed=gpu:a100_3g.20gb:1(IDX:0),gpu:a100_1g.10gb:0(IDX:N/A) AllocTRES=cpu=1
`)
	// 3001: gpu01 must not be said to have room for it (whatever is said
	// of the A100s: TestExplainFragmentationOnAnotherGPUModel);
	// 3002: fragmentation on gpu04.
	for _, order := range [][]string{{"gpu[01-02]=h100.json", "gpu[03-04]=a100.json"}, {"gpu[03-04]=a100.json", "gpu[01-02]=h100.json"}} {
		args := []string{"rebalance", "--explain", "--queue", filepath.Join(dir, "q.txt"), "--nodes", filepath.Join(dir, "nodes.txt"), "--mig-config", filepath.Join(dir, "mig.yaml")}
		for _, hw := range order {
			name, file, _ := strings.Cut(hw, "=")
			args = append(args, "--hardware", name+"="+filepath.Join(dir, file))
		}
		var stdout, stderr strings.Builder
		if code := run(args, &env{stdout: &stdout, stderr: &stderr}); code != 0 {
			t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			id, rest, _ := strings.Cut(line, " ")
			_, rest, _ = strings.Cut(rest, ": ")
			why, detail, _ := strings.Cut(rest, ": ")
			on, _, _ := strings.Cut(detail, " ")
			hosts, _ := slurmconf.ExpandHostlist(on)
			switch {
			case id == "3001" && why == "fragmentation" && slices.Contains(hosts, "gpu01"):
				t.Errorf("--hardware %s: %s\nbut gpu01 (H100) has 2 idle slices (two idle 1g.10gb of one slice each): no room for a 3g.40gb", strings.Join(order, " --hardware "), line)
			case id == "3002" && why != "fragmentation":
				t.Errorf("--hardware %s: %s\nwant fragmentation: gpu04 (A100-40GB) has two idle 1g.10gb of two slices each, room for a 3g.20gb", strings.Join(order, " --hardware "), line)
			}
		}
	}
}

// An H100 job and an A100-40GB node: gpu02's two h100_3g.40gb are busy;
// gpu03, an A100-40GB, is entirely idle in two 3g.20gb (8 slices). No
// layout of an A100 ever offers h100_3g.40gb (slurmctld matches types by
// name, and an A100-40GB has no 3g.40gb profile), yet --explain counted
// any node's idle slices for any job, and told the admin
//
//	3001 (h100_3g.40gb:1): fragmentation: gpu03 has idle memory slices enough for 1 x 4, cut into other sizes
//
// so the admin re-lays out an A100 that can never start the job. The job
// waits for gpu02's busy devices: busy.
func TestExplainFragmentationOnAnotherGPUModel(t *testing.T) {
	dir := t.TempDir()
	mixedModels(t, dir, "3001 2026-11-24T09:00:00 1 gres/gpu:h100_3g.40gb:1\n", `NodeName=gpu02 Gres=gpu:h100_3g.40gb:2 State=MIXED GresUsed=gpu:h100_3g.40gb:2(IDX:0-1) AllocTRES=cpu=2
NodeName=gpu03 Gres=gpu:a100_3g.20gb:2 State=IDLE GresUsed=gpu:a100_3g.20gb:0(IDX:N/A) AllocTRES=
`)
	var stdout, stderr strings.Builder
	args := []string{"rebalance", "--explain", "--queue", filepath.Join(dir, "q.txt"), "--nodes", filepath.Join(dir, "nodes.txt"), "--mig-config", filepath.Join(dir, "mig.yaml"),
		"--hardware", "gpu02=" + filepath.Join(dir, "h100.json"), "--hardware", "gpu03=" + filepath.Join(dir, "a100.json")}
	if code := run(args, &env{stdout: &stdout, stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	if got := stdout.String(); !strings.HasPrefix(got, "3001 (h100_3g.40gb:1): busy:") {
		t.Errorf("%swant 3001 busy: gpu03 is an A100-40GB, which no layout makes offer h100_3g.40gb", got)
	}
}

// mixedModels writes into dir an H100's snapshot (the real one), an
// A100-40GB's, a mig-parted file, and the queue and node states given.
func mixedModels(t *testing.T, dir, queue, nodes string) {
	t.Helper()
	mustWrite(t, filepath.Join(dir, "h100.json"), string(fixture.Read(t, "real/h100-snapshot-v2/snapshot.json")))
	mustWrite(t, filepath.Join(dir, "a100.json"), a100Snapshot)
	mustWrite(t, filepath.Join(dir, "mig.yaml"), "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n")
	mustWrite(t, filepath.Join(dir, "q.txt"), queue)
	mustWrite(t, filepath.Join(dir, "nodes.txt"), nodes)
}
