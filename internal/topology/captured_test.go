package topology

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// TestCapturedTrees checks Slurm's core numbering on CPU topologies
// captured from real GPU hosts (scripts/capture-node.sh, kept under
// testdata/real/*/root): each GPU's local_cpulist in abstract cores
// against hwloc-calc, and the node's hardware against slurmd -C, both
// reading the captured tree.
func TestCapturedTrees(t *testing.T) {
	for _, root := range fixture.Glob(t, "real/*/root") {
		t.Run(filepath.Base(filepath.Dir(root)), func(t *testing.T) {
			topo, err := Load(hostfs.FS(root))
			if err != nil {
				t.Fatal(err)
			}
			lists, _ := filepath.Glob(filepath.Join(root, "sys/bus/pci/devices/*/local_cpulist"))
			if len(lists) == 0 {
				t.Fatal("the tree has no GPU local_cpulist")
			}
			hwlocCalc := requireTool(t, "hwloc-calc", "hwloc")
			for _, path := range lists {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				list := strings.TrimSpace(string(b))
				got, err := topo.AbstractCores(list)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				want := hwlocCores(t, hwlocCalc, list, "--input", root, "--input-format", "fsroot")
				if !cmp.Equal(want, got) {
					t.Errorf("%s (%s): AbstractCores says %v, hwloc-calc says %v", path, list, got, want)
				}
			}

			slurmd := requireTool(t, "slurmd", "slurmd")
			got, err := topo.Hardware(hostfs.FS(root))
			if err != nil {
				t.Fatal(err)
			}
			want, line := slurmdHardware(t, slurmd, "HWLOC_FSROOT="+root)
			got.RealMemoryMiB, want.RealMemoryMiB = 0, 0 // slurmd asks sysconf, not the tree
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Hardware differs from slurmd -C %q (-slurmd +got):\n%s", line, diff)
			}
		})
	}
}
