package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/topology"
)

// TestDecodeFastTakesSnapshots: what slurm-mig snapshot writes, real
// captures and a node with every field set, goes through decodeFast, and
// comes out as encoding/json decodes it (FuzzDecodeFast holds the two
// equal on any input); were decodeFast to step aside for them, plan would
// read a fleet at encoding/json's pace.
func TestDecodeFastTakesSnapshots(t *testing.T) {
	gi, ci := uint32(336), uint32(337)
	full := &Node{SchemaVersion: SchemaVersion, Hostname: "n1.example", DriverVersion: "580.159.04",
		Hardware: &topology.NodeHardware{CPUs: 64, Boards: 1, SocketsPerBoard: 2, CoresPerSocket: 16, ThreadsPerCore: 2, RealMemoryMiB: 515578},
		GPUs: []GPU{{Index: 0, Minor: 0, UUID: "GPU-01000000-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:07:00.0", MemoryMiB: 81559,
			MigEnabled: true, MigPending: true, CPUAffinity: "0-31", Cores: "0-15", PCIDeviceID: "0x233010DE",
			NVLinks: []NVLink{{RemotePCIBusID: "FFFFFFFF:FF:FF.0", Links: 18}},
			MigDevices: []MigDevice{{GPUInstanceID: 9, UUID: "MIG-01000000-0001-4000-8000-000000000000", Profile: "1g.10gb", GISlices: 1, MemoryMiB: 9984,
				GICapMinor: &gi, CICapMinor: &ci, Processes: []Process{{PID: 4242, UsedMemoryMiB: 100}}}},
			MigProfiles: []GIProfile{{ID: 19, Name: "1g.10gb", Instances: 7, MemoryMiB: 9984, Slices: 1,
				Placements: []Placement{{Start: 0, Size: 1}}, CIProfiles: []CIProfile{{ID: 0, Name: "1g.10gb", Slices: 1, Instances: 1}}}}}}}
	var written bytes.Buffer
	if err := WriteSnapshot(&written, full); err != nil {
		t.Fatal(err)
	}
	// Eight GPUs of the real H100's profile table, long enough to be
	// decoded once and shared.
	real, err := LoadSnapshot(fixture.Path(t, "real/h100-snapshot-v2/snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	eight := *real
	eight.GPUs = nil
	for i := range 8 {
		g := real.GPUs[0]
		g.Index, g.Minor = i, i
		g.UUID = fmt.Sprintf("GPU-0100000%d-0000-4000-8000-000000000000", i)
		eight.GPUs = append(eight.GPUs, g)
	}
	var eightWritten bytes.Buffer
	if err := WriteSnapshot(&eightWritten, &eight); err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{"every field": written.Bytes(), "eight GPUs": eightWritten.Bytes(), "demo": fixture.Read(t, "demo/snapshot.json")}
	for _, p := range fixture.Glob(t, "real/*/snapshot.json") {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs[p] = data
	}
	for name, data := range inputs {
		var fast Node
		if !decodeFast(data, &fast, requiredKeys()) {
			t.Errorf("%s: decodeFast steps aside", name)
			continue
		}
		n, err := ParseSnapshot(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fast.Sort()
		if !reflect.DeepEqual(&fast, n) {
			t.Errorf("%s: decodeFast gives\n%+v\nParseSnapshot\n%+v", name, fast, *n)
		}
	}
}

// TestDecodeFastMemo: a profile table decodeFast has seen is copied only
// where the very same bytes come again, not where they only begin alike.
func TestDecodeFastMemo(t *testing.T) {
	data := memoTables()
	var fast, std Node
	if !decodeFast(data, &fast, requiredKeys()) {
		t.Fatal("decodeFast steps aside")
	}
	if err := json.Unmarshal(data, &std); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fast, std) {
		t.Errorf("decodeFast gives\n%+v\nencoding/json\n%+v", fast, std)
	}
	// The third GPU's table is the second's, decoded once.
	if &fast.GPUs[2].MigProfiles[0] != &fast.GPUs[1].MigProfiles[0] {
		t.Error("GPUs 1 and 2 have the same table's bytes, but each was decoded")
	}
}

// TestSnapshotReaderKeepsTables: a reader keeps the tables it has decoded
// for the next snapshot, and what it keeps is the table, not the place in
// a node where it was: sorting the GPUs of that node moves other tables
// there, and the next snapshot must still get the table its bytes say.
func TestSnapshotReaderKeepsTables(t *testing.T) {
	real, err := LoadSnapshot(fixture.Path(t, "real/h100-snapshot-v2/snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := real.GPUs[0].MigProfiles
	b := a[:len(a)-1] // another table: the same less its last profile
	node := *real
	node.GPUs = nil
	// In file order GPU 2 holds the second sight of table a, and sorting
	// by index puts GPU 1, of table b, where it was.
	for i, gpu := range []struct {
		index int
		table []GIProfile
	}{{0, a}, {2, a}, {1, b}} {
		g := real.GPUs[0]
		g.Index, g.Minor, g.MigProfiles = gpu.index, gpu.index, gpu.table
		g.UUID = fmt.Sprintf("GPU-0100000%d-0000-4000-8000-000000000000", i)
		g.PCIBusID = fmt.Sprintf("00000000:0%d:00.0", i)
		node.GPUs = append(node.GPUs, g)
	}
	var data bytes.Buffer
	if err := WriteSnapshot(&data, &node); err != nil {
		t.Fatal(err)
	}
	want, err := ParseSnapshot(data.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	r := NewSnapshotReader()
	for pass := range 3 {
		got, err := r.Parse(data.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("read %d by one reader: GPU tables of %d, %d, %d profiles; want %d, %d, %d", pass+1,
				len(got.GPUs[0].MigProfiles), len(got.GPUs[1].MigProfiles), len(got.GPUs[2].MigProfiles),
				len(want.GPUs[0].MigProfiles), len(want.GPUs[1].MigProfiles), len(want.GPUs[2].MigProfiles))
		}
	}
}
