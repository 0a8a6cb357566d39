package slurmconf

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

func TestScanLines(t *testing.T) {
	data := "a=1 # comment\r\n\n  b=2 \\\n c=3\\\\\nd=\\#4 # x\ne=5 \\"
	var got []string
	var nums []int
	scanLines(data, func(l *logicalLine) bool {
		got = append(got, strings.TrimSpace(unescape(l.text)))
		nums = append(nums, l.num)
		return true
	})
	want := []string{"a=1", "b=2  c=3\\", "d=#4", "e=5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 3, 5, 6}, nums); diff != "" {
		t.Errorf("line numbers (-want +got):\n%s", diff)
	}
}

func TestWords(t *testing.T) {
	l := logicalLine{text: `NodeName=n1 Type="a b" File=/dev/x Flags=`, num: 7}
	ws, err := words(&l, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]string
	for _, w := range ws {
		got = append(got, [2]string{w.key, w.value})
		if w.value != "" && l.text[w.valStart:w.valEnd] != w.value {
			t.Errorf("offsets of %s point at %q", w.key, l.text[w.valStart:w.valEnd])
		}
	}
	want := [][2]string{{"NodeName", "n1"}, {"Type", "a b"}, {"File", "/dev/x"}, {"Flags", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{`Type="a`, `Type=a"b"`, `Type="a"b`} {
		if _, err := words(&logicalLine{text: bad, num: 1}, nil); err == nil {
			t.Errorf("words(%q) accepted", bad)
		}
	}
}

func TestReadGresConf(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"gres.conf": "AutoDetect=off\nNodeName=n[1-2] Name=gpu Type=a100 Files=/dev/nvidia[0-1] Count=2 Cores=0-7\ninclude sub/more.conf\n",
		"sub/more.conf": "Name=gpu Type=x MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap[1-2] Flags=nvidia_gpu_env\n" +
			"NodeName=n3 Name=mps Count=200\n",
	})
	conf, err := ReadGresConf(filepath.Join(dir, "gres.conf"), "n2")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "gres.conf") + ":1"; conf.AutoDetect != "off" || conf.AutoDetectPos != want {
		t.Errorf("AutoDetect = %q at %q, want off at %s", conf.AutoDetect, conf.AutoDetectPos, want)
	}
	recs := conf.GresRecords()
	want := []GresRecord{
		{NodeName: "n[1-2]", Name: "gpu", Type: "a100", File: "/dev/nvidia[0-1]", Count: 2, Cores: "0-7"},
		{Name: "gpu", Type: "x", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia-caps/nvidia-cap2"}, Flags: "nvidia_gpu_env"},
	}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	units, err := SplitUnits(recs)
	if err != nil || len(units) != 3 {
		t.Errorf("units = %v, %v; want 3", units, err)
	}
	// Units read from the file carry the file:line of their record; the
	// two units of File=/dev/nvidia[0-1] share their line.
	units, err = conf.Units()
	if err != nil {
		t.Fatal(err)
	}
	var pos []string
	for _, u := range units {
		pos = append(pos, strings.TrimPrefix(u.Pos, dir+"/"))
	}
	if diff := cmp.Diff([]string{"gres.conf:2", "gres.conf:2", "sub/more.conf:1"}, pos); diff != "" {
		t.Errorf("unit positions (-want +got):\n%s", diff)
	}
	// mps and shard spread their Count over the devices File= names, as
	// slurmd -G takes them.
	shared := fixture.Tree(t, map[string]string{"gres.conf": "Name=gpu File=/dev/nvidia[0-1]\n" +
		"Name=mps Count=200 File=/dev/nvidia[0-1]\nName=shard Count=8 File=/dev/nvidia0\n"})
	sconf, err := ReadGresConf(filepath.Join(shared, "gres.conf"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	counts, err := CountGres(sconf.GresRecords())
	if got := GresList(counts); err != nil || got != "gpu:2,mps:200,shard:8" {
		t.Errorf("sharing GRES count %q, %v; want gpu:2,mps:200,shard:8", got, err)
	}
	conf3, _ := ReadGresConf(filepath.Join(dir, "gres.conf"), "n3")
	if u, _ := SplitUnits(conf3.GresRecords()); len(u) != 201 {
		t.Errorf("n3 has %d units, want 200 mps + 1 gpu", len(u))
	}
}

// The AutoDetect= in force is the one slurmd -G 22.05.8 acts on (every
// case but the other node's was run through it by hand): the node's own
// trumps the global one in either order; one on a record line without
// NodeName= is ignored.
func TestAutoDetectInForce(t *testing.T) {
	for conf, want := range map[string]string{
		"AutoDetect=nvml\nNodeName=n1 AutoDetect=off\nName=gpu File=/dev/nvidia0\n": "off:2",
		"NodeName=n1 AutoDetect=off\nAutoDetect=nvml\nName=gpu File=/dev/nvidia0\n": "off:1",
		"AutoDetect=nvml\nName=gpu File=/dev/nvidia0\n":                             "nvml:1",
		"Name=gpu File=/dev/nvidia0 AutoDetect=nvml\n":                              "",
		"AutoDetect=off\nNodeName=n1 Name=gpu File=/dev/nvidia0 AutoDetect=nvml\n":  "nvml:2",
		"NodeName=n2 AutoDetect=nvml\nName=gpu File=/dev/nvidia0\n":                 "",
	} {
		dir := fixture.Tree(t, map[string]string{"gres.conf": conf})
		c, err := ReadGresConf(filepath.Join(dir, "gres.conf"), "n1")
		if err != nil {
			t.Fatal(err)
		}
		line := strings.TrimPrefix(c.AutoDetectPos, filepath.Join(dir, "gres.conf"))
		if got := c.AutoDetect + line; got != want {
			t.Errorf("%q: AutoDetect %q, want %q", conf, got, want)
		}
	}
}

func TestReadGresConfErrors(t *testing.T) {
	for data, want := range map[string]string{
		"Name=gpu File=/dev/nvidia[0-1] Count=3":           ":1: Count=3 but File= names 2 files",
		"Name=gpu MultipleFiles=/dev/nvidia0":              ":1: MultipleFiles= needs at least two files",
		"Name=gpu File=/dev/a MultipleFiles=/dev/b,/dev/c": ":1: File= and MultipleFiles= exclude each other",
		"Type=a100 File=/dev/nvidia0":                      ":1: a line starts with Name=, NodeName= or AutoDetect=, not Type=",
		"AutoDetect=off Name=gpu File=/dev/nvidia0":        ":1: AutoDetect= first on a line stands alone",
		"Name=gpu Foo=1":                                   `:1: unknown gres.conf keyword "Foo"`,
		"Name=gpu File=/dev/nvidia[0-":                     ":1: File=: hostlist",
		"Name=gpu Bogus":                                   `:1: "Bogus" is not a key=value pair`,
		"Name=gpu Count=lots":                              ":1: Count=lots: not a count",
		"Name=gpu Type=\"a100 File=/dev/nvidia0":           ":1: unterminated '\"'",
		"Name=gpu File=/dev/nvidia0\x00":                   ": binary data (NUL byte); not a Slurm config",
	} {
		dir := fixture.Tree(t, map[string]string{"gres.conf": data})
		_, err := ReadGresConf(filepath.Join(dir, "gres.conf"), "n1")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to contain %q", data, err, want)
		}
	}
}

// Lines slurmd 22.05 logs and skips (or reads with the last value) are
// problems of the node, not errors: the other lines are read on.
func TestReadGresConfSkipsWhatSlurmdSkips(t *testing.T) {
	for data, want := range map[string]string{
		"NodeName=n1 Type=a100 File=/dev/nvidia0\nName=gpu File=/dev/nvidia1":            ":1: error: record without Name=",
		"NodeName=[localmachine] Name=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia1": ":1: error: NodeName=[localmachine]:",
		"\nName=gpu Type=a Type=b File=/dev/nvidia1":                                     ":2: error: Type= given twice",
	} {
		dir := fixture.Tree(t, map[string]string{"gres.conf": data})
		c, err := ReadGresConf(filepath.Join(dir, "gres.conf"), "n1")
		if err != nil {
			t.Errorf("%q: %v, want it read on", data, err)
			continue
		}
		if len(c.Problems) != 1 || !strings.Contains(c.Problems[0].String(), want) {
			t.Errorf("%q: problems %v, want one containing %q", data, c.Problems, want)
		}
		if len(c.Records) != 1 || c.Records[0].File != "/dev/nvidia1" {
			t.Errorf("%q: records %v, want the one of /dev/nvidia1", data, c.Records)
		}
	}
}

func TestParseGresList(t *testing.T) {
	for s, want := range map[string][]GresCount{
		"":       nil,
		"(null)": nil,
		"gpu:a100:2(S:0-1),gpu:a100_1g.10gb:14(S:0)": {{"gpu", "a100", 2}, {"gpu", "a100_1g.10gb", 14}},
		"gpu:2,gpu:a100:1":                           {{"gpu", "", 2}, {"gpu", "a100", 1}},
		"gpu":                                        {{"gpu", "", 1}},
		"mps:no_consume:1k":                          {{"mps", "", 1024}},
		"gpu:A100:1,gpu:a100:2":                      {{"gpu", "A100", 3}},
		"gpu:h100:8(S:0-1),shard:h100:16(S:0)":       {{"gpu", "h100", 8}, {"shard", "h100", 16}},
	} {
		got, err := ParseGresList(s)
		if err != nil {
			t.Errorf("ParseGresList(%q): %v", s, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseGresList(%q) (-want +got):\n%s", s, diff)
		}
	}
	if _, err := ParseGresList("gpu:a:b:3"); err == nil {
		t.Error("gpu:a:b:3 accepted")
	}
}

// noDefault stands for a slurm.conf whose NodeName=DEFAULT sets no Gres=.
func noDefault() (string, error) { return "", nil }

func TestUpdateNodeGres(t *testing.T) {
	in := "NodeName=DEFAULT Gres=gpu:1\nNodeName=\"n1\" CPUs=4\nNodeName=n2 Gres=gpu:2 # keep\n"
	got, err := UpdateNodeGres(in, "slurm.conf", "n1", "gpu:a100:3", func() (string, error) { return "gpu:1", nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := "NodeName=DEFAULT Gres=gpu:1\nNodeName=\"n1\" Gres=gpu:a100:3 CPUs=4\nNodeName=n2 Gres=gpu:2 # keep\n"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	got, err = UpdateNodeGres(in, "slurm.conf", "n2", "gpu:h100:8", noDefault)
	if err != nil {
		t.Fatal(err)
	}
	if want := "NodeName=DEFAULT Gres=gpu:1\nNodeName=\"n1\" CPUs=4\nNodeName=n2 Gres=gpu:h100:8 # keep\n"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if _, err := UpdateNodeGres("NodeName=n1 a=1\nNodeName=n1 b=2\n", "s", "n1", "gpu:1", noDefault); err == nil {
		t.Error("a node on two lines was edited")
	}
}

// node --update sets the gpu items of Gres= and nothing else: mps, shard,
// nic and any other GRES stay as written, in their places; the gpu items
// go where the first one was, or first when there was none.
func TestUpdateNodeGresKeepsOtherGres(t *testing.T) {
	const gpus = "gpu:a100_1g.10gb:7,gpu:a100:1"
	for _, c := range []struct{ in, gres, want string }{
		{"NodeName=n1 CPUs=128 Gres=gpu:a100:1,mps:700,shard:64,nic:2 Weight=1 # x\n", gpus,
			"NodeName=n1 CPUs=128 Gres=" + gpus + ",mps:700,shard:64,nic:2 Weight=1 # x\n"},
		{"NodeName=n1 Gres=mps:700,gpu:a100:1,shard:64,GPU:b:2,nic:2\n", gpus,
			"NodeName=n1 Gres=mps:700," + gpus + ",shard:64,nic:2\n"},
		{"NodeName=n1 Gres=nic:2,shard:64(S:0)\n", gpus, "NodeName=n1 Gres=" + gpus + ",nic:2,shard:64(S:0)\n"},
		{"NodeName=n1 Gres=\"shard:8,gpu:1\" CPUs=2\n", gpus, "NodeName=n1 Gres=\"shard:8," + gpus + "\" CPUs=2\n"},
		{"NodeName=n1 Gres=gpu:1,nic:2\n", "", "NodeName=n1 Gres=nic:2\n"},
		{"NodeName=n1 Gres=gpu:1\n", "", "NodeName=n1 Gres=\n"},
	} {
		got, err := UpdateNodeGres(c.in, "slurm.conf", "n1", c.gres, noDefault)
		if err != nil || got != c.want {
			t.Errorf("%q with %q:\ngot  %q, %v\nwant %q", c.in, c.gres, got, err, c.want)
		}
	}
}

// A node line without Gres= of its own takes NodeName=DEFAULT's; the
// Gres= that --update gives it keeps DEFAULT's other GRES, which it would
// otherwise no longer have.
func TestUpdateNodeGresKeepsInheritedGres(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"slurm.conf":    "Include defaults.conf\nNodeName=n1 CPUs=4\nNodeName=n2 Gres=gpu:2\n",
		"defaults.conf": "NodeName=DEFAULT Gres=gpu:1,shard:8,nic:1\n",
	})
	got, err := UpdateNodeGresFile(filepath.Join(dir, "slurm.conf"), "n1", "gpu:a100:2")
	if want := "Include defaults.conf\nNodeName=n1 Gres=gpu:a100:2,shard:8,nic:1 CPUs=4\nNodeName=n2 Gres=gpu:2\n"; err != nil || string(got) != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	// What cannot be copied as it reads is refused, not mangled.
	_, err = UpdateNodeGres("NodeName=n1\n", "slurm.conf", "n1", "gpu:1", func() (string, error) { return "gpu:1,nic:a b", nil })
	if err == nil || !strings.HasPrefix(err.Error(), "slurm.conf:1: ") {
		t.Errorf("an inherited item with a blank: %v", err)
	}
}

func TestDiffUnitsNormalises(t *testing.T) {
	cur := []Unit{{Name: "gpu", Type: "A100", Files: []string{"/dev/nvidia0"}, Cores: "[0-3],8", Flags: "nvidia_gpu_env,amd_gpu_env"}}
	gen := []Unit{{Name: "gpu", Type: "a100", Files: []string{"/dev/nvidia0"}, Cores: "0,1,2,3,8", Flags: "AMD_GPU_ENV,nvidia_gpu_env"}}
	if d := DiffUnits(cur, gen); !d.Same() {
		t.Errorf("formatting-only differences reported: %+v", d)
	}
	gen[0].Cores = "0-7"
	d := DiffUnits(cur, gen)
	if len(d.Changed) != 1 || !cmp.Equal(d.Changed[0].Fields, []string{"cores"}) {
		t.Errorf("changed cores: %+v", d)
	}
}

func TestUpdateNodeGresFile(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{"slurm.conf": "ClusterName=c\nNodeName=n1 CPUs=8 Gres=gpu:a100:1 # old\n"})
	path := filepath.Join(dir, "slurm.conf")
	got, err := UpdateNodeGresFile(path, "n1", "gpu:a100:2")
	if err != nil {
		t.Fatal(err)
	}
	if want := "ClusterName=c\nNodeName=n1 CPUs=8 Gres=gpu:a100:2 # old\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := UpdateNodeGresFile(path, "n9", "gpu:a100:2"); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("a node without a line: err = %v", err)
	}
	if _, err := UpdateNodeGresFile(filepath.Join(dir, "nowhere.conf"), "n1", "gpu:a100:2"); err == nil {
		t.Error("a missing file gave no error")
	}
}

// What node --update cannot edit is refused with the hint of what the
// admin can do by hand, apart from the message (advice.Hinter).
func TestUpdateNodeGresRefusalsHint(t *testing.T) {
	for _, c := range []struct{ in, msg, hint string }{
		{"NodeName=n[1-2] Gres=gpu:1\n", "slurm.conf: n1 is declared only in NodeName=n[1-2] (slurm.conf:1), together with other nodes",
			"; give it a NodeName=n1 line of its own (taking it out of that hostlist), or set Gres= for the whole group by hand"},
		{"NodeName=n1 Gres=gpu:\\\n1\n", "slurm.conf:1: the Gres= value is split across lines", "; edit it by hand"},
	} {
		_, err := UpdateNodeGres(c.in, "slurm.conf", "n1", "gpu:2", noDefault)
		var h advice.Hinter
		if !errors.As(err, &h) || err.Error() != c.msg || h.Hint() != c.hint {
			t.Errorf("%q: %v; want %q with the hint %q", c.in, err, c.msg, c.hint)
		}
	}
	_, err := UpdateNodeGres("NodeName=n1\n", "slurm.conf", "n1", "gpu:1", func() (string, error) { return "gpu:1,nic:a b", nil })
	var h advice.Hinter
	if !errors.As(err, &h) || h.Hint() != "; give the line a Gres= by hand" {
		t.Errorf("an inherited item with a blank: %v, no hint", err)
	}
}
