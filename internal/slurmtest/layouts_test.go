package slurmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/slurm-mig/slurm-mig/capmap"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/nodeload"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
)

// A layout is one node the golden tests describe, as a snapshot the
// binary reads with --from, and its model with cap minors resolved.
type layout struct {
	name     string // "mixed.txtar/mixed.json"
	snapshot string
	root     string // --root: where mig-minors lives
	node     *model.Node
}

// devices counts what the node offers Slurm: whole GPUs and MIG devices.
func (l *layout) devices() int {
	n := 0
	for _, g := range l.node.GPUs {
		if g.MigEnabled {
			n += len(g.MigDevices)
		} else {
			n++
		}
	}
	return n
}

// loadLayouts gathers every node layout of the golden tests: each nvmlfake
// fixture embedded in testdata/script/*.txtar that describes GPUs without
// injected faults, discovered through the fake NVML and saved as a
// snapshot, plus the demo node and the nodes captured from real hosts. Layouts offering Slurm no device are left
// out: gen rightly refuses to write an empty gres.conf.
func loadLayouts(t *testing.T, host string) []layout {
	t.Helper()
	root := t.TempDir() // --root holding the real driver-580 mig-minors
	caps := filepath.Join(root, "proc/driver/nvidia-caps")
	if err := os.MkdirAll(caps, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(caps, "mig-minors"), fixture.Read(t, fixture.RealMigMinors), 0o644); err != nil {
		t.Fatal(err)
	}

	var layouts []layout
	for _, script := range fixture.Glob(t, "script/*.txtar") {
		ar, err := txtar.ParseFile(script)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			fixture, ok := nodeFixture(f)
			if !ok {
				continue
			}
			name := filepath.Base(script) + "/" + f.Name
			l, err := fixtureLayout(t, name, fixture, host, root)
			if err != nil {
				// A fixture made for an error case: no node to render.
				t.Logf("%s: left out: %v", name, err)
				continue
			}
			layouts = append(layouts, l)
		}
	}
	layouts = append(layouts, demoLayout(t))
	layouts = append(layouts, capturedLayouts(t)...)

	var offered []layout
	for _, l := range layouts {
		if l.devices() == 0 {
			t.Logf("%s: no device for Slurm, left out", l.name)
			continue
		}
		offered = append(offered, l)
	}
	return offered
}

// nodeFixture decodes a txtar file as an nvmlfake fixture of a working
// node: valid JSON in that format, with GPUs and no injected NVML error.
// Other files (expected output, snapshots, broken fixtures) are not nodes.
func nodeFixture(f txtar.File) (*nvmlfake.Fixture, bool) {
	if !strings.HasSuffix(f.Name, ".json") {
		return nil, false
	}
	var fx nvmlfake.Fixture
	dec := json.NewDecoder(bytes.NewReader(f.Data))
	dec.DisallowUnknownFields()
	if dec.Decode(&fx) != nil || len(fx.GPUs) == 0 || fx.InitError != "" || len(fx.Errors) > 0 {
		return nil, false
	}
	for _, g := range fx.GPUs {
		if len(g.Errors) > 0 {
			return nil, false
		}
		for _, m := range g.MigDevices {
			if len(m.Errors) > 0 {
				return nil, false
			}
		}
	}
	return &fx, true
}

// fixtureLayout discovers the fixture's node through the fake NVML, as
// `slurm-mig snapshot` would on that node, and saves the snapshot. It
// fails where that discovery does.
func fixtureLayout(t *testing.T, name string, fx *nvmlfake.Fixture, host, root string) (layout, error) {
	t.Helper()
	lib, err := nvmlfake.New(fx)
	if err != nil {
		return layout{}, err
	}
	loader := nodeload.Loader{
		Host:     nodeload.NewHost(hostfs.FS(root)),
		NVML:     nodeload.NewNVML(func() nvml.Interface { return lib }),
		Hostname: func() (string, error) { return host, nil },
		Timeout:  time.Minute,
	}
	node, _, err := loader.Load("")
	if err != nil {
		return layout{}, err
	}
	var snap bytes.Buffer
	if err := snapshot.Write(&snap, node); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snapshot.json")
	if err := os.WriteFile(path, snap.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return layout{name: name, snapshot: path, root: root, node: node}, nil
}

// demoLayout is the node of `make demo`: a snapshot without cap minors,
// which come from the mig-minors under its root.
func demoLayout(t *testing.T) layout {
	t.Helper()
	return snapshotLayout(t, "demo/snapshot.json", fixture.Path(t, "demo/snapshot.json"), fixture.Path(t, "demo/root"))
}

// capturedLayouts are the nodes captured from real hosts
// (testdata/real/*: scripts/capture-node.sh).
func capturedLayouts(t *testing.T) []layout {
	t.Helper()
	var layouts []layout
	for _, snap := range fixture.Glob(t, "real/*/snapshot.json") {
		dir := filepath.Dir(snap)
		layouts = append(layouts, snapshotLayout(t, "real/"+filepath.Base(dir), snap, filepath.Join(dir, "root")))
	}
	return layouts
}

// snapshotLayout is a node saved as a snapshot; cap minors it lacks come
// from the mig-minors under root.
func snapshotLayout(t *testing.T, name, path, root string) layout {
	t.Helper()
	l := layout{name: name, snapshot: path, root: root}
	var err error
	if l.node, err = snapshot.Load(l.snapshot); err != nil {
		t.Fatal(err)
	}
	if err := capmap.Resolve(l.node, func() (*capmap.Map, error) { return capmap.Load(l.root) }); err != nil {
		t.Fatal(err)
	}
	return l
}

// A form is one way of rendering a node: the flags that change what Slurm
// has to parse.
type form struct {
	typeStyle string // --type-style
	files     string // --files
	compact   bool   // --compact: File= ranges
}

func (f form) String() string {
	s := f.typeStyle + "," + f.files
	if f.compact {
		s += ",compact"
	}
	return s
}

// flags are the flags of gen; node takes them less --compact, which
// changes no count.
func (f form) flags(command string) []string {
	flags := []string{"--type-style", f.typeStyle, "--files", f.files}
	if f.compact && command == "gen" {
		flags = append(flags, "--compact")
	}
	return flags
}

// forms is every --type-style, --files and --compact combination.
func forms() []form {
	var all []form
	for _, style := range []string{"model", "profile", "autodetect"} {
		for _, files := range []string{"multiple", "ci"} {
			for _, compact := range []bool{false, true} {
				all = append(all, form{style, files, compact})
			}
		}
	}
	return all
}

// render runs the built binary on the layout's snapshot: gen for
// gres.conf and node for the slurm.conf line, both for NodeName=host.
func render(t *testing.T, l layout, f form, host string) (gresConf, nodeLine string) {
	t.Helper()
	args := func(command string) []string {
		return append([]string{"--root", l.root, command, "--from", l.snapshot, "--node-name", host}, f.flags(command)...)
	}
	gresConf = runSlurmMig(t, args("gen")...)
	nodeLine = strings.TrimSuffix(runSlurmMig(t, args("node")...), "\n")
	if strings.Contains(nodeLine, "\n") || !strings.HasPrefix(nodeLine, "NodeName="+host+" Gres=") {
		t.Fatalf("slurm-mig node printed %q, want one line NodeName=%s Gres=...", nodeLine, host)
	}
	return gresConf, nodeLine
}

// runSlurmMigCode runs the built binary and returns its exit code and
// output.
func runSlurmMigCode(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(slurmMig, args...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), out.String(), errs.String()
	}
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return 0, out.String(), errs.String()
}

// runSlurmMig runs the built binary and returns its stdout.
func runSlurmMig(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(slurmMig, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.Bytes())
	}
	return string(out)
}

// forThisMachine turns a generated gres.conf into one this machine can
// hold: its /dev/ paths moved under dir, where makeDevices made the
// device files, and Cores= left out, since it names cores of the GPU node
// and slurmd checks them against the CPUs of the machine it runs on.
func forThisMachine(gresConf, dir string) string {
	return coresWord.ReplaceAllString(underDev(gresConf, dir), "")
}

var coresWord = regexp.MustCompile(`(?i)[ \t]+Cores=\S*`)

// underDev moves /dev/ paths under dir.
func underDev(s, dir string) string {
	return strings.ReplaceAll(s, "/dev/", dir+"/dev/")
}

// makeDevices makes, under dir, the character devices a real node with
// this layout has: /dev/nvidiaN (major 195, minor N) for every GPU and
// /dev/nvidia-caps/nvidia-capM (major 241, minor M) for every GI and CI
// cap. slurmd rejects anything but a device file, and a file the node
// does not have makes it wait and die, so a wrong path cannot pass.
func makeDevices(t *testing.T, dir string, node *model.Node) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "dev/nvidia-caps"), 0o755); err != nil {
		t.Fatal(err)
	}
	mknod := func(path string, major, minor uint32) {
		err := syscall.Mknod(filepath.Join(dir, path), syscall.S_IFCHR|0o666, int(mkdev(major, minor)))
		if err != nil && !os.IsExist(err) { // CIs of one GI share its cap
			t.Fatalf("mknod: %v", err)
		}
	}
	for _, g := range node.GPUs {
		mknod(g.DevicePath(), 195, uint32(g.Minor))
		for _, m := range g.MigDevices {
			mknod(model.CapPath(*m.GICapMinor), 241, *m.GICapMinor)
			mknod(model.CapPath(*m.CICapMinor), 241, *m.CICapMinor)
		}
	}
}

// mkdev is Linux's makedev(3): 12 bits of major and 20 of minor, split
// the way the kernel's dev_t encoding wants them.
func mkdev(major, minor uint32) uint64 {
	return uint64(minor&0xff) | uint64(major&0xfff)<<8 | uint64(minor&^0xff)<<12 | uint64(major&^0xfff)<<32
}

// shortHostname is `hostname -s`: the NodeName slurmd looks for.
func shortHostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	h, _, _ = strings.Cut(h, ".")
	return h
}

// deviceUnits lists the node's devices as Slurm should count them, each
// as its device files under dir, straight from the model (brief section 3):
// a whole GPU is /dev/nvidiaN; a MIG device is /dev/nvidiaN with its GI
// and CI caps, or with --files ci its CI cap alone.
func deviceUnits(node *model.Node, files, dir string) []string {
	var units []string
	for _, g := range node.GPUs {
		gpu := dir + g.DevicePath()
		if !g.MigEnabled {
			units = append(units, gpu)
			continue
		}
		for _, m := range g.MigDevices {
			ci := dir + model.CapPath(*m.CICapMinor)
			if files == "ci" {
				units = append(units, ci)
			} else {
				units = append(units, fmt.Sprintf("%s,%s,%s", gpu, dir+model.CapPath(*m.GICapMinor), ci))
			}
		}
	}
	return units
}
