package snapshot

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// FuzzSnapshot: Parse never panics, and either rejects its input or
// round-trips it: Write of the Node (schema 3), parsed again, gives an
// equal Node but for the schema it was read from (go-cmp; an empty list
// and a missing one are equal, since Write leaves empty lists out), which
// passes Check and writes the very same bytes again.
//
// Seeds: the f.Add calls, testdata/fuzz/FuzzSnapshot, the demo snapshot
// (testdata/demo/snapshot.json) and every *.json of the golden tests
// (testdata/script/*.txtar: snapshots, good and contradictory, and the
// fake-NVML fixtures, which are not snapshots), read at test time.
func FuzzSnapshot(f *testing.F) {
	addSnapshotSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Parse(data)
		if err != nil {
			if n != nil {
				t.Fatalf("ParseSnapshot returned a Node with error %v", err)
			}
			return
		}
		var first bytes.Buffer
		if err := Write(&first, n); err != nil {
			t.Fatalf("WriteSnapshot of a parsed snapshot: %v", err)
		}
		n2, err := Parse(first.Bytes())
		if err != nil {
			t.Fatalf("the written snapshot does not parse: %v\ninput:\n%s\nwritten:\n%s", err, data, first.Bytes())
		}
		if diff := cmp.Diff(n, n2, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(model.Node{}, "SchemaVersion")); diff != "" {
			t.Fatalf("written and parsed again, the node differs (-parsed +round trip):\n%s\ninput:\n%s", diff, data)
		}
		if err := n2.Check(); err != nil {
			t.Fatalf("Check of the round-tripped node: %v", err)
		}
		var second bytes.Buffer
		if err := Write(&second, n2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("writing the round-tripped node gives other bytes:\n%s\nvs\n%s", first.Bytes(), second.Bytes())
		}
	})
}

// addSnapshotSeeds adds the seeds of FuzzSnapshot: the
// f.Add calls below, the demo snapshot and every *.json of the golden
// tests; testdata/fuzz holds each target's own.
func addSnapshotSeeds(f *testing.F) {
	for _, s := range []string{
		`{"schema_version": 1, "hostname": "n1", "driver_version": "535.129.03",
 "gpus": [{"index": 2, "minor": 2, "uuid": "GPU-a", "name": "NVIDIA A100 80GB PCIe",
           "pci_bus_id": "00000000:CA:00.0", "memory_mib": 81920,
           "mig_enabled": true, "mig_pending": true, "cpu_affinity": "0-31", "cores": "0-15",
           "nvlinks": [{"remote_pci_bus_id": "FFFFFFFF:FF:FF.0", "links": 18}],
           "mig_devices": [{"gpu_instance_id": 7, "compute_instance_id": 0,
                            "uuid": "MIG-a", "profile": "1g.10gb", "gi_slices": 1, "memory_mib": 9728,
                            "gi_cap_minor": 336, "ci_cap_minor": 337}]}],
 "hardware": {"cpus": 64, "boards": 1, "sockets_per_board": 2, "cores_per_socket": 16, "threads_per_core": 2, "real_memory_mib": 515578}}`,
		`{"schema_version": 1, "gpus": [
  {"index": 1, "minor": 0, "name": "A100"},
  {"index": 0, "minor": 1, "name": "A100", "mig_enabled": true, "mig_devices": [
    {"gpu_instance_id": 9, "compute_instance_id": 0, "profile": "1g.10gb"},
    {"gpu_instance_id": 2, "compute_instance_id": 1, "profile": "1c.3g.40gb"},
    {"gpu_instance_id": 2, "compute_instance_id": 0, "profile": "1c.3g.40gb+me"}]}]}`,
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 2, "name": "x", "uuid": "GPU-abc", "mig_enabled": true,
  "mig_devices": [{"gpu_instance_id": 7, "compute_instance_id": 0, "profile": "1g.10gb", "uuid": "MIG-GPU-abc/7/0"}]}]}`,
		`{"schema_version": 1, "gpus": [], "mig_devices": [], "unknown": {"a": [1, 2]}}`,
		`{"schema_version": 1, "gpus": null, "hardware": {}}`,
		`{"schema_version": 1, "hostname": "<&>\u2028\ud800", "gpus": [{"index": 0, "minor": 0, "name": "\xff", "mig_devices": []}]}`,
		`{"schema_version": 1, "SCHEMA_VERSION": 1, "Gpus": [{"INDEX": 0, "minor": 0, "name": "a", "index": 1}]}`,
		`{"schema_version": 2, "gpus": []}`, `{"schema_version": 1.0}`, `{"gpus": []}`, `[]`, `null`, ``,
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0}]}`,
		`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "a", "mig_enabled": true,
  "mig_devices": [{"gpu_instance_id": 1, "compute_instance_id": 0, "profile": "1g.10gb", "gi_cap_minor": 4294967295},
                  {"gpu_instance_id": 1, "compute_instance_id": 1, "profile": "1g.10gb", "gi_cap_minor": 4294967295}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Add(fixture.Read(f, "demo/snapshot.json"))
	for _, p := range fixture.Glob(f, "real/*/snapshot.json") {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, p := range fixture.Glob(f, "script/*.txtar") {
		a, err := txtar.ParseFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range a.Files {
			if strings.HasSuffix(file.Name, ".json") {
				f.Add(file.Data)
			}
		}
	}
}
