package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// BenchmarkGenFromSnapshot times the whole process, as config management
// runs it: exec the built binary, gen --from a snapshot, exit. Sizes are
// MIG devices (32 GPUs x 7 is the largest node NVML can have today).
func BenchmarkGenFromSnapshot(b *testing.B) {
	dir := b.TempDir()
	bin := buildBinary(b, dir)
	for _, size := range []struct{ gpus, migs int }{{8, 1}, {8, 7}, {32, 7}} {
		b.Run(fmt.Sprintf("devices=%d", size.gpus*size.migs), func(b *testing.B) {
			snap := filepath.Join(dir, fmt.Sprintf("snap-%d.json", size.gpus*size.migs))
			f, err := os.Create(snap)
			if err != nil {
				b.Fatal(err)
			}
			if err := snapshot.Write(f, synth.Snapshot(size.gpus, size.migs)); err != nil {
				b.Fatal(err)
			}
			f.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(bin, "--root", dir, "gen", "--from", snap, "--no-cores")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
		})
	}
}

// buildBinary builds slurm-mig from this tree into dir, for benchmarks of
// whole processes and for the scripts and playbooks the tests run.
func buildBinary(tb testing.TB, dir string) string {
	tb.Helper()
	bin := filepath.Join(dir, "slurm-mig")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkRebalance10k times the whole process of rebalance on 10,000
// nodes of 8 H100s (the real profile table) in four
// layouts, a quarter of them running GPU jobs, and 100,000 pending jobs
// of four types; it reads the queue and the node states, works out each
// kind of node's configs with migplan and proposes up to 1,000 changes.
// snapshots reads a snapshot per node (500 MB of JSON); hardware one
// snapshot for all (--hardware), the layouts from the node states'
// Gres=. docs/rebalance.md quotes the figures.
func BenchmarkRebalance10k(b *testing.B) {
	dir := b.TempDir()
	bin := buildBinary(b, dir)
	for _, perNode := range []bool{false, true} {
		name := map[bool]string{false: "hardware", true: "snapshots"}[perNode]
		b.Run(name, func(b *testing.B) {
			args := writeRebalanceFleet(b, filepath.Join(dir, name), 10000, 100000, perNode)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(bin, args...)
				out, err := cmd.CombinedOutput()
				if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
					b.Fatalf("want exit 1 (changes), got %v\n%.2000s", err, out)
				}
			}
		})
	}
}

// The fleet of BenchmarkRebalance10k, smaller: one snapshot for all its
// nodes (--hardware) gives the proposal a snapshot per node gives, byte
// for byte, text and JSON.
func TestRebalanceHardwareMatchesSnapshots(t *testing.T) {
	dir := t.TempDir()
	perNode := writeRebalanceFleet(t, filepath.Join(dir, "a"), 200, 3000, true)
	hw := writeRebalanceFleet(t, filepath.Join(dir, "b"), 200, 3000, false)
	for _, extra := range [][]string{nil, {"--json"}, {"--max-nodes", "7"}} {
		var outs [2]string
		for i, args := range [][]string{perNode, hw} {
			var out strings.Builder
			if code := run(append(slices.Clone(args), extra...), &env{stdout: &out, stderr: &out, newNVML: testNVML, hostname: testHostname}); code != 1 {
				t.Fatalf("%v: exit %d\n%s", args, code, out.String())
			}
			outs[i] = out.String()
		}
		if outs[0] != outs[1] {
			t.Errorf("%v: a snapshot per node:\n%.3000s\none for all:\n%.3000s", extra, outs[0], outs[1])
		}
		if !strings.Contains(outs[0], "apply ") && !strings.Contains(outs[0], `"config"`) {
			t.Errorf("%v: no change proposed:\n%.2000s", extra, outs[0])
		}
	}
}

// BenchmarkRebalance10kInProcess is BenchmarkRebalance10k without the
// process, for a CPU profile (-cpuprofile): where the time goes.
func BenchmarkRebalance10kInProcess(b *testing.B) {
	for _, perNode := range []bool{false, true} {
		name := map[bool]string{false: "hardware", true: "snapshots"}[perNode]
		b.Run(name, func(b *testing.B) {
			args := writeRebalanceFleet(b, b.TempDir(), 10000, 100000, perNode)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if code := run(args, &env{stdout: io.Discard, stderr: io.Discard, newNVML: testNVML, hostname: testHostname}); code != 1 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}

// writeRebalanceFleet writes the scontrol states of nodes nodes, a queue
// of jobs pending jobs and a mig-parted config under dir, and the nodes'
// snapshots: one per node with perNode, else one for all, and returns
// rebalance's arguments for them.
func writeRebalanceFleet(b testing.TB, dir string, nodes, jobs int, perNode bool) []string {
	real, err := snapshot.Load(filepath.Join("..", "..", "testdata", "real", "h100-snapshot-v2", "snapshot.json"))
	if err != nil {
		b.Fatal(err)
	}
	layouts := []map[string]int{nil, {"1g.10gb": 7}, {"3g.40gb": 2}, {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}}
	// Their Gres= on 8 GPUs, as plan counts them.
	gres := []string{"gpu:h100:8", "gpu:h100_1g.10gb:56", "gpu:h100_3g.40gb:16", "gpu:h100_3g.40gb:8,gpu:h100_2g.20gb:8,gpu:h100_1g.10gb:8"}
	snaps := filepath.Join(dir, "snapshots")
	if err := os.MkdirAll(snaps, 0o755); err != nil {
		b.Fatal(err)
	}
	var states, queue strings.Builder
	for i := range nodes {
		n := *real
		n.Hostname = fmt.Sprintf("gpu%05d", i)
		n.GPUs = nil
		layout := layouts[i%len(layouts)]
		for g := range 8 {
			gpu := real.GPUs[0]
			gpu.Index, gpu.Minor = g, g
			gpu.UUID = fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", i, g)
			gpu.MigEnabled, gpu.MigPending = layout != nil, layout != nil
			gi := 1
			for _, p := range []string{"3g.40gb", "2g.20gb", "1g.10gb"} {
				for range layout[p] {
					gpu.MigDevices = append(gpu.MigDevices, model.MigDevice{GPUInstanceID: gi, Profile: p,
						UUID: fmt.Sprintf("MIG-%08x-%04x-4000-8000-%012x", i, g, gi)})
					gi++
				}
			}
			n.GPUs = append(n.GPUs, gpu)
		}
		if perNode || i == 0 {
			f, err := os.Create(filepath.Join(snaps, n.Hostname+".json"))
			if err != nil {
				b.Fatal(err)
			}
			if err := snapshot.Write(f, &n); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		g := gres[i%len(gres)]
		first, _, _ := strings.Cut(g, ",")
		used := strings.TrimSuffix(first, first[strings.LastIndexByte(first, ':'):]) + ":0(IDX:N/A)"
		if i%4 == 1 {
			used = strings.TrimSuffix(used, ":0(IDX:N/A)") + ":1(IDX:0)"
		}
		fmt.Fprintf(&states, "NodeName=%s Arch=x86_64 CoresPerSocket=32 CPUAlloc=0 CPUTot=64 CPULoad=0.01 AvailableFeatures=(null) ActiveFeatures=(null) Gres=%s NodeAddr=%s NodeHostName=%s Version=22.05.8 OS=Linux 6.1.0-27-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.115-1 RealMemory=512000 AllocMem=0 FreeMem=500000 Sockets=2 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu BootTime=2026-11-20T08:00:00 SlurmdStartTime=2026-11-20T08:01:00 LastBusyTime=2026-11-24T11:00:00 CfgTRES=cpu=64,mem=500G,billing=64 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s GresDrain=N/A GresUsed=%s\n",
			n.Hostname, g, n.Hostname, n.Hostname, used)
	}
	types := []string{"h100_1g.10gb", "h100_3g.40gb", "h100_2g.20gb", "h100_7g.80gb"}
	for i := range jobs {
		fmt.Fprintf(&queue, "%d 2026-11-24T%02d:%02d:%02d 1 gres/gpu:%s:%d\n", 1000000+i, 8+i%3, i%60, i%59, types[i%len(types)], 1+i%2)
	}
	files := map[string]string{"nodes.txt": states.String(), "queue.txt": queue.String(), "mig.yaml": `version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
  all-2g.20gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"2g.20gb": 3}
  all-3g.40gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
  all-7g.80gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"7g.80gb": 1}
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}
`}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	args := []string{"rebalance", "--queue", filepath.Join(dir, "queue.txt"), "--nodes", filepath.Join(dir, "nodes.txt"),
		"--mig-config", filepath.Join(dir, "mig.yaml"), "--max-nodes", "1000", "--now", "2026-11-24T12:00:00"}
	if perNode {
		return append(args, snaps)
	}
	return append(args, "--hardware", fmt.Sprintf("gpu[00000-%05d]=%s", nodes-1, filepath.Join(snaps, "gpu00000.json")))
}
