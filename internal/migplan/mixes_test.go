package migplan

import (
	"errors"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// mixes are configs of our own, each expected to fit or be refused for
// one reason that the real H100 and H200 tables (testdata/real/*-snapshot-v2)
// decide. On both GPUs a GPU has 8 memory slices; the placements are
// 1g {0..6}:1 (so no 1-slice instance starts at 7), 1g+me the same but
// one instance, 1g of two slices {0,2,4,6}:2, 2g {0,2,4}:2, 3g {0,4}:4,
// 4g {0}:4 and 7g {0}:8.
const mixes = `version: v1
mig-configs:
  issue-example:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "2g.20gb": 1
        "1g.10gb": 2

  issue-example-less-one:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "2g.20gb": 1
        "1g.10gb": 1

  issue-example-h200:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.71gb": 1
        "2g.35gb": 1
        "1g.18gb": 2

  3g-at-4-with-two-2g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "2g.20gb": 2

  3g-with-three-2g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "2g.20gb": 3

  1g.20gb-at-6:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "1g.20gb": 1
        "1g.10gb": 2

  three-1g.20gb-two-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.20gb": 3
        "1g.10gb": 2

  four-1g.20gb-one-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.20gb": 4
        "1g.10gb": 1

  seven-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7

  eight-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 8

  five-1g.20gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.20gb": 5

  me-and-six:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb+me": 1
        "1g.10gb": 6

  me-and-seven:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb+me": 1
        "1g.10gb": 7

  two-me:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb+me": 2

  two-1c.3g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1c.3g.40gb": 2

  three-1c.3g-four-1g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1c.3g.40gb": 3
        "1g.10gb": 4

  four-1c.3g-one-1g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1c.3g.40gb": 4
        "1g.10gb": 1

  four-1c.3g-one-3g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1c.3g.40gb": 4
        "3g.40gb": 1

  three-2c.3g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "2c.3g.40gb": 3

  2c-and-1c-share-a-3g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "2c.3g.40gb": 1
        "1c.3g.40gb": 1

  3c.4g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3c.4g.40gb": 1

  3c.3g-is-3g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3c.3g.40gb": 2

  1c.1g-is-1g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 3
        "1c.1g.10gb": 4

  1c.1g-and-1g-too-many:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 4
        "1c.1g.10gb": 4

  per-index:
    - devices: [0, 2]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    - devices: [1]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
    - devices: [5]
      mig-enabled: true
      mig-devices:
        "7g.80gb": 1

  last-entry-wins:
    - devices: all
      mig-enabled: true
      mig-devices:
        "7g.80gb": 1
    - devices: [1]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2

  later-entry-rescues-nothing:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 8
    - devices: all
      mig-enabled: true
      mig-devices:
        "7g.80gb": 1

  by-model:
    - device-filter: "0x233010de"
      devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "1g.10gb": 4
    - device-filter: ["0x232110DE", "0x233510DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.35gb": 4

  h100-names-for-both:
    - device-filter: ["0x233010DE", "0x233510DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "2g.20gb": 3

  nvl-only:
    - device-filter: "0x232110DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.12gb": 7

  a100-only:
    - device-filter: ["0x20B010DE", "0x20B210DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
    - device-filter: "0x20B210DE"
      devices: all
      mig-enabled: false

  off-and-on:
    - devices: [0]
      mig-enabled: false
    - devices: [1]
      mig-enabled: true
      mig-devices: {}
    - devices: [2, 3]
      mig-enabled: true
      mig-devices:
        "1g.18gb": 7

  by-model-then-off:
    - device-filter: "0x233510DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.35gb": 4
    - device-filter: "0x233510DE"
      devices: [3]
      mig-enabled: false

  zero-count:
    - device-filter: "0x233010DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "7g.80gb": 1
        "1g.18gb": 0
`

// realGPU is GPU index of a node as the captured snapshot's one GPU:
// its name, PCI id and profile table, MIG off.
func realGPU(t *testing.T, snapshot string, index int) model.GPU {
	t.Helper()
	g := realNode(t, snapshot, index+1).GPUs[index]
	return g
}

// TestMixes holds plan to hand-derived answers on the real tables: the
// Gres= of the node as mig-parted leaves it, or the refusal, which names
// the file and line of the entry, the config, the GPU and the profile.
func TestMixes(t *testing.T) {
	h100 := func(i int) model.GPU { return realGPU(t, "h100-snapshot-v2", i) }
	h200 := func(i int) model.GPU { return realGPU(t, "h200-snapshot-v2", i) }
	h100x := func(n int) *model.Node {
		var gpus []model.GPU
		for i := range n {
			gpus = append(gpus, h100(i))
		}
		return node(gpus...)
	}
	// The GPUs of a mixed node: H100, H200, H100, H200.
	mixed := node(h100(0), h200(1), h100(2), h200(3))
	// An H100 in MIG mode now, holding two 3g.40gb.
	withMIG := func(i int) model.GPU {
		g := h100(i)
		g.MigEnabled, g.MigPending = true, true
		g.MigDevices = []model.MigDevice{{Profile: "3g.40gb"}, {Profile: "3g.40gb"}}
		return g
	}

	for _, c := range []struct {
		config string
		node   *model.Node
		want   string // the Gres= line, or the refusal (a prefix of it)
	}{
		// The example: 4g takes 0-3 (its only placement), 2g then
		// 4-5 (0 and 2 are taken), one 1g 6, and no 1g starts at 7.
		{"issue-example", h100x(1), `refused: mig.yaml:4: config "issue-example": GPU 0 (NVIDIA H100 80GB HBM3): 4g.40gb + 2g.20gb + 2x1g.10gb: no set of placements without overlap holds them all`},
		{"issue-example-less-one", h100x(1), "Gres=gpu:h100_4g.40gb:1,gpu:h100_2g.20gb:1,gpu:h100_1g.10gb:1"},
		{"issue-example-h200", node(h200(0)), `refused: mig.yaml:20: config "issue-example-h200": GPU 0 (NVIDIA H200): 4g.71gb + 2g.35gb + 2x1g.18gb: no set of placements without overlap holds them all`},
		// Fits only with the 3g at 4 (4-7) and the 2g at 0 and 2; with the
		// 3g at 0 only 2g at 4 is left. A third 2g has no room either way.
		{"3g-at-4-with-two-2g", h100x(1), "Gres=gpu:h100_3g.40gb:1,gpu:h100_2g.20gb:2"},
		{"3g-with-three-2g", h100x(1), `refused: mig.yaml:35: config "3g-with-three-2g": GPU 0 (NVIDIA H100 80GB HBM3): 3g.40gb + 3x2g.20gb: no set of placements without overlap holds them all`},
		// Fits only with the 1g.20gb at 6 (6-7): at 4 it leaves 6 alone
		// for two 1g.10gb.
		{"1g.20gb-at-6", h100x(1), "Gres=gpu:h100_4g.40gb:1,gpu:h100_1g.10gb:2,gpu:h100_1g.20gb:1"},
		// Three 1g.20gb leave one pair free; 0-1, 2-3 or 4-5 hold two
		// 1g.10gb, so it fits (6-7 would not).
		{"three-1g.20gb-two-1g.10gb", h100x(1), "Gres=gpu:h100_1g.10gb:2,gpu:h100_1g.20gb:3"},
		{"four-1g.20gb-one-1g.10gb", h100x(1), `refused: mig.yaml:57: config "four-1g.20gb-one-1g.10gb": GPU 0 (NVIDIA H100 80GB HBM3): 1g.10gb + 4x1g.20gb: no set of placements`},
		// Instance counts: 7 1g.10gb, 4 1g.20gb, one +me a GPU.
		{"seven-1g.10gb", h100x(4), "Gres=gpu:h100_1g.10gb:28"},
		{"eight-1g.10gb", h100x(1), `refused: mig.yaml:70: config "eight-1g.10gb": GPU 0 (NVIDIA H100 80GB HBM3): 1g.10gb: 8 asked, and the GPU holds at most 7`},
		{"five-1g.20gb", h100x(1), `refused: mig.yaml:76: config "five-1g.20gb": GPU 0 (NVIDIA H100 80GB HBM3): 1g.20gb: 5 asked, and the GPU holds at most 4`},
		{"me-and-six", h100x(4), "Gres=gpu:h100_1g.10gb:24,gpu:h100_1g.10gb+me:4"},
		{"me-and-seven", h100x(1), `refused: mig.yaml:89: config "me-and-seven": GPU 0 (NVIDIA H100 80GB HBM3): 7x1g.10gb + 1g.10gb+me: no set of placements`},
		{"two-me", h100x(1), `refused: mig.yaml:96: config "two-me": GPU 0 (NVIDIA H100 80GB HBM3): 1g.10gb+me: 2 asked, and the GPU holds at most 1`},
		// Compute instances: mig-parted makes each in the GPU instance it
		// made last while it fits there (pkg/mig/config SetMigConfig), so
		// two 1c.3g.40gb are one 3g instance with two MIG devices.
		{"two-1c.3g", h100x(1), "Gres=gpu:h100_1c.3g.40gb:2"},
		// Three 1c.3g.40gb share one 3g (at 4), which leaves 0-3 to four
		// 1g.10gb; were each its own 3g, three would not fit.
		{"three-1c.3g-four-1g", h100x(1), "Gres=gpu:h100_1c.3g.40gb:3,gpu:h100_1g.10gb:4"},
		// Four need two 3g instances, which take all 8 memory slices.
		{"four-1c.3g-one-1g", h100x(1), `refused: mig.yaml:115: config "four-1c.3g-one-1g": GPU 0 (NVIDIA H100 80GB HBM3): 4x1c.3g.40gb + 1g.10gb: no set of placements`},
		{"four-1c.3g-one-3g", h100x(1), `refused: mig.yaml:122: config "four-1c.3g-one-3g": GPU 0 (NVIDIA H100 80GB HBM3): 3g.40gb + 4x1c.3g.40gb: takes 7 compute slices, and 2 3g.40gb GPU instances have 6`},
		// A 3g instance holds one 2c.3g.40gb.
		{"three-2c.3g", h100x(1), `refused: mig.yaml:129: config "three-2c.3g": GPU 0 (NVIDIA H100 80GB HBM3): 2c.3g.40gb: 3 asked, and the GPU holds at most 2`},
		{"2c-and-1c-share-a-3g", h100x(1), "Gres=gpu:h100_4g.40gb:1,gpu:h100_2c.3g.40gb:1,gpu:h100_1c.3g.40gb:1"},
		// A 4g instance offers 1c, 2c and 4c compute instances, no 3c
		// (the real table, and go-nvlib's rule mig-parted names them by).
		{"3c.4g", h100x(1), `refused: mig.yaml:143: config "3c.4g": GPU 0 (NVIDIA H100 80GB HBM3): 3c.4g.40gb: a 4g.40gb GPU instance has no compute instance of 3 slices`},
		// mig-parted reads 3c.3g.40gb as 3g.40gb (go-nvlib parses c, g and
		// gb, and c = g is the whole instance), and NVML names the MIG
		// devices it makes 3g.40gb: Slurm sees that type.
		{"3c.3g-is-3g", h100x(1), "Gres=gpu:h100_3g.40gb:2"},
		{"1c.1g-is-1g", h100x(1), "Gres=gpu:h100_1g.10gb:7"},
		{"1c.1g-and-1g-too-many", h100x(1), `refused: mig.yaml:162: config "1c.1g-and-1g-too-many": GPU 0 (NVIDIA H100 80GB HBM3): 4x1c.1g.10gb + 4x1g.10gb: takes 8 compute slices, and 7 1g.10gb GPU instances have 7`},
		// Devices by index: GPU 3 is named by no entry and stays whole;
		// index 5 is no GPU of the node.
		{"per-index", h100x(4), "Gres=gpu:h100_1g.10gb:14,gpu:h100_3g.40gb:2,gpu:h100:1"},
		{"per-index", h100x(1), "Gres=gpu:h100_1g.10gb:7"},
		// mig-parted applies the entries in turn, each clearing what the
		// one before made on the GPU: the last that matches a GPU stays.
		{"last-entry-wins", h100x(4), "Gres=gpu:h100_7g.80gb:3,gpu:h100_3g.40gb:2"},
		// ... but an entry that fails fails the apply, whatever follows.
		{"later-entry-rescues-nothing", h100x(1), `refused: mig.yaml:193: config "later-entry-rescues-nothing": GPU 0 (NVIDIA H100 80GB HBM3): 1g.10gb: 8 asked`},
		// device-filter: the H100s (0x233010DE, written in lower case,
		// still the same id) get entry 1; the H200s entry 2, whose list
		// names an H100 NVL too.
		{"by-model", mixed, "Gres=gpu:h100_3g.40gb:2,gpu:h100_1g.10gb:8,gpu:h200_1g.35gb:8"},
		// Two entries that match one GPU with MIG on and off: mig-parted
		// sets the mode of each in turn (the last wins), then refuses
		// the MIG devices of the first on a GPU with MIG off.
		{"by-model-then-off", mixed, `refused: mig.yaml:256: config "by-model-then-off": GPU 3 (NVIDIA H200): entries 1 and 2 both match it, one with MIG enabled and one without; mig-parted refuses that`},
		// The H200 has no 2g.20gb: refused on the first H200, GPU 1.
		{"h100-names-for-both", mixed, `refused: mig.yaml:216: config "h100-names-for-both": GPU 1 (NVIDIA H200): 2g.20gb: this GPU has no such profile`},
		// Entries for other GPUs (an H100 NVL, A100s) match none here:
		// every GPU keeps its layout, whole or in MIG mode.
		{"nvl-only", mixed, "Gres=gpu:h100:2,gpu:h200:2"},
		{"a100-only", mixed, "Gres=gpu:h100:2,gpu:h200:2"},
		{"a100-only", node(withMIG(0), h200(1)), "Gres=gpu:h100_3g.40gb:2,gpu:h200:1"},
		// A count of 0 asks for nothing, but mig-parted still reads the
		// name, against every GPU of the node (types.MigConfig.Flatten):
		// where an H200 has 1g.18gb, the H100s get their 7g.80gb; where
		// no GPU has it, mig-parted drops the whole entry, makes no MIG
		// device on the GPU and says it succeeded.
		{"zero-count", mixed, "Gres=gpu:h100_7g.80gb:2,gpu:h200:2"},
		{"zero-count", h100x(1), `refused: mig.yaml:261: config "zero-count": GPU 0 (NVIDIA H100 80GB HBM3): 1g.18gb: no GPU of the node has such a profile, and then mig-parted makes no MIG device on this one, whatever the count (0 here)`},
		// MIG off is the whole GPU; MIG on with no MIG devices is nothing.
		{"off-and-on", node(h200(0), h200(1), h200(2), h200(3)), "Gres=gpu:h200:1,gpu:h200_1g.18gb:14"},
		{"off-and-on", node(h200(0), withMIG(1)), "Gres=gpu:h200:1"},
	} {
		t.Run(c.config, func(t *testing.T) {
			p, err := Make(c.node, mustSelect(t, mixes, c.config))
			var got string
			if err != nil {
				var r *Refusal
				if !errors.As(err, &r) {
					t.Fatalf("%v is not a refusal", err)
				}
				got = "refused: " + err.Error()
			} else {
				s, err := p.Counts("", gresgen.Options{})
				if err != nil {
					t.Fatal(err)
				}
				got = s.NodeLine
			}
			if got != c.want && !(strings.HasPrefix(c.want, "refused: ") && strings.HasPrefix(got, c.want)) {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}
