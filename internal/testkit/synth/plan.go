package synth

import (
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// H100Profiles is an H100 80GB HBM3's MIG profile table, equal to the real
// one in testdata/real/h100-snapshot-v2 (TestH100ProfilesAreReal), so that
// synthetic snapshots are as large as real ones and as slow to read.
func H100Profiles() []model.GIProfile {
	every := func(n, size int) []model.Placement {
		p := make([]model.Placement, n)
		for s := range p {
			p[s] = model.Placement{Start: s * size, Size: size}
		}
		return p
	}
	whole := func(id int, name string, slices int) []model.CIProfile {
		return []model.CIProfile{{ID: id, Name: name, Slices: slices, Instances: 1}}
	}
	return []model.GIProfile{
		{ID: 19, Name: "1g.10gb", Instances: 7, MemoryMiB: 9984, Slices: 1, Placements: every(7, 1), CIProfiles: whole(0, "1g.10gb", 1)},
		{ID: 14, Name: "2g.20gb", Instances: 3, MemoryMiB: 20096, Slices: 2, Placements: every(3, 2), CIProfiles: []model.CIProfile{
			{ID: 0, Name: "1c.2g.20gb", Slices: 1, Instances: 2}, {ID: 1, Name: "2g.20gb", Slices: 2, Instances: 1}}},
		{ID: 9, Name: "3g.40gb", Instances: 2, MemoryMiB: 40448, Slices: 3, Placements: every(2, 4), CIProfiles: []model.CIProfile{
			{ID: 0, Name: "1c.3g.40gb", Slices: 1, Instances: 3}, {ID: 1, Name: "2c.3g.40gb", Slices: 2, Instances: 1},
			{ID: 2, Name: "3g.40gb", Slices: 3, Instances: 1}}},
		{ID: 5, Name: "4g.40gb", Instances: 1, MemoryMiB: 40448, Slices: 4, Placements: every(1, 4), CIProfiles: []model.CIProfile{
			{ID: 0, Name: "1c.4g.40gb", Slices: 1, Instances: 4}, {ID: 1, Name: "2c.4g.40gb", Slices: 2, Instances: 2},
			{ID: 3, Name: "4g.40gb", Slices: 4, Instances: 1}}},
		{ID: 0, Name: "7g.80gb", Instances: 1, MemoryMiB: 81152, Slices: 7, Placements: every(1, 8), CIProfiles: []model.CIProfile{
			{ID: 0, Name: "1c.7g.80gb", Slices: 1, Instances: 7}, {ID: 1, Name: "2c.7g.80gb", Slices: 2, Instances: 3},
			{ID: 2, Name: "3c.7g.80gb", Slices: 3, Instances: 2}, {ID: 3, Name: "4c.7g.80gb", Slices: 4, Instances: 1},
			{ID: 4, Name: "7g.80gb", Slices: 7, Instances: 1}}},
		{ID: 20, Name: "1g.10gb+me", Instances: 1, MemoryMiB: 9984, Slices: 1, Placements: every(7, 1), CIProfiles: whole(0, "1g.10gb+me", 1)},
		{ID: 15, Name: "1g.20gb", Instances: 4, MemoryMiB: 20096, Slices: 1, Placements: every(4, 2), CIProfiles: whole(0, "1g.20gb", 1)},
	}
}

// PlanSnapshot is node i of a synthetic fleet for plan, as slurm-mig
// snapshot (schema 2) writes it: eight H100s on NVSwitch, MIG off unless
// PlanLayout puts it on all-1g.10gb, which it then has (driver 580's minors).
func PlanSnapshot(i int) *model.Node {
	n := &model.Node{Hostname: ClusterNode(i) + ".cluster.example", DriverVersion: "580.159.04"}
	h100 := &model.ProfileTable{Profiles: H100Profiles()}
	split := PlanLayout(i) == "all-1g.10gb"
	for g := range 8 {
		cpus := "0-31"
		if g >= 4 {
			cpus = "32-63"
		}
		gpu := model.GPU{Index: g, Minor: g, UUID: fmt.Sprintf("GPU-%08x-%04x-4000-8000-000000000000", i, g),
			Name: "NVIDIA H100 80GB HBM3", PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+g*0x10), MemoryMiB: 81559,
			MigEnabled: split, MigPending: split, CPUAffinity: cpus, Cores: cpus,
			NVLinks:     []model.NVLink{{RemotePCIBusID: "FFFFFFFF:FF:FF.0", Links: 18}},
			PCIDeviceID: "0x233010DE", Profiles: h100}
		for m := range 7 {
			if !split {
				break
			}
			gi := uint32(3 + 135*g + 9*giIDs[m])
			ci := gi + 1
			gpu.MigDevices = append(gpu.MigDevices, model.MigDevice{GPUInstanceID: giIDs[m], UUID: fmt.Sprintf("MIG-%08x-%04x-4000-8000-%012d", i, g, m),
				Profile: "1g.10gb", GISlices: 1, MemoryMiB: 9984, GICapMinor: &gi, CICapMinor: &ci})
		}
		n.GPUs = append(n.GPUs, gpu)
	}
	return n
}

// PlanConfig is the mig-parted config (v1) of the synthetic fleet's
// layouts: NVIDIA's all-balanced and all-1g.10gb, a node half split into
// 3g.40gb, and MIG off.
const PlanConfig = `version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
  all-balanced:
    - device-filter: ["0x233010DE", "0x233110DE", "0x232210DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
  half-3g:
    - devices: [0, 1, 2, 3]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
    - devices: [4, 5, 6, 7]
      mig-enabled: false
`

// PlanDefault is the config of the synthetic fleet's nodes that the
// assignment does not name: plan's --select.
const PlanDefault = "all-balanced"

// PlanLayout is the config node i of the synthetic fleet is assigned:
// six in ten all-balanced (PlanDefault), two all-1g.10gb, one half-3g,
// one all-disabled.
func PlanLayout(i int) string {
	switch i % 10 {
	case 6, 7:
		return "all-1g.10gb"
	case 8:
		return "half-3g"
	case 9:
		return "all-disabled"
	}
	return PlanDefault
}

// WritePlanAssign writes the assignment file (plan --assign) of a
// synthetic fleet of nodes nodes, as a script generates it: a line for
// each node not on PlanDefault.
func WritePlanAssign(w io.Writer, nodes int) error {
	var b strings.Builder
	for i := range nodes {
		if c := PlanLayout(i); c != PlanDefault {
			fmt.Fprintf(&b, "%s %s\n", ClusterNode(i), c)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
