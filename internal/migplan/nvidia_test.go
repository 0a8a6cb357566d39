package migplan

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/NVIDIA/mig-parted/api/spec/v1"
	"github.com/google/go-cmp/cmp"
	yaml "gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

var update = flag.Bool("update", false, "rewrite testdata/nvidia-configs.golden (then read the diff)")

// nvidiaFiles are NVIDIA's own mig-parted config files, as paths in the
// mig-parted module this project depends on. The container examples are
// Kubernetes manifests that carry the config in a ConfigMap; embedded
// names the ConfigMap and its key.
var nvidiaFiles = []struct {
	path     string
	embedded [2]string // ConfigMap name and key; empty for a plain config file
}{
	{path: "deployments/systemd/config-default.yaml"},
	{path: "examples/config.yaml"},
	{path: "examples/dgx-station-80gb-config.yaml"},
	{path: "deployments/container/nvidia-mig-manager-example.yaml", embedded: [2]string{"mig-parted-config", "config.yaml"}},
	{path: "deployments/container/nvidia-mig-manager-example-hopper.yaml", embedded: [2]string{"mig-parted-config", "config.yaml"}},
}

// migPartedDir is the mig-parted module's directory in the module cache,
// which go mod download fills (CI runs it). The repository carries none
// of NVIDIA's files: the module is the copy of record, at the version
// go.mod pins.
func migPartedDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/NVIDIA/mig-parted").Output()
	dir := strings.TrimSpace(string(out))
	if err == nil && dir != "" {
		if _, err = os.Stat(dir); err == nil {
			return dir
		}
	}
	why := fmt.Sprintf("the github.com/NVIDIA/mig-parted module is not in the module cache (go list -m: %q, %v); run go mod download", dir, err)
	if testtools.InCI() {
		t.Fatalf("cannot run under CI=%s: %s", os.Getenv("CI"), why)
	}
	t.Skip(why)
	return ""
}

// readNVIDIAConfig reads one of nvidiaFiles. A config embedded in a
// ConfigMap is read with as many empty lines before it as the manifest
// has above it, so that the lines refusals name are the manifest's.
func readNVIDIAConfig(t *testing.T, dir, path string, embedded [2]string) *Config {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	if embedded[0] != "" {
		data = configMapValue(t, path, data, embedded[0], embedded[1])
	}
	c, err := ParseConfig(path, data)
	if err != nil {
		t.Fatal(err)
	}
	// Every config the file holds as mig-parted reads it is one plan
	// knows, so that "every config" below is every config.
	var spec v1.Spec
	if err := sigsyaml.Unmarshal(data, &spec); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var want []string
	for name := range spec.MigConfigs {
		want = append(want, name)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, c.Names()); diff != "" {
		t.Fatalf("%s: configs (-mig-parted +plan):\n%s", path, diff)
	}
	return c
}

// configMapValue is the value of key in the data of the ConfigMap called
// name among the YAML documents of manifest, preceded by the lines above
// it in the manifest.
func configMapValue(t *testing.T, path string, manifest []byte, name, key string) []byte {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s: no ConfigMap %s with %s: %v", path, name, key, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		top := doc.Content[0]
		if field(field(top, "metadata"), "name").Value != name || field(top, "kind").Value != "ConfigMap" {
			continue
		}
		value := field(field(top, "data"), key)
		if value.Kind != yaml.ScalarNode || value.Style != yaml.LiteralStyle {
			t.Fatalf("%s:%d: %s of ConfigMap %s is not a literal block", path, value.Line, key, name)
		}
		// A literal block's text starts on the line after its "|".
		return []byte(strings.Repeat("\n", value.Line) + value.Value)
	}
}

// field is a mapping's value for key, or an empty node.
func field(m *yaml.Node, key string) *yaml.Node {
	if m != nil && m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
	}
	return &yaml.Node{}
}

// realNode is a node of n GPUs, each the GPU of a real captured snapshot
// of schema 2 (its name, PCI id and profile table as NVML gave them), with
// MIG off as it was captured.
func realNode(t *testing.T, capture string, n int) *model.Node {
	t.Helper()
	one, err := snapshot.Load(fixture.Path(t, "real/"+capture+"/snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(one.GPUs) != 1 || one.GPUs[0].Profiles == nil || one.GPUs[0].PCIDeviceID == "" {
		t.Fatalf("%s: want one GPU with its PCI id and MIG profiles", capture)
	}
	node := *one
	node.GPUs = nil
	for i := range n {
		g := one.GPUs[0]
		g.Index, g.Minor = i, i
		g.UUID = g.UUID[:len(g.UUID)-1] + strconv.Itoa(i)
		g.PCIBusID = fmt.Sprintf("00000000:%02X:00.0", 0x18+i)
		node.GPUs = append(node.GPUs, g)
	}
	return &node
}

// TestNVIDIAConfigs evaluates every config of NVIDIA's own mig-parted
// files on nodes of 1 and 4 real H100s and H200s (their captured profile
// tables) and holds the result to testdata/nvidia-configs.golden: for each
// file, config, GPU model and count, the node's Gres= and what each GPU
// becomes, or the refusal.
func TestNVIDIAConfigs(t *testing.T) {
	dir := migPartedDir(t)
	nodes := []struct {
		label string
		node  *model.Node
	}{
		{"H100x1", realNode(t, "h100-snapshot-v2", 1)},
		{"H100x4", realNode(t, "h100-snapshot-v2", 4)},
		{"H200x1", realNode(t, "h200-snapshot-v2", 1)},
		{"H200x4", realNode(t, "h200-snapshot-v2", 4)},
	}
	checkEveryFile(t, dir)
	var out strings.Builder
	fmt.Fprintf(&out, "# Every config of NVIDIA's mig-parted files (module %s) on nodes of\n", filepath.Base(dir))
	fmt.Fprintf(&out, "# 1 and 4 real H100s and H200s, MIG off: the Gres= the node will have and\n")
	fmt.Fprintf(&out, "# each GPU (kept: no entry matches it; whole: MIG off; none: MIG on with\n")
	fmt.Fprintf(&out, "# no MIG device), or the refusal. TestNVIDIAConfigs writes it (-update).\n")
	for _, f := range nvidiaFiles {
		c := readNVIDIAConfig(t, dir, f.path, f.embedded)
		fmt.Fprintf(&out, "\n== %s", f.path)
		if f.embedded[0] != "" {
			fmt.Fprintf(&out, " (ConfigMap %s, %s)", f.embedded[0], f.embedded[1])
		}
		fmt.Fprintf(&out, ": %d configs\n", len(c.Names()))
		for _, name := range c.Names() {
			sel, err := c.Select(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				fmt.Fprintf(&out, "%s %s: %s\n", name, n.label, evaluate(t, n.node, sel))
			}
		}
	}
	checkGolden(t, "testdata/nvidia-configs.golden", out.String())
}

// checkEveryFile fails when the module holds a mig-parted config that
// nvidiaFiles leaves out (a newer mig-parted may add examples): every
// YAML file outside vendor/ that declares mig-configs is one of them.
func checkEveryFile(t *testing.T, dir string) {
	t.Helper()
	known := map[string]bool{}
	for _, f := range nvidiaFiles {
		known[f.path] = true
	}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (rel == "vendor" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(rel, ".yaml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte("mig-configs:")) && !known[rel] {
			t.Errorf("%s in the mig-parted module declares mig-configs, and nvidiaFiles leaves it out", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// evaluate is one line of the golden: the plan of sel on node, or its
// refusal. It also holds what a line cannot show: a refusal is a
// *Refusal, and each GPU left with MIG on and no MIG device is warned of.
func evaluate(t *testing.T, node *model.Node, sel *Selected) string {
	t.Helper()
	var warns int
	p, err := Make(node, sel)
	if p != nil {
		warns += len(p.Warnings)
	}
	if err != nil {
		var r *Refusal
		if !errors.As(err, &r) {
			t.Errorf("%s: %v is not a refusal naming config and GPU", sel.Name, err)
		}
		return "refused: " + err.Error()
	}
	s, err := p.Counts("", gresgen.Options{})
	if err != nil {
		t.Fatalf("%s: %v", sel.Name, err)
	}
	none := 0
	for _, g := range p.GPUs {
		if g.MigEnabled && len(g.Devices) == 0 {
			none++
		}
	}
	if warns != none {
		t.Errorf("%s: %d warnings for %d GPUs with MIG on and no MIG device", sel.Name, warns, none)
	}
	line := s.NodeLine
	if line == "" {
		line = "(no Gres)"
	}
	return line + "  " + describeGPUs(p)
}

// describeGPUs says what each GPU of a plan becomes and by which entry,
// runs of GPUs alike as one: "0-3 entry 4: 2x1g.10gb 2g.20gb 3g.40gb".
func describeGPUs(p *Plan) string {
	var words []string
	first, last, prev := 0, 0, ""
	flush := func() {
		if prev == "" {
			return
		}
		at := strconv.Itoa(first)
		if last > first {
			at += "-" + strconv.Itoa(last)
		}
		words = append(words, "["+at+prev+"]")
	}
	for _, g := range p.GPUs {
		var w string
		if g.Entry != nil {
			w = " entry " + strconv.Itoa(g.Entry.Number)
		}
		switch {
		case g.Entry == nil:
			w += ": kept"
		case !g.MigEnabled:
			w += ": whole"
		case len(g.Devices) == 0:
			w += ": none"
		default:
			w += ":"
			for _, d := range g.Devices {
				w += " "
				if d.Count > 1 {
					w += strconv.Itoa(d.Count) + "x"
				}
				w += d.Profile
			}
		}
		if w == prev && g.Index == last+1 {
			last = g.Index
			continue
		}
		flush()
		first, last, prev = g.Index, g.Index, w
	}
	flush()
	return strings.Join(words, " ")
}

// checkGolden compares got with the golden file, or rewrites it under
// -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with go test -run %s -update, then read it)", err, t.Name())
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
