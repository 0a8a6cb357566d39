package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

func TestSnapshotRoundTrip(t *testing.T) {
	n := &model.Node{SchemaVersion: 1, Hostname: "n1", DriverVersion: "580.159.04", GPUs: []model.GPU{
		{Index: 0, Minor: 2, UUID: "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", Name: "NVIDIA A100 80GB PCIe", PCIBusID: "00000000:CA:00.0", MemoryMiB: 81920,
			MigEnabled: true, MigPending: true, CPUAffinity: "0-31",
			MigDevices: []model.MigDevice{{GPUInstanceID: 7, ComputeInstanceID: 0, UUID: "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b", Profile: "1g.10gb", GISlices: 1,
				MemoryMiB: 9728, GICapMinor: ptr(336), CICapMinor: ptr(337)}}},
	}}
	var buf bytes.Buffer
	if err := Write(&buf, n); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	n.SchemaVersion = 3 // what Write writes, whatever the node was read from
	if diff := cmp.Diff(n, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func ptr(v uint32) *uint32 { return &v }

// The schema's example document from the issue, with UUIDs in NVML's
// form where it wrote "GPU-..." and "MIG-...".
func TestSnapshotSchemaExample(t *testing.T) {
	doc := `{"schema_version": 1, "hostname": "n1", "driver_version": "535.129.03",
 "gpus": [{"index": 2, "minor": 2, "uuid": "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", "name": "NVIDIA A100 80GB PCIe",
           "pci_bus_id": "00000000:CA:00.0", "memory_mib": 81920,
           "mig_enabled": true, "mig_pending": true, "cpu_affinity": "0-31",
           "mig_devices": [{"gpu_instance_id": 7, "compute_instance_id": 0,
                            "uuid": "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b", "profile": "1g.10gb",
                            "gi_cap_minor": 336, "ci_cap_minor": 337}]}]}`
	n, err := Parse([]byte(doc))
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
	  {"index": 1, "minor": 0, "name": "A100", "uuid": "GPU-00000001-0000-4000-8000-000000000000"},
	  {"index": 0, "minor": 1, "name": "A100", "uuid": "GPU-00000000-0000-4000-8000-000000000000", "mig_enabled": true, "mig_devices": [
	    {"gpu_instance_id": 9, "compute_instance_id": 0, "profile": "1g.10gb", "uuid": "MIG-00000000-0000-4000-8000-000000000900"},
	    {"gpu_instance_id": 2, "compute_instance_id": 1, "profile": "1c.3g.40gb", "uuid": "MIG-00000000-0000-4000-8000-000000000201"},
	    {"gpu_instance_id": 2, "compute_instance_id": 0, "profile": "1c.3g.40gb", "uuid": "MIG-00000000-0000-4000-8000-000000000200"}]}]}`
	n, err := Parse([]byte(doc))
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
		`{"schema_version": 4, "gpus": []}`: "unsupported schema_version 4 (this slurm-mig reads 1 to 3)",
		`{"schema_version": 0, "gpus": []}`: "unsupported schema_version 0 (this slurm-mig reads 1 to 3)",
		`[1,2]`:                             "not a snapshot: the file holds a list; a snapshot is a JSON object",
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
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A", "uuid": "GPU-0000000a-0000-4000-8000-000000000000", "mig_enabled": true, "mig_devices": [
		   {"gpu_instance_id": 2, "compute_instance_id": 0, "profile": "3g.40gb", "uuid": "MIG-GPU-0000000b-0000-4000-8000-000000000000/2/0"}]}]}`: `MIG device gpu0/gi2/ci0 (GPU 0 (minor 0)): MIG UUID "MIG-GPU-0000000b-0000-4000-8000-000000000000/2/0" names another GPU than GPU-0000000a-0000-4000-8000-000000000000`,
	} {
		_, err := Parse([]byte(doc))
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%s)\n err = %v\nwant %s", doc, err, want)
		}
	}
}

// TestSnapshotRanges: values a real node cannot have are refused, in
// words that name the field and never a Go type.
func TestSnapshotRanges(t *testing.T) {
	const gpu = `"index": 0, "minor": 0, "name": "A"`
	mig := func(fields string) string {
		return `{"schema_version": 1, "gpus": [{` + gpu + `, "mig_enabled": true, "mig_devices": [{"profile": "1g.10gb", ` + fields + `}]}]}`
	}
	for doc, want := range map[string]string{
		`"snapshot"`:                        "not a snapshot: the file holds a string; a snapshot is a JSON object",
		`{"schema_version": "1"}`:           "not a snapshot: schema_version: a string where an integer belongs",
		`{"schema_version": 1, "gpus": {}}`: "not a snapshot: gpus: an object where a list belongs",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 1e3, "name": "A"}]}`:           "not a snapshot: gpus.minor: number 1e3 where an integer belongs",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 1000000000000, "name": "A"}]}`: "GPU 0 (minor 1000000000000): minor 1000000000000; the driver's GPU minors are 0 to 254",
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 255, "name": "A"}]}`:           "GPU 0 (minor 255): minor 255; the driver's GPU minors are 0 to 254",
		`{"schema_version": 1, "gpus": [{"index": 5000, "minor": 0, "name": "A"}]}`:          "GPU 5000 (minor 0): index 5000; NVML numbers at most 1024 GPUs from 0",
		`{"schema_version": 1, "gpus": [{` + gpu + `, "cpu_affinity": "zz"}]}`:               `GPU 0 (minor 0): cpu_affinity: cpulist "zz": item "zz": "zz" is not a CPU id`,
		`{"schema_version": 1, "gpus": [{` + gpu + `, "name": 3}]}`:                          "not a snapshot: gpus.name: a number where a string belongs",
		mig(`"gpu_instance_id": 300, "compute_instance_id": 0`):                              "MIG device gpu0/gi300/ci0 (GPU 0 (minor 0)): instance ids run from 0 to 255",
		mig(`"gpu_instance_id": 1, "compute_instance_id": 256`):                              "MIG device gpu0/gi1/ci256 (GPU 0 (minor 0)): instance ids run from 0 to 255",
		mig(`"gpu_instance_id": 1, "compute_instance_id": 0, "ci_cap_minor": 1048576`):       "MIG device gpu0/gi1/ci0 (GPU 0 (minor 0)): ci_cap_minor 1048576; a device minor is at most 1048575",
		mig(`"gpu_instance_id": 1, "compute_instance_id": 0, "gi_cap_minor": 5000000000`):    "not a snapshot: gpus.mig_devices.gi_cap_minor: number 5000000000 where an integer from 0 to 4294967295 belongs",
		mig(`"gpu_instance_id": 1, "compute_instance_id": 0, "gi_cap_minor": -1`):            "not a snapshot: gpus.mig_devices.gi_cap_minor: number -1 where an integer from 0 to 4294967295 belongs",
		`{"schema_version": 1, "hostname": "bad host,name", "gpus": []}`:                     `hostname: node name "bad host,name": a blank ends a value in Slurm's config files, so Slurm would not read it as one node name`,
		`{"schema_version": 1, "hostname": "gpu01#x", "gpus": []}`:                           `hostname: node name "gpu01#x": '#' starts a comment in Slurm's config files, so Slurm would not read it as one node name`,
		`{"schema_version": 1, "gpus": [` + "\n" + `{"index": 0,}]}`:                         "not a snapshot: line 2: invalid character '}' looking for beginning of object key string",
	} {
		_, err := Parse([]byte(doc))
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%s)\n err = %v\nwant %s", doc, err, want)
		}
	}
}

// TestSnapshotUUIDs: every GPU and MIG device of a snapshot has a UUID in
// NVML's form, which env would hand a job; one that is missing, empty or
// garbage is refused, naming the device.
func TestSnapshotUUIDs(t *testing.T) {
	const gpuUUID = `"uuid": "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0"`
	doc := func(gpuField, migField string) string {
		return `{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A", ` + gpuField +
			`"mig_enabled": true, "mig_devices": [{"gpu_instance_id": 7, "compute_instance_id": 0, "profile": "1g.10gb"` + migField + `}]}]}`
	}
	for _, ok := range []string{
		doc(gpuUUID+", ", `, "uuid": "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b"`),
		doc(gpuUUID+", ", `, "uuid": "MIG-GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0/7/0"`),
	} {
		if _, err := Parse([]byte(ok)); err != nil {
			t.Errorf("Parse(%s): %v", ok, err)
		}
	}
	const mig = "MIG device gpu0/gi7/ci0 (GPU 0 (minor 0)): "
	for d, want := range map[string]string{
		doc(gpuUUID+", ", `, "uuid": "garbage"`):                                           mig + `uuid "garbage" is not a MIG UUID`,
		doc(gpuUUID+", ", `, "uuid": ""`):                                                  mig + "no uuid",
		doc(gpuUUID+", ", ``):                                                              mig + "no uuid",
		doc(gpuUUID+", ", `, "uuid": "MIG-1"`):                                             mig + `uuid "MIG-1" is not a MIG UUID`,
		doc(gpuUUID+", ", `, "uuid": "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0"`):          "UUID GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0 given to both GPU 0 (minor 0) and " + mig[:len(mig)-2],
		doc(``, `, "uuid": "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b"`):                    "GPU 0 (minor 0): no uuid",
		doc(`"uuid": "garbage", `, `, "uuid": "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b"`): `GPU 0 (minor 0): uuid "garbage" is not a GPU UUID`,
	} {
		_, err := Parse([]byte(d))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Parse(%s)\n err = %v\nwant %s...", d, err, want)
		}
	}
}

// SnapshotFiles takes a file as given and a directory as its *.json files
// in name order, leaving out hidden files and others; a directory with
// none is an error naming it, since an empty fleet is surely a mistake.
func TestSnapshotFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.json", "a.json", ".hidden.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "notes.txt")
	got, err := Files([]string{one, dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{one, filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")}
	if !slices.Equal(got, want) {
		t.Errorf("SnapshotFiles = %q, want %q", got, want)
	}
	if _, err := Files([]string{empty}); err == nil || !strings.Contains(err.Error(), empty+": no *.json snapshots") {
		t.Errorf("an empty directory: %v", err)
	}
	if _, err := Files([]string{filepath.Join(dir, "nope.json")}); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("a missing file: %v", err)
	}
}
