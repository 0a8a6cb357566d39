package snapshot

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// The same node as schema 1, 2 and 3 reads to equal models, but for the
// table schema 1 lacks and the version each was read from.
func TestSchemasReadAlike(t *testing.T) {
	for _, capture := range []string{"h100-snapshot-v2", "h200-snapshot-v2"} {
		v2data, err := os.ReadFile(fixture.Path(t, "real/"+capture+"/snapshot.json"))
		if err != nil {
			t.Fatal(err)
		}
		fromV2, err := Parse(v2data)
		if err != nil {
			t.Fatal(err)
		}
		var v3data bytes.Buffer
		if err := Write(&v3data, fromV2); err != nil {
			t.Fatal(err)
		}
		fromV3, err := Parse(v3data.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if fromV2.SchemaVersion != 2 || fromV3.SchemaVersion != 3 {
			t.Errorf("%s: read as schema %d and %d", capture, fromV2.SchemaVersion, fromV3.SchemaVersion)
		}
		ignore := cmpopts.IgnoreFields(model.Node{}, "SchemaVersion")
		if diff := cmp.Diff(fromV2, fromV3, ignore); diff != "" {
			t.Errorf("%s: schema 2 and 3 read otherwise (-v2 +v3):\n%s", capture, diff)
		}
		var v1 map[string]any
		if err := json.Unmarshal(v2data, &v1); err != nil {
			t.Fatal(err)
		}
		v1["schema_version"] = 1
		for _, g := range v1["gpus"].([]any) {
			delete(g.(map[string]any), "mig_profiles")
			delete(g.(map[string]any), "pci_device_id")
		}
		v1data, _ := json.Marshal(v1)
		fromV1, err := Parse(v1data)
		if err != nil {
			t.Fatal(err)
		}
		for i := range fromV1.GPUs {
			if fromV1.GPUs[i].Profiles != nil {
				t.Errorf("%s: schema 1 GPU %d has a table", capture, i)
			}
			fromV1.GPUs[i].Profiles, fromV1.GPUs[i].PCIDeviceID = fromV2.GPUs[i].Profiles, fromV2.GPUs[i].PCIDeviceID
		}
		if diff := cmp.Diff(fromV2, fromV1, ignore); diff != "" {
			t.Errorf("%s: schema 2 and 1 read otherwise (-v2 +v1):\n%s", capture, diff)
		}
	}
}

// twoModels is a schema 2 node of an H100 and an A100 given out of index
// order, each with a table of its own.
const twoModels = `{"schema_version": 2, "gpus": [
 {"index": 1, "minor": 1, "uuid": "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f1", "name": "NVIDIA A100-SXM4-80GB", "pci_device_id": "0x20B210DE",
  "mig_profiles": [{"id": 19, "name": "1g.10gb", "instances": 7, "memory_mib": 9728, "slices": 1, "placements": [{"start": 0, "size": 1}]}]},
 {"index": 0, "minor": 0, "uuid": "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", "name": "NVIDIA H100 80GB HBM3", "pci_device_id": "0x233010DE",
  "mig_profiles": [{"id": 19, "name": "1g.10gb", "instances": 7, "memory_mib": 9984, "slices": 1, "placements": [{"start": 0, "size": 1}]}]},
 {"index": 2, "minor": 2, "uuid": "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f2", "name": "NVIDIA H100 80GB HBM3", "pci_device_id": "0x233010DE",
  "mig_profiles": [{"id": 19, "name": "1g.10gb", "instances": 7, "memory_mib": 9984, "slices": 1, "placements": [{"start": 0, "size": 1}]}]}]}`

// After the sort into index order each GPU keeps its own table (a table
// keyed by where it lay in memory once gave a GPU another's), GPUs of one
// model share one, and writing files each table once under its id.
func TestTablesFollowTheirGPU(t *testing.T) {
	n, err := Parse([]byte(twoModels))
	if err != nil {
		t.Fatal(err)
	}
	h100a, a100, h100b := &n.GPUs[0], &n.GPUs[1], &n.GPUs[2]
	if a100.Index != 1 || a100.Profiles.Profiles[0].MemoryMiB != 9728 || h100a.Profiles.Profiles[0].MemoryMiB != 9984 {
		t.Errorf("tables after the sort: GPU 0 %+v, GPU 1 %+v", h100a.Profiles, a100.Profiles)
	}
	if h100a.Profiles != h100b.Profiles || h100a.Profiles == a100.Profiles {
		t.Error("GPUs of one model have two tables, or two models one")
	}
	var out bytes.Buffer
	if err := Write(&out, n); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), `"memory_mib": 9984`); got != 1 {
		t.Errorf("the H100 table is written %d times, want once:\n%s", got, out.String())
	}
}

// Readers that share a model.Tables give equal tables of several files
// one pointer; a table that differs stays apart.
func TestReadersShareTables(t *testing.T) {
	var tables model.Tables
	a, err := NewReader(&tables).Parse([]byte(twoModels))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewReader(&tables).Parse([]byte(twoModels))
	if err != nil {
		t.Fatal(err)
	}
	if a.GPUs[0].Profiles != b.GPUs[0].Profiles || a.GPUs[1].Profiles != b.GPUs[1].Profiles {
		t.Error("equal tables of two files are two values")
	}
	other, err := NewReader(&tables).Parse([]byte(strings.ReplaceAll(twoModels, "9728", "9729")))
	if err != nil {
		t.Fatal(err)
	}
	if other.GPUs[1].Profiles == a.GPUs[1].Profiles {
		t.Error("a table that differs is shared")
	}
}

// GPUs of one PCI device id with different tables, and a table without
// an id to file it under, are refused: schema 3 could not write them.
func TestTableRefusals(t *testing.T) {
	for in, want := range map[string]string{
		strings.Replace(twoModels, `"memory_mib": 9984`, `"memory_mib": 9985`, 1): "GPU 2 (minor 2): pci_device_id 0x233010DE: a profile table unlike that of another GPU of the same id",
		strings.Replace(twoModels, `"pci_device_id": "0x20B210DE",`, ``, 1):       "GPU 1 (minor 1): mig_profiles but no pci_device_id: a profile table belongs to a GPU model",
	} {
		if _, err := Parse([]byte(in)); err == nil || err.Error() != want {
			t.Errorf("err = %v\nwant %s", err, want)
		}
	}
}

// Schema 3 keeps each table once: an 8-GPU H100 node's snapshot is a
// fraction of its schema 2 size.
func TestSchema3IsSmaller(t *testing.T) {
	data, err := os.ReadFile(fixture.Path(t, "real/h100-snapshot-v2/snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v2 map[string]any
	if err := json.Unmarshal(data, &v2); err != nil {
		t.Fatal(err)
	}
	one := v2["gpus"].([]any)[0].(map[string]any)
	var gpus []any
	for i := range 8 {
		g := map[string]any{}
		for k, v := range one {
			g[k] = v
		}
		g["index"], g["minor"] = i, i
		g["uuid"] = "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f" + string(rune('0'+i))
		g["pci_bus_id"] = "00000000:1" + string(rune('0'+i)) + ":00.0"
		gpus = append(gpus, g)
	}
	v2["gpus"] = gpus
	v2data, _ := json.MarshalIndent(v2, "", "  ")
	n, err := Parse(v2data)
	if err != nil {
		t.Fatal(err)
	}
	var v3data bytes.Buffer
	if err := Write(&v3data, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("8 H100s: schema 2 %d bytes, schema 3 %d bytes", len(v2data), v3data.Len())
	if v3data.Len()*5 > len(v2data) {
		t.Errorf("schema 3 is %d bytes, schema 2 %d: want at most a fifth", v3data.Len(), len(v2data))
	}
}
