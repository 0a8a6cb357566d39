package migplan

import (
	"errors"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// ours is a config file of our own in mig-parted's v1 form.
const ours = `version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false

  all-enabled:
    - devices: all
      mig-enabled: true
      mig-devices: {}

  all-3g:
    - device-filter: "0x233010DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
    - device-filter: ["0x233510DE", "0x20B010DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "3g.71gb": 2

  first-two:
    - devices: [0, 1]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7

  too-many:
    - devices: all
      mig-enabled: true
      mig-devices:
        "4g.40gb": 1
        "2g.20gb": 1
        "1g.10gb": 2

  mixed-modes:
    - devices: all
      mig-enabled: true
      mig-devices:
        "7g.80gb": 1
    - devices: [1]
      mig-enabled: false
`

func node(gpus ...model.GPU) *model.Node {
	return &model.Node{SchemaVersion: 1, Hostname: "n1", GPUs: gpus}
}

func mustSelect(t *testing.T, text, name string) *Selected {
	t.Helper()
	c, err := ParseConfig("mig.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	sel, err := c.Select(name)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// layout is a plan's GPUs in a few words: "0:7g.80gb=1 1:whole 2:kept".
func layout(p *Plan) string {
	var words []string
	for _, g := range p.GPUs {
		w := strings.TrimSpace(string(rune('0' + g.Index)))
		switch {
		case g.Entry == nil:
			w += ":kept"
		case !g.MigEnabled:
			w += ":whole"
		case len(g.Devices) == 0:
			w += ":none"
		}
		for _, d := range g.Devices {
			w += ":" + d.Profile + "=" + strings.Repeat("I", d.Count)
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

func TestMatching(t *testing.T) {
	mig := h100(2)
	mig.MigEnabled, mig.MigPending = true, true
	mig.MigDevices = []model.MigDevice{{Profile: "4g.40gb"}, {Profile: "3g.40gb"}}
	noMIG := model.GPU{Index: 3, Name: "NVIDIA L40S", PCIDeviceID: "0x26B910DE"}
	for _, c := range []struct {
		config string
		node   *model.Node
		want   string
		warns  int
	}{
		{"all-disabled", node(h100(0), mig, noMIG), "0:whole 2:whole 3:kept", 0},
		{"all-enabled", node(h100(0), h200(1)), "0:none 1:none", 2},
		// device-filter as a string and as a list; the GPU neither
		// filter names keeps its layout.
		{"all-3g", node(h100(0), h200(1), mig, noMIG), "0:3g.40gb=II 1:3g.71gb=II 2:3g.40gb=II 3:kept", 0},
		// devices as a list: GPU 2 keeps its 4g and 3g.
		{"first-two", node(h100(0), h100(1), mig), "0:1g.10gb=IIIIIII 1:1g.10gb=IIIIIII 2:kept:4g.40gb=I:3g.40gb=I", 0},
	} {
		t.Run(c.config, func(t *testing.T) {
			var warns []error
			p, err := Make(c.node, mustSelect(t, ours, c.config))
			if p != nil {
				warns = append(warns, p.Warnings...)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := layout(p); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if len(warns) != c.warns {
				t.Errorf("warnings %v, want %d", warns, c.warns)
			}
			for i, g := range p.Node.GPUs {
				if g.MigEnabled != p.GPUs[i].MigEnabled || g.MigEnabled != g.MigPending {
					t.Errorf("GPU %d: model's MIG mode %v/%v, plan's %v", g.Index, g.MigEnabled, g.MigPending, p.GPUs[i].MigEnabled)
				}
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		config string
		node   *model.Node
		want   string
		hint   string // advice.Hinter's, apart from the message
	}{
		{"too-many", node(h100(0)), `mig.yaml:31: config "too-many": GPU 0 (NVIDIA H100 80GB HBM3): 4g.40gb + 2g.20gb + 2x1g.10gb: no set of placements`, ""},
		{"first-two", node(h200(0)), `mig.yaml:25: config "first-two": GPU 0 (NVIDIA H200): 1g.10gb: this GPU has no such profile`, ""},
		{"first-two", node(h100(0), model.GPU{Index: 1, Name: "NVIDIA L40S", PCIDeviceID: "0x26B910DE"}), `GPU 1 (NVIDIA L40S): it has no MIG`, ""},
		{"mixed-modes", node(h100(0), h100(1)), `mig.yaml:43: config "mixed-modes": GPU 1 (NVIDIA H100 80GB HBM3): entries 1 and 2 both match it`, ""},
		// A schema 1 snapshot knows neither the PCI id nor the profiles.
		{"all-3g", node(model.GPU{Index: 0, Name: "NVIDIA H100 80GB HBM3"}), "its PCI device id is unknown", "; take a new snapshot"},
		{"all-enabled", node(model.GPU{Index: 0, Name: "NVIDIA H100 80GB HBM3"}), "its MIG profiles are unknown", "; take a new snapshot"},
	} {
		t.Run(c.config, func(t *testing.T) {
			_, err := Make(c.node, mustSelect(t, ours, c.config))
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("got %v, want a refusal", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
			var h advice.Hinter
			if c.hint != "" && (!errors.As(err, &h) || h.Hint() != c.hint || strings.Contains(err.Error(), c.hint)) {
				t.Errorf("%v: want the hint %q apart from the message", err, c.hint)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"syntax", "version: v1\nmig-configs:\n\ta: []\n", "mig.yaml:3: found character that cannot start any token"},
		{"version", "version: v2\nmig-configs: {}\n", `mig.yaml:1: unknown version "v2"`},
		{"top field", "version: v1\nmig-config:\n  a: []\n", `mig.yaml:2: unexpected field "mig-config"`},
		{"entry field", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      mig-device: {}\n", `mig.yaml:6: config "a": entry 1: unexpected field "mig-device"`},
		{"devices", "version: v1\nmig-configs:\n  a:\n    - devices: some\n      mig-enabled: false\n", `mig.yaml:4: config "a": entry 1: invalid string input for 'devices': some`},
		{"no devices", "version: v1\nmig-configs:\n  a:\n    - mig-enabled: false\n", `mig.yaml:4: config "a": entry 1: missing required field: devices`},
		{"profile", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"3g40gb\": 1}\n", `mig.yaml:4: config "a": entry 1: error validating values in 'mig-devices' field`},
		{"negative count", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": -1}\n", `mig.yaml:4: config "a": entry 1: error validating values in 'mig-devices' field: invalid count for '-1'`},
		{"devices with MIG off", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      mig-devices: {\"3g.40gb\": 1}\n", `mig.yaml:4: config "a": entry 1: MIG devices included when 'mig-enabled' is false`},
		{"empty config", "version: v1\nmig-configs:\n  a: []\n", `mig.yaml:3: config "a": needs at least one entry`},
		{"empty", "", "mig.yaml:1: empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig("mig.yaml", []byte(c.text))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.HasSuffix(err.Error(), "<nil>") {
				t.Errorf("got  %v\nwant %s...", err, c.want)
			}
		})
	}
	c, err := ParseConfig("mig.yaml", []byte(ours))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("all-1g"); !errors.Is(err, ErrUnknownConfig) || !strings.HasPrefix(err.Error(), `mig.yaml: no such config "all-1g" (it has all-3g, all-disabled`) {
		t.Errorf("unknown config: %v", err)
	}
}
