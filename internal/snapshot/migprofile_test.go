package snapshot

import (
	"strings"
	"testing"

	v3 "github.com/slurm-mig/slurm-mig/internal/api/snapshot/v3"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// h100Profile is a snapshot GPU with one GI profile of the real H100's
// table (3g.40gb, id 9), whose fields a case replaces.
func h100Profile(fields string) string {
	return `{"schema_version": 2, "gpus": [{"index": 0, "minor": 0, "name": "NVIDIA H100 80GB HBM3",
	  "uuid": "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", "pci_device_id": "0x233010DE", "mig_profiles": [` + fields + `]}]}`
}

const h100_3g = `{"id": 9, "name": "3g.40gb", "instances": 2, "memory_mib": 40448, "slices": 3,
  "placements": [{"start": 0, "size": 4}, {"start": 4, "size": 4}],
  "ci_profiles": [{"id": 0, "name": "1c.3g.40gb", "slices": 1, "instances": 3},
                  {"id": 1, "name": "2c.3g.40gb", "slices": 2, "instances": 1},
                  {"id": 2, "name": "3g.40gb", "slices": 3, "instances": 1}]}`

// TestSnapshotV2Profiles: a schema 2 snapshot carries the GPU's PCI device
// id and its profile table, and reads back as written.
func TestSnapshotV2Profiles(t *testing.T) {
	n, err := Parse([]byte(h100Profile(h100_3g)))
	if err != nil {
		t.Fatal(err)
	}
	g := n.GPUs[0]
	if g.PCIDeviceID != "0x233010DE" || len(g.MigProfiles()) != 1 {
		t.Fatalf("read %q, %d profiles", g.PCIDeviceID, len(g.MigProfiles()))
	}
	p := g.MigProfiles()[0]
	if p.ID != 9 || p.Name != "3g.40gb" || p.Instances != 2 || p.MemoryMiB != 40448 || p.Slices != 3 ||
		len(p.Placements) != 2 || p.Placements[1] != (model.Placement{Start: 4, Size: 4}) || len(p.CIProfiles) != 3 || p.CIProfiles[0].Name != "1c.3g.40gb" {
		t.Errorf("read %+v", p)
	}
	if n.SchemaVersion != 2 {
		t.Errorf("schema_version %d, want 2", n.SchemaVersion)
	}
}

// TestSnapshotV1StillReads: a schema 1 snapshot is still read; its GPUs
// simply lack the profile table.
func TestSnapshotV1StillReads(t *testing.T) {
	n, err := Parse([]byte(`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "NVIDIA H100 80GB HBM3",
	  "uuid": "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if n.SchemaVersion != 1 || n.GPUs[0].Profiles != nil || n.GPUs[0].PCIDeviceID != "" {
		t.Errorf("read %+v", n)
	}
	if v3.Version != 3 {
		t.Errorf("v3.Version = %d; snapshot writes schema 3", v3.Version)
	}
}

// TestSnapshotProfileChecks: a profile table no GPU could have is refused,
// naming the GPU and the profile.
func TestSnapshotProfileChecks(t *testing.T) {
	const gpu = "GPU 0 (minor 0): "
	with := func(old, new string) string { return strings.Replace(h100_3g, old, new, 1) }
	for doc, want := range map[string]string{
		h100Profile(with(`"name": "3g.40gb"`, `"name": "MIG 3g.40gb"`)):                     gpu + `mig_profiles: profile 9: invalid MIG profile "MIG 3g.40gb": want [<c>c.]<g>g.<mem>gb[+attr]`,
		h100Profile(with(`"name": "3g.40gb"`, `"name": "1c.3g.40gb"`)):                      gpu + `mig_profiles: profile 9: "1c.3g.40gb" is a compute-instance profile's name, not a GPU instance's`,
		h100Profile(with(`"instances": 2`, `"instances": 0`)):                               gpu + "mig_profiles: profile 9 (3g.40gb): instances 0; a profile holds at least 1",
		h100Profile(with(`"slices": 3,`, `"slices": 0,`)):                                   gpu + "mig_profiles: profile 9 (3g.40gb): slices 0; a profile takes 1 to 8",
		h100Profile(with(`{"start": 4, "size": 4}`, `{"start": 6, "size": 4}`)):             gpu + "mig_profiles: profile 9 (3g.40gb): placement 6:4 runs past the GPU's 8 memory slices",
		h100Profile(with(`{"start": 4, "size": 4}`, `{"start": -1, "size": 4}`)):            gpu + "mig_profiles: profile 9 (3g.40gb): placement -1:4 runs past the GPU's 8 memory slices",
		h100Profile(with(`{"start": 4, "size": 4}`, `{"start": 4, "size": 0}`)):             gpu + "mig_profiles: profile 9 (3g.40gb): placement 4:0 takes no memory slice",
		h100Profile(h100_3g + ", " + with(`"name": "3g.40gb"`, `"name": "3g.40gb+me"`)):     gpu + "mig_profiles: profile id 9 appears twice",
		h100Profile(h100_3g + ", " + with(`"id": 9`, `"id": 10`)):                           gpu + `mig_profiles: profile name "3g.40gb" appears twice`,
		h100Profile(with(`"name": "2c.3g.40gb"`, `"name": "2c.3g.40gb,x"`)):                 gpu + `mig_profiles: profile 9 (3g.40gb): compute-instance profile 1: invalid MIG profile "2c.3g.40gb,x": want [<c>c.]<g>g.<mem>gb[+attr]`,
		h100Profile(with(`"slices": 2, "instances": 1`, `"slices": 4, "instances": 1`)):     gpu + "mig_profiles: profile 9 (3g.40gb): compute-instance profile 1 (2c.3g.40gb): slices 4; it takes 1 to the GPU instance's 3",
		h100Profile(with(`"slices": 2, "instances": 1`, `"slices": 2, "instances": 0`)):     gpu + "mig_profiles: profile 9 (3g.40gb): compute-instance profile 1 (2c.3g.40gb): instances 0; a profile holds at least 1",
		h100Profile(with(`"id": 1, "name": "2c.3g.40gb"`, `"id": 0, "name": "2c.3g.40gb"`)): gpu + "mig_profiles: profile 9 (3g.40gb): compute-instance profile id 0 appears twice",
		strings.Replace(h100Profile(h100_3g), `"0x233010DE"`, `"233010DE"`, 1):              gpu + `pci_device_id "233010DE": want 0x and up to 8 hex digits, as mig-parted's device-filter names it (0x233010DE)`,
	} {
		_, err := Parse([]byte(doc))
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%s)\n err = %v\nwant %s", doc, err, want)
		}
	}
}
