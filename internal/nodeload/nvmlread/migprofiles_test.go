package nvmlread

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
)

// smiProfile is a GPU-instance profile as nvidia-smi mig -lgip and -lgipp
// print it.
type smiProfile struct {
	name       string
	instances  int     // the Total of Free/Total
	memoryGiB  float64 // as printed, to 2 decimals
	placements []model.Placement
}

// lgipRow is a row of nvidia-smi mig -lgip: "|   0  MIG 1g.10gb   19   7/7   9.75   No ...".
var lgipRow = regexp.MustCompile(`^\|\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+\d+/(\d+)\s+([\d.]+)\s`)

// lgippRow is a line of nvidia-smi mig -lgipp: "GPU  0 Profile ID 15 Placements: {0,2,4,6}:2".
var lgippRow = regexp.MustCompile(`^GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,]+)\}:(\d+)\s*$`)

// parseSmiProfiles reads nvidia-smi's profile table: GPU index ->
// profile id -> profile.
func parseSmiProfiles(t *testing.T, lgip, lgipp string) map[int]map[int]*smiProfile {
	t.Helper()
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	out := map[int]map[int]*smiProfile{}
	for _, l := range strings.Split(lgip, "\n") {
		m := lgipRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		gib, err := strconv.ParseFloat(m[5], 64)
		if err != nil {
			t.Fatal(err)
		}
		gpu := atoi(m[1])
		if out[gpu] == nil {
			out[gpu] = map[int]*smiProfile{}
		}
		out[gpu][atoi(m[3])] = &smiProfile{name: m[2], instances: atoi(m[4]), memoryGiB: gib}
	}
	placed := 0
	for _, l := range strings.Split(lgipp, "\n") {
		m := lgippRow.FindStringSubmatch(l)
		if m == nil {
			if strings.TrimSpace(l) != "" {
				t.Fatalf("lgipp: unexpected line %q", l)
			}
			continue
		}
		p := out[atoi(m[1])][atoi(m[2])]
		if p == nil {
			t.Fatalf("lgipp: GPU %s profile %s is not in lgip", m[1], m[2])
		}
		for _, s := range strings.Split(m[3], ",") {
			p.placements = append(p.placements, model.Placement{Start: atoi(s), Size: atoi(m[4])})
		}
		placed++
	}
	if len(out) == 0 || placed == 0 {
		t.Fatal("no profile in lgip or lgipp")
	}
	return out
}

// checkAgainstSmi compares the table read for a GPU with nvidia-smi's:
// the same ids, and for each the name, instance count, memory (nvidia-smi
// prints GiB to 2 decimals), compute slices (the g of the name) and
// placements.
func checkAgainstSmi(t *testing.T, where string, gpu model.GPU, smi map[int]*smiProfile) {
	t.Helper()
	if len(gpu.MigProfiles()) != len(smi) {
		t.Errorf("%s: %s: %d profiles read, nvidia-smi shows %d", where, gpu.Label(), len(gpu.MigProfiles()), len(smi))
	}
	for _, p := range gpu.MigProfiles() {
		want := smi[p.ID]
		if want == nil {
			t.Errorf("%s: %s: profile %d (%s) is not in nvidia-smi's table", where, gpu.Label(), p.ID, p.Name)
			continue
		}
		if p.Name != want.name || p.Instances != want.instances {
			t.Errorf("%s: profile %d: read %s x%d, nvidia-smi says %s x%d", where, p.ID, p.Name, p.Instances, want.name, want.instances)
		}
		if gib := float64(p.MemoryMiB) / 1024; math.Abs(gib-want.memoryGiB) > 0.005+1e-9 {
			t.Errorf("%s: profile %d (%s): %d MiB is %.3f GiB, nvidia-smi says %.2f", where, p.ID, p.Name, p.MemoryMiB, gib, want.memoryGiB)
		}
		if g := strings.SplitN(p.Name, "g.", 2)[0]; g != strconv.Itoa(p.Slices) {
			t.Errorf("%s: profile %d (%s): %d slices", where, p.ID, p.Name, p.Slices)
		}
		if diff := cmp.Diff(want.placements, p.Placements); diff != "" {
			t.Errorf("%s: profile %d (%s) placements (-nvidia-smi +read):\n%s", where, p.ID, p.Name, diff)
		}
	}
}

// TestMigProfilesAgreeWithNvidiaSmi reads the profile table of the fake
// built for each real host (testdata/real/<host>/nvmlfake.json) and holds
// it to nvidia-smi mig -lgip and -lgipp captured on that host: the ids,
// names (go-nvlib's naming from NVML's memory figures), instances, memory
// and placements agree, and the PCI device id is the one nvidia-smi -q
// gives.
func TestMigProfilesAgreeWithNvidiaSmi(t *testing.T) {
	for host, pciID := range map[string]string{"h100-driver-580": "0x233010DE", "h200-driver-580": "0x233510DE"} {
		lib, err := nvmlfake.Load(fixture.Path(t, "real/"+host+"/nvmlfake.json"))
		if err != nil {
			t.Fatal(err)
		}
		if ret := lib.Init(); ret != nvml.SUCCESS {
			t.Fatal(ret)
		}
		n, _, err := read(lib, t.TempDir())
		if err == nil {
			err = ReadMigProfiles(lib, n)
		}
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		smi := parseSmiProfiles(t, string(fixture.Read(t, "real/"+host+"/lgip.txt")), string(fixture.Read(t, "real/"+host+"/lgipp.txt")))
		if len(n.GPUs) != len(smi) {
			t.Fatalf("%s: %d GPUs read, nvidia-smi shows %d", host, len(n.GPUs), len(smi))
		}
		for _, g := range n.GPUs {
			if g.PCIDeviceID != pciID {
				t.Errorf("%s: pci_device_id %q, want %s", host, g.PCIDeviceID, pciID)
			}
			checkAgainstSmi(t, host, g, smi[g.Index])
		}
		if err := n.Check(); err != nil {
			t.Errorf("%s: the node read does not pass the snapshot's checks: %v", host, err)
		}
	}
}

// TestCapturedSnapshotTables holds the profile table of every captured
// host's snapshot (testdata/real/<host>/snapshot.json) to nvidia-smi's
// lgip.txt and lgipp.txt captured beside it, where both are there: what
// slurm-mig snapshot read through the real NVML agrees with nvidia-smi on
// the same host.
func TestCapturedSnapshotTables(t *testing.T) {
	checked := 0
	for _, snap := range fixture.Glob(t, "real/*/snapshot.json") {
		dir := filepath.Dir(snap)
		lgip, err1 := os.ReadFile(filepath.Join(dir, "lgip.txt"))
		lgipp, err2 := os.ReadFile(filepath.Join(dir, "lgipp.txt"))
		if err1 != nil || err2 != nil {
			continue // captured before capture-node.sh recorded them
		}
		n, err := snapshot.Load(snap)
		if err != nil {
			t.Fatal(err)
		}
		smi := parseSmiProfiles(t, string(lgip), string(lgipp))
		for _, g := range n.GPUs {
			if smi[g.Index] == nil {
				continue // not MIG-capable: nvidia-smi lists no profile
			}
			if g.PCIDeviceID == "" {
				t.Errorf("%s: %s has no pci_device_id", snap, g.Label())
			}
			checkAgainstSmi(t, snap, g, smi[g.Index])
			checked++
		}
	}
	if checked == 0 {
		t.Skip("no captured host has snapshot.json, lgip.txt and lgipp.txt together yet")
	}
}

// TestReadPCIDeviceID: the PCI device id is NVML's PciDeviceId in
// mig-parted's device-filter form, for any GPU; none where NVML gives 0.
func TestReadPCIDeviceID(t *testing.T) {
	lib := fake(t, &nvmlfake.Fixture{GPUs: []nvmlfake.GPU{
		{Minor: 0, Name: "NVIDIA H100 80GB HBM3", PCIDeviceID: "0x233010DE"},
		{Minor: 1, Name: "Tesla V100-SXM2-32GB", PCIDeviceID: "0x1db510de", MigMode: "unsupported"},
		{Minor: 2, Name: "NVIDIA A100-SXM4-80GB"},
	}})
	n, _, err := read(lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range n.GPUs {
		got = append(got, g.PCIDeviceID)
	}
	if diff := cmp.Diff([]string{"0x233010DE", "0x1DB510DE", ""}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestReadMigProfilesCI: NVML cannot list a GPU instance's compute-instance
// profiles without the GPU instance, so they are derived as go-nvlib
// does; these are what nvidia-smi mig -lcip shows on an H100.
func TestReadMigProfilesCI(t *testing.T) {
	lib, err := nvmlfake.Load(fixture.Path(t, "real/h100-driver-580/nvmlfake.json"))
	if err != nil {
		t.Fatal(err)
	}
	lib.Init()
	n, _, err := read(lib, t.TempDir())
	if err == nil {
		err = ReadMigProfiles(lib, n)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, p := range n.GPUs[0].MigProfiles() {
		for _, c := range p.CIProfiles {
			got[p.Name] = append(got[p.Name], c.Name+"x"+strconv.Itoa(c.Instances))
		}
	}
	want := map[string][]string{
		"1g.10gb":    {"1g.10gbx1"},
		"1g.10gb+me": {"1g.10gb+mex1"},
		"1g.20gb":    {"1g.20gbx1"},
		"2g.20gb":    {"1c.2g.20gbx2", "2g.20gbx1"},
		"3g.40gb":    {"1c.3g.40gbx3", "2c.3g.40gbx1", "3g.40gbx1"},
		"4g.40gb":    {"1c.4g.40gbx4", "2c.4g.40gbx2", "4g.40gbx1"},
		"7g.80gb":    {"1c.7g.80gbx7", "2c.7g.80gbx3", "3c.7g.80gbx2", "4c.7g.80gbx1", "7g.80gbx1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compute-instance profiles (-want +got):\n%s", diff)
	}
}

// TestReadMigProfilesErrors: a failing NVML call names the GPU and leaves
// the node as it was; a GPU without MIG has no table.
func TestReadMigProfilesErrors(t *testing.T) {
	f := &nvmlfake.Fixture{GPUs: []nvmlfake.GPU{
		{Minor: 0, Name: "Tesla V100-SXM2-32GB", MigMode: "unsupported"},
		{Minor: 1, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:07:00.0", MemoryMiB: 81559,
			MigProfiles: []nvmlfake.GIProfile{{Index: 0, ID: 19, Instances: 7, Slices: 1, MemoryMiB: 9984, Placements: "{0,1,2,3,4,5,6}:1"}}},
	}}
	lib := fake(t, f)
	n, _, err := read(lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := ReadMigProfiles(lib, n); err != nil {
		t.Fatal(err)
	}
	if n.GPUs[0].Profiles != nil || len(n.GPUs[1].MigProfiles()) != 1 || n.GPUs[1].MigProfiles()[0].Name != "1g.10gb" {
		t.Errorf("tables %+v", n.GPUs)
	}

	f.GPUs[1].Errors = map[string]string{"GetGpuInstancePossiblePlacements": "ERROR_UNKNOWN"}
	lib = fake(t, f)
	n, _, _ = read(lib, t.TempDir())
	err = ReadMigProfiles(lib, n)
	if want := "nvml: GPU 1 (minor 1, 00000000:07:00.0): reading the placements of GPU instance profile 19: ERROR_UNKNOWN"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	if n.GPUs[1].Profiles != nil {
		t.Errorf("a failed read left a table: %+v", n.GPUs[1].Profiles)
	}
}
