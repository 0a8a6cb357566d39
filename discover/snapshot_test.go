package discover

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSnapshotRoundTrip(t *testing.T) {
	n := &Node{SchemaVersion: 1, Hostname: "n1", DriverVersion: "580.159.04", GPUs: []GPU{
		{Index: 0, Minor: 2, UUID: "GPU-a", Name: "NVIDIA A100 80GB PCIe", PCIBusID: "00000000:CA:00.0", MemoryMiB: 81920,
			MigEnabled: true, MigPending: true, CPUAffinity: "0-31",
			MigDevices: []MigDevice{{GPUInstanceID: 7, ComputeInstanceID: 0, UUID: "MIG-a", Profile: "1g.10gb", GISlices: 1,
				MemoryMiB: 9728, GICapMinor: ptr(336), CICapMinor: ptr(337)}}},
	}}
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, n); err != nil {
		t.Fatal(err)
	}
	got, err := ParseSnapshot(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(n, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func ptr(v uint32) *uint32 { return &v }

// The schema's example document from the issue, as written.
func TestSnapshotSchemaExample(t *testing.T) {
	doc := `{"schema_version": 1, "hostname": "n1", "driver_version": "535.129.03",
 "gpus": [{"index": 2, "minor": 2, "uuid": "GPU-...", "name": "NVIDIA A100 80GB PCIe",
           "pci_bus_id": "00000000:CA:00.0", "memory_mib": 81920,
           "mig_enabled": true, "mig_pending": true, "cpu_affinity": "0-31",
           "mig_devices": [{"gpu_instance_id": 7, "compute_instance_id": 0,
                            "uuid": "MIG-...", "profile": "1g.10gb",
                            "gi_cap_minor": 336, "ci_cap_minor": 337}]}]}`
	n, err := ParseSnapshot([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := n.GPUs[0].MigDevices[0]
	if n.GPUs[0].Index != 2 || *m.GICapMinor != 336 || *m.CICapMinor != 337 || m.Profile != "1g.10gb" {
		t.Errorf("parsed %+v", n)
	}
}

func TestSnapshotSortsDevices(t *testing.T) {
	doc := `{"schema_version": 1, "gpus": [
	  {"index": 1, "minor": 0, "name": "A100"},
	  {"index": 0, "minor": 1, "name": "A100", "mig_enabled": true, "mig_devices": [
	    {"gpu_instance_id": 9, "compute_instance_id": 0, "profile": "1g.10gb"},
	    {"gpu_instance_id": 2, "compute_instance_id": 1, "profile": "1c.3g.40gb"},
	    {"gpu_instance_id": 2, "compute_instance_id": 0, "profile": "1c.3g.40gb"}]}]}`
	n, err := ParseSnapshot([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]int
	for _, m := range n.GPUs[0].MigDevices {
		got = append(got, [2]int{m.GPUInstanceID, m.ComputeInstanceID})
	}
	if n.GPUs[0].Index != 0 || !cmp.Equal(got, [][2]int{{2, 0}, {2, 1}, {9, 0}}) {
		t.Errorf("order: GPU %d first, MIG %v", n.GPUs[0].Index, got)
	}
}

func TestSnapshotContradictions(t *testing.T) {
	for doc, want := range map[string]string{
		`{"gpus": []}`:                      "not a snapshot: no schema_version",
		`{"schema_version": 3, "gpus": []}`: "unsupported schema_version 3 (this slurm-mig reads 1)",
		`[1,2]`:                             "not a snapshot: json: cannot unmarshal array into Go value of type struct { SchemaVersion *int \"json:\\\"schema_version\\\"\" }",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0}]}`:                                                                                       "gpus[0]: no name",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A"}, {"index": 0, "minor": 1, "name": "A"}]}`:                                   "GPU 0 (minor 1): index 0 appears twice",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A", "uuid": "GPU-x"}, {"index": 1, "minor": 1, "name": "A", "uuid": "GPU-x"}]}`: "UUID GPU-x given to both GPU 0 (minor 0) and GPU 1 (minor 1)",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A", "mig_enabled": true, "mig_devices": [
		   {"gpu_instance_id": 7, "compute_instance_id": 0, "profile": "1g.10gb"},
		   {"gpu_instance_id": 7, "compute_instance_id": 0, "profile": "1g.10gb"}]}]}`: "MIG device gpu0/gi7/ci0 (GPU 0 (minor 0)) appears twice",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A", "mig_enabled": true, "mig_devices": [
		   {"gpu_instance_id": 2, "compute_instance_id": 0, "profile": "1c.3g.40gb", "gi_cap_minor": 21},
		   {"gpu_instance_id": 2, "compute_instance_id": 1, "profile": "1c.3g.40gb", "gi_cap_minor": 22}]}]}`: "MIG device gpu0/gi2/ci1 (GPU 0 (minor 0)): gi_cap_minor 22, but another device of the same GPU instance says 21",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A", "mig_enabled": true, "mig_devices": [
		   {"gpu_instance_id": 2, "compute_instance_id": 0, "profile": "3g.40gb", "gi_cap_minor": 21, "ci_cap_minor": 21}]}]}`: "cap minor 21 given to both GPU instance gpu0/gi2 and MIG device gpu0/gi2/ci0 (GPU 0 (minor 0))",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A", "uuid": "GPU-a", "mig_enabled": true, "mig_devices": [
		   {"gpu_instance_id": 2, "compute_instance_id": 0, "profile": "3g.40gb", "uuid": "MIG-GPU-b/2/0"}]}]}`: `MIG device gpu0/gi2/ci0 (GPU 0 (minor 0)): MIG UUID "MIG-GPU-b/2/0" names another GPU than GPU-a`,
	} {
		_, err := ParseSnapshot([]byte(doc))
		if err == nil || err.Error() != want {
			t.Errorf("ParseSnapshot(%s)\n err = %v\nwant %s", doc, err, want)
		}
	}
}
