package migplan

import (
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// TestOwnLayout: a plan is the same on every node with the GPUs of its
// node only when no MIG-capable GPU is left as it is. A config that takes
// only some GPUs, or none of a model, leaves the rest in each node's own
// layout, whether MIG is off in the snapshot or on; MIG off (whole) and a
// MIG layout are the same everywhere; a GPU without MIG is whole on every
// node, taken or not.
func TestOwnLayout(t *testing.T) {
	const text = `version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
  first-only:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "7g.80gb": 1
  h200-only:
    - device-filter: "0x233510DE"
      devices: all
      mig-enabled: false
`
	split := h100(1)
	split.MigEnabled, split.MigPending = true, true
	split.MigDevices = []model.MigDevice{{Profile: "4g.40gb"}, {Profile: "3g.40gb"}}
	noMIG := model.GPU{Index: 2, Name: "NVIDIA L40S", PCIDeviceID: "0x26B910DE"}
	for _, tc := range []struct {
		config string
		gpus   []model.GPU
		own    int // the GPU left in each node's own layout, or -1
	}{
		{"all-disabled", []model.GPU{h100(0), split, noMIG}, -1},
		{"all-balanced", []model.GPU{h100(0), split, noMIG}, -1},
		{"first-only", []model.GPU{h100(0), noMIG}, -1},
		{"first-only", []model.GPU{h100(0), h100(1)}, 1},
		{"first-only", []model.GPU{h100(0), split}, 1},
		{"h200-only", []model.GPU{h100(0)}, 0},
		{"h200-only", []model.GPU{h200(0), noMIG}, -1},
	} {
		p, err := Make(node(tc.gpus...), mustSelect(t, text, tc.config))
		if err != nil {
			t.Fatalf("%s: %v", tc.config, err)
		}
		got := -1
		if g := p.OwnLayout(); g != nil {
			got = g.Index
		}
		if got != tc.own {
			t.Errorf("%s on %d GPUs (%s): own layout of GPU %d, want %d", tc.config, len(tc.gpus), layout(p), got, tc.own)
		}
	}
}
