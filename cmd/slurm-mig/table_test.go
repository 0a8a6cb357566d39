package main

import (
	"bytes"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// TestWriteListingEmptyLists: a node without GPUs, and a GPU without MIG
// devices, give empty lists, never null, so that a script's loop over
// them needs no test first.
func TestWriteListingEmptyLists(t *testing.T) {
	for _, tc := range []struct {
		node *model.Node
		want string
	}{
		{&model.Node{}, "{\n  \"hostname\": \"\",\n  \"gpus\": []\n}\n"},
		{&model.Node{Hostname: "n1", GPUs: []model.GPU{{Minor: 3, Name: "NVIDIA H100 80GB HBM3", MigEnabled: true}}},
			`{
  "hostname": "n1",
  "gpus": [
    {
      "index": 0,
      "minor": 3,
      "name": "NVIDIA H100 80GB HBM3",
      "uuid": "",
      "pci_bus_id": "",
      "mig_enabled": true,
      "mig_pending": false,
      "files": [],
      "mig_devices": []
    }
  ]
}
`},
	} {
		var b bytes.Buffer
		if err := writeListing(&b, tc.node); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("writeListing:\n%s\nwant:\n%s", b.String(), tc.want)
		}
	}
}
