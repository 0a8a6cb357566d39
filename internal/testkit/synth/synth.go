// Package synth makes synthetic inputs for benchmarks: nodes of many GPUs
// in MIG mode (as fake NVML fixtures or snapshots) and cluster-wide
// gres.conf files, so no megabyte fixture is checked in.
package synth

import (
	"bufio"
	"fmt"
	"io"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// giIDs are the GPU instance ids of seven 1g.10gb instances as an A100 or
// H100 driver hands them out.
var giIDs = [7]int{7, 8, 9, 10, 11, 12, 13}

// Fixture is a fake NVML node of gpus A100s, each split into migs
// 1g.10gb devices (at most 7).
func Fixture(gpus, migs int) *nvmlfake.Fixture {
	f := &nvmlfake.Fixture{DriverVersion: "580.159.04"}
	for g := 0; g < gpus; g++ {
		gpu := nvmlfake.GPU{
			Minor: g, UUID: fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", g), Name: "NVIDIA A100-SXM4-80GB",
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", g+1), MemoryMiB: 81920, CPUs: "0-63", MigMode: "enabled",
		}
		for m := 0; m < migs; m++ {
			gpu.MigDevices = append(gpu.MigDevices, nvmlfake.MigDevice{
				HandleIndex: m, GI: giIDs[m], CI: 0, Profile: "1g.10gb", MemoryMiB: 9728,
				UUID: fmt.Sprintf("MIG-00000000-0000-4000-8000-%06d%06d", g, m),
			})
		}
		f.GPUs = append(f.GPUs, gpu)
	}
	return f
}

// Snapshot is the same node as Fixture, as slurm-mig snapshot writes it,
// with cap minors laid out as driver 580 numbers them.
func Snapshot(gpus, migs int) *model.Node {
	n := &model.Node{Hostname: "bench01", DriverVersion: "580.159.04"}
	for g, fg := range Fixture(gpus, migs).GPUs {
		gpu := model.GPU{Index: g, Minor: fg.Minor, UUID: fg.UUID, Name: fg.Name, PCIBusID: fg.PCIBusID,
			MemoryMiB: fg.MemoryMiB, MigEnabled: true, MigPending: true, CPUAffinity: fg.CPUs}
		for _, m := range fg.MigDevices {
			gi := uint32(3 + 135*g + 9*m.GI)
			ci := gi + 1
			gpu.MigDevices = append(gpu.MigDevices, model.MigDevice{GPUInstanceID: m.GI, ComputeInstanceID: m.CI,
				UUID: m.UUID, Profile: m.Profile, GISlices: 1, MemoryMiB: m.MemoryMiB, GICapMinor: &gi, CICapMinor: &ci})
		}
		n.GPUs = append(n.GPUs, gpu)
	}
	return n
}

// ClusterNode is the name of node i of a synthetic cluster.
func ClusterNode(i int) string { return fmt.Sprintf("gpu%05d", i) }

// WriteClusterGresConf writes a gres.conf for nodes nodes, every tenth a MIG
// node of per-node lines and the rest of each 100 on one hostlist line. The
// last node is always a MIG node, its lines last: a reader must read it all.
func WriteClusterGresConf(w io.Writer, nodes int) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# synthetic gres.conf for %d nodes\nAutoDetect=off\n", nodes)
	isMIG := func(i int) bool { return i%10 == 9 || i == nodes-1 }
	for start := 0; start < nodes; start += 100 {
		end := min(start+100, nodes)
		var whole []string
		for i := start; i < end; i++ {
			if !isMIG(i) {
				whole = append(whole, ClusterNode(i))
			}
		}
		if len(whole) > 0 {
			fmt.Fprintf(bw, "NodeName=%s Name=gpu Type=a100 File=/dev/nvidia[0-7] Cores=0-63\n", slurmconf.CompressHostlist(whole))
		}
		for i := start; i < end; i++ {
			if !isMIG(i) {
				continue
			}
			fmt.Fprintf(bw, "# %s\n", ClusterNode(i))
			for g := 0; g < 4; g++ {
				for m := 0; m < 7; m++ {
					gi := 3 + 135*g + 9*giIDs[m]
					fmt.Fprintf(bw, "NodeName=%s Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia%d,/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d\n",
						ClusterNode(i), g, gi, gi+1)
				}
			}
		}
	}
	return bw.Flush()
}

// LSFNode is the node of the issue that brought free and exec: four
// A100s, GPU 0 whole and GPUs 1-3 each split into seven 1g.10gb MIG
// devices (28 in all), as slurm-mig snapshot writes it.
func LSFNode() *model.Node {
	n := Snapshot(4, 7)
	n.Hostname = "lsf01"
	n.GPUs[0].MigEnabled, n.GPUs[0].MigPending, n.GPUs[0].MigDevices = false, false, nil
	return n
}
