package gresgen

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

func TestShortModel(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA A100 80GB PCIe":  "a100",
		"A100-PCIE-40GB":         "a100",
		"NVIDIA H100 80GB HBM3":  "h100",
		"NVIDIA A100-SXM4-80GB":  "a100",
		"Tesla V100-SXM2-32GB":   "v100",
		"NVIDIA GH200 480GB":     "gh200",
		"NVIDIA H200":            "h200",
		"NVIDIA A30":             "a30",
		"  nvidia B200 ":         "b200",
		"Tesla T4":               "t4",
		"NVIDIA RTX PRO 6000 BW": "rtx",
	} {
		if got := ShortModel(name); got != want {
			t.Errorf("ShortModel(%q) = %q, want %q", name, got, want)
		}
	}
}

func u32(v uint32) *uint32 { return &v }

// node is one whole A100 and one H100 with two MIG devices.
func node() *model.Node {
	return &model.Node{GPUs: []model.GPU{
		{Index: 0, Minor: 0, Name: "NVIDIA A100-SXM4-40GB"},
		{Index: 1, Minor: 1, Name: "NVIDIA H100 80GB HBM3", MigEnabled: true, MigPending: true,
			MigDevices: []model.MigDevice{
				{GPUInstanceID: 5, ComputeInstanceID: 0, Profile: "4g.40gb", GICapMinor: u32(183), CICapMinor: u32(184)},
				{GPUInstanceID: 13, ComputeInstanceID: 0, Profile: "1g.10gb+me", GICapMinor: u32(255), CICapMinor: u32(256)},
			}},
	}}
}

func types(t *testing.T, o Options) []string {
	t.Helper()
	recs, err := Records(node(), o)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return out
}

// The autodetect names follow gpu_nvml.c: whole GPUs keep the full
// underscored name, MIG devices cut it at the first '-'; the brief's
// examples: nvidia_a100_1g.5gb, nvidia_h100_80gb_hbm3_4g.40gb.
func TestTypeStyles(t *testing.T) {
	for style, want := range map[TypeStyle][]string{
		StyleModel:      {"a100", "h100_4g.40gb", "h100_1g.10gb+me"},
		StyleProfile:    {"a100", "4g.40gb", "1g.10gb+me"},
		StyleAutodetect: {"nvidia_a100-sxm4-40gb", "nvidia_h100_80gb_hbm3_4g.40gb", "nvidia_h100_80gb_hbm3_1g.10gb+me"},
	} {
		if diff := cmp.Diff(want, types(t, Options{TypeStyle: style})); diff != "" {
			t.Errorf("style %s (-want +got):\n%s", style, diff)
		}
	}
	n := &model.Node{GPUs: []model.GPU{{Name: "NVIDIA A100-SXM4-40GB", MigEnabled: true,
		MigDevices: []model.MigDevice{{Profile: "1g.5gb", GICapMinor: u32(1), CICapMinor: u32(2)}}}}}
	recs, err := Records(n, Options{TypeStyle: StyleAutodetect})
	if err != nil || recs[0].Type != "nvidia_a100_1g.5gb" {
		t.Errorf("A100-SXM4-40GB 1g.5gb autodetect type = %v, %v; want nvidia_a100_1g.5gb", recs, err)
	}
}

func TestTypeMap(t *testing.T) {
	got := types(t, Options{TypeMap: map[string]string{"nvidia h100 80gb hbm3": "h100sxm", "A100": "ampere"}})
	if diff := cmp.Diff([]string{"ampere", "h100sxm_4g.40gb", "h100sxm_1g.10gb+me"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := Records(node(), Options{TypeMap: map[string]string{"a100": "a:b"}}); err == nil {
		t.Error("a type with ':' was accepted")
	}
}

// A type map name that matches no GPU is most likely a typo: it warns,
// naming what it could have matched; names that match warn of nothing.
// Count gives the same warnings as Generate.
func TestTypeMapTypoWarns(t *testing.T) {
	o := Options{TypeMap: map[string]string{"A100": "ampere", "h1OO": "hopper"}}
	cfg, err := Generate(node(), o)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for _, err := range cfg.Warnings {
		var h advice.Hinter
		if errors.As(err, &h) {
			warnings = append(warnings, err.Error()+" +hint"+h.Hint())
		} else {
			warnings = append(warnings, err.Error())
		}
	}
	counted, err := Count(node(), o)
	if err != nil || fmt.Sprint(counted.Warnings) != fmt.Sprint(cfg.Warnings) {
		t.Errorf("Count: warnings %v, %v; want Generate's %v", counted.Warnings, err, cfg.Warnings)
	}
	want := []string{`type map name "h1OO" matches no GPU of this node (NVML names and short models here: "NVIDIA A100-SXM4-40GB", "a100", "NVIDIA H100 80GB HBM3", "h100") +hint; check its spelling`}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestFiles(t *testing.T) {
	recs, err := Records(node(), Options{NodeName: "n1", FileStyle: FilesCI})
	if err != nil {
		t.Fatal(err)
	}
	want := []slurmconf.GresRecord{
		{NodeName: "n1", Name: "gpu", Type: "a100", File: "/dev/nvidia0"},
		{NodeName: "n1", Name: "gpu", Type: "h100_4g.40gb", File: "/dev/nvidia-caps/nvidia-cap184"},
		{NodeName: "n1", Name: "gpu", Type: "h100_1g.10gb+me", File: "/dev/nvidia-caps/nvidia-cap256"},
	}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	recs, err = Records(node(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap183", "/dev/nvidia-caps/nvidia-cap184"}
	if diff := cmp.Diff(wantFiles, recs[1].MultipleFiles); diff != "" {
		t.Errorf("MultipleFiles (-want +got):\n%s", diff)
	}
}

// The file style follows the Slurm that reads the records: File= of the
// CI cap before 21.08 (20.11 refuses MultipleFiles= records sharing the
// GPU's /dev/nvidiaN), MultipleFiles= from 21.08 or when not known; an
// explicit style the release would refuse is an error, not a config.
func TestFilesFollowSlurm(t *testing.T) {
	v2011, v2108 := slurmconf.Version{Major: 20, Minor: 11, Micro: 4}, slurmconf.Version{Major: 21, Minor: 8, Micro: 0}
	for _, c := range []struct {
		slurm slurmconf.Version
		style FileStyle
		want  string // File= or MultipleFiles= of the first MIG device; or the error
	}{
		{slurmconf.Version{}, "", "MultipleFiles"},
		{slurmconf.Version{}, FilesAuto, "MultipleFiles"},
		{v2011, FilesAuto, "File"},
		{v2011, "", "File"},
		{v2011, FilesCI, "File"},
		{v2011, FilesMultiple, `Slurm 20.11.4 would refuse this gres.conf: two MultipleFiles= records of node n1 (h100_4g.40gb and h100_1g.10gb+me) share /dev/nvidia1, which Slurm allows from 21.08 on`},
		{v2108, FilesAuto, "MultipleFiles"},
		{v2108, FilesCI, "File"},
	} {
		recs, err := Records(node(), Options{NodeName: "n1", FileStyle: c.style, Slurm: c.slurm})
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case len(recs[1].MultipleFiles) > 0:
			got = "MultipleFiles"
		case recs[1].File != "":
			got = "File"
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("Slurm %v, --files %q: %s, want %s", c.slurm, c.style, got, c.want)
		}
	}
	// A GPU with one MIG device shares no file: 20.11 reads MultipleFiles=.
	one := node()
	one.GPUs[1].MigDevices = one.GPUs[1].MigDevices[:1]
	if _, err := Records(one, Options{NodeName: "n1", FileStyle: FilesMultiple, Slurm: v2011}); err != nil {
		t.Errorf("20.11, one MIG device, MultipleFiles=: %v", err)
	}
	if _, err := Records(node(), Options{Flags: "env_uuid", Slurm: slurmconf.Version{Major: 24, Minor: 11, Micro: 5}}); err == nil {
		t.Error("Flags=env_uuid for 24.11: no error")
	}
}

func TestUnresolvedCapMinorsRefused(t *testing.T) {
	n := node()
	n.GPUs[1].MigDevices[0].CICapMinor = nil
	_, err := Records(n, Options{})
	if err == nil || !strings.Contains(err.Error(), "gpu1/gi5/ci0") {
		t.Errorf("err = %v, want one naming gpu1/gi5/ci0", err)
	}
}

func TestWarnings(t *testing.T) {
	n := &model.Node{GPUs: []model.GPU{
		{Index: 0, Minor: 0, Name: "NVIDIA A100-SXM4-40GB", MigPending: true},
		{Index: 1, Minor: 1, Name: "NVIDIA A100-SXM4-80GB", MigEnabled: true, MigPending: true},
		{Index: 2, Minor: 2, Name: "NVIDIA A100-SXM4-80GB"},
	}}
	cfg, err := Generate(n, Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := cfg.Records
	var warnings []string
	var fixes []advice.Fix
	for _, err := range cfg.Warnings {
		warnings = append(warnings, err.Error())
		var a *advice.Error
		if errors.As(err, &a) {
			fixes = append(fixes, a.Fix)
		}
	}
	want := []string{
		"GPU 0 (minor 0): MIG mode is disabled but will be enabled after the next GPU reset; this config describes the current layout",
		"GPU 1 (minor 1): MIG mode is enabled but it has no MIG devices; it offers Slurm nothing",
		`GPUs "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB" all get type "a100"`,
	}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// GPUs that share a type can be told apart with a type map: the
	// command line words the fix.
	if want := []advice.Fix{advice.TypeMap}; !slices.Equal(fixes, want) {
		t.Errorf("fixes %v, want %v (the clash's)", fixes, want)
	}
	if len(recs) != 2 {
		t.Errorf("records = %v, want the whole GPUs 0 and 2", recs)
	}
}

func TestLinksCoresFlags(t *testing.T) {
	n := &model.Node{GPUs: []model.GPU{
		{Index: 0, Minor: 0, Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:07:00.0", Cores: "0-7",
			NVLinks: []model.NVLink{{RemotePCIBusID: "00000000:0f:00.0", Links: 4}, {RemotePCIBusID: "00000000:AA:00.0", Links: 8}}},
		{Index: 1, Minor: 1, Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:0F:00.0", Cores: "8-15",
			NVLinks: []model.NVLink{{RemotePCIBusID: "00000000:07:00.0", Links: 4}}},
	}}
	recs, err := Records(n, Options{Flags: "nvidia_gpu_env"})
	if err != nil {
		t.Fatal(err)
	}
	want := []slurmconf.GresRecord{
		// Bus ids match without case; GPU 1 has no switch links, so GPU 0's
		// links to the switch at AA: do not reach it.
		{Name: "gpu", Type: "a100", File: "/dev/nvidia0", Cores: "0-7", Links: "-1,4", Flags: "nvidia_gpu_env"},
		{Name: "gpu", Type: "a100", File: "/dev/nvidia1", Cores: "8-15", Links: "4,-1", Flags: "nvidia_gpu_env"},
	}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// With a GPU in MIG mode there are no Links= at all (slurmctld would
	// read the positions as GRES the node does not have); a MIG device has
	// its GPU's cores.
	n.GPUs[1].MigEnabled, n.GPUs[1].MigPending = true, true
	n.GPUs[1].MigDevices = []model.MigDevice{{GPUInstanceID: 7, Profile: "1g.10gb", GICapMinor: u32(66), CICapMinor: u32(67)}}
	recs, _ = Records(n, Options{})
	want = []slurmconf.GresRecord{
		{Name: "gpu", Type: "a100", File: "/dev/nvidia0", Cores: "0-7"},
		{Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap66", "/dev/nvidia-caps/nvidia-cap67"}, Cores: "8-15"},
	}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("with a MIG GPU (-want +got):\n%s", diff)
	}
	recs, _ = Records(n, Options{NoCores: true, NoLinks: true})
	if r := recs[0]; r.Cores != "" || r.Links != "" {
		t.Errorf("--no-cores --no-links gave %+v", r)
	}
	if _, err := Records(n, Options{Flags: "nvidia_gpu_env,gpu_magic"}); err == nil || !strings.Contains(err.Error(), `"gpu_magic"`) {
		t.Errorf("unknown flag: err = %v", err)
	}
}

// An empty config is refused, naming the output, unless allowed (the
// refusal's fix): then a warning.
func TestCheckEmpty(t *testing.T) {
	empty := &Config{}
	warning, err := empty.CheckEmpty("gres.conf", false)
	var a *advice.Error
	if want := "no GPU or MIG device found; refusing to write an empty gres.conf"; warning != nil || !errors.As(err, &a) || a.Fix != advice.AllowEmpty || err.Error() != want {
		t.Errorf("refused: %v, warning %v; want %q with advice.AllowEmpty", err, warning, want)
	}
	if warning, err := empty.CheckEmpty("gres.conf", true); err != nil || warning == nil || warning.Error() != "no GPU or MIG device to offer Slurm on this node" {
		t.Errorf("allowed: %v, warning %v", err, warning)
	}
	cfg, err := Generate(node(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if warning, err := cfg.CheckEmpty("gres.conf", false); err != nil || warning != nil {
		t.Errorf("a config with records: %v, warning %v", err, warning)
	}
}
