package drift

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// generated is the config of a node n1 with one whole GPU and two MIG
// devices.
var generated = &gresgen.Config{NodeName: "n1", Records: generatedRecords,
	Counts: []slurmconf.GresCount{{Name: "gpu", Type: "a100", Count: 1}, {Name: "gpu", Type: "a100_1g.10gb", Count: 2}}}

var generatedRecords = []slurmconf.GresRecord{
	{NodeName: "n1", Name: "gpu", Type: "a100", File: "/dev/nvidia0"},
	{NodeName: "n1", Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap137", "/dev/nvidia-caps/nvidia-cap138"}},
	{NodeName: "n1", Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap146", "/dev/nvidia-caps/nvidia-cap147"}},
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func text(t *testing.T, r *Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every record in force that differs is named by its file and line.
func TestStaleGresConfNamesLines(t *testing.T) {
	path := writeFile(t, "gres.conf", "# in force\n"+
		"AutoDetect=nvml\n"+
		"NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"+
		"NodeName=n1 Name=gpu Type=a100_2g.20gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap[137-138]\n"+
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap155,/dev/nvidia-caps/nvidia-cap156\n"+
		"NodeName=n2 Name=gpu Type=a100 File=/dev/nvidia[0-3]\n")
	r, err := Compare(Inputs{Config: generated, GresConf: path})
	if err != nil {
		t.Fatal(err)
	}
	if r.Same || r.GresConf.Same {
		t.Fatal("a stale gres.conf compares the same")
	}
	g := r.GresConf
	if len(g.Removed) != 1 || g.Removed[0].Pos != path+":5" {
		t.Errorf("removed %+v, want the device of line 5", g.Removed)
	}
	if len(g.Changed) != 1 || g.Changed[0].From.Pos != path+":4" || g.Changed[0].To.Pos != "" {
		t.Errorf("changed %+v, want the device of line 4", g.Changed)
	}
	if len(g.Added) != 1 || g.Added[0].Pos != "" {
		t.Errorf("added %+v, want one generated device", g.Added)
	}
	if g.AutoDetect != "nvml" || g.AutoDetectPos != path+":2" {
		t.Errorf("AutoDetect %q at %q, want nvml at line 2", g.AutoDetect, g.AutoDetectPos)
	}
	want := path + `:2: AutoDetect=nvml is in force: slurmd adds what it detects to these lines
--- ` + path + ` (in force)
+++ generated for n1
- gpu:a100_1g.10gb /dev/nvidia1,/dev/nvidia-caps/nvidia-cap155,/dev/nvidia-caps/nvidia-cap156 (` + path + `:5)
+ gpu:a100_1g.10gb /dev/nvidia1,/dev/nvidia-caps/nvidia-cap146,/dev/nvidia-caps/nvidia-cap147
~ /dev/nvidia1,/dev/nvidia-caps/nvidia-cap137,/dev/nvidia-caps/nvidia-cap138: type gpu:a100_2g.20gb -> gpu:a100_1g.10gb (` + path + `:4)
  count gpu:a100_1g.10gb: gres.conf 1, generated 2 (+1)
  count gpu:a100_2g.20gb: gres.conf 1, generated 0 (-1)
different: gres.conf has 1 to add, 1 to remove, 1 to change
`
	if diff := cmp.Diff(want, text(t, r)); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	var js strings.Builder
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"pos": "` + path + `:5"`, `"verdict": "different: gres.conf has 1 to add, 1 to remove, 1 to change"`, `"pos": "` + path + `:4"`, `"autodetect": "nvml"`, `"autodetect_pos": "` + path + `:2"`} {
		if !strings.Contains(js.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, js.String())
		}
	}
}

// A gres.conf none of whose lines names the node, though some name
// others, is trouble: listing every device as missing would hide that
// the names differ (a short name against full ones, the usual mistake).
// The error names the file, the node and the names found, and carries
// the fix: the node's name as slurm.conf has it, perhaps the other name.
func TestNoLineNamesNode(t *testing.T) {
	const mig = " Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap137,/dev/nvidia-caps/nvidia-cap138\n"
	fqdn := writeFile(t, "gres.conf", "AutoDetect=off\n"+
		"NodeName=n1.cluster.example Name=gpu Type=a100 File=/dev/nvidia0\n"+
		"NodeName=n1.cluster.example"+mig+
		"NodeName=n2.cluster.example,n3.cluster.example Name=gpu Type=a100 File=/dev/nvidia[0-3]\n")
	others := writeFile(t, "gres.conf", "NodeName=gpu01 Name=gpu Type=a100 File=/dev/nvidia0\n"+
		"NodeName=gpu02"+mig+"NodeName=gpu02 Name=gpu Type=a100 File=/dev/nvidia0\n"+
		"NodeName=gpu[03-04]"+mig+"NodeName=gpu05"+mig+"NodeName=gpu06"+mig)
	short := writeFile(t, "gres.conf", "NodeName=n[1-4] Name=gpu Type=a100 File=/dev/nvidia0\n")
	fqdnNode := *generated
	fqdnNode.NodeName = "n1.cluster.example"
	for _, tc := range []struct {
		config *gresgen.Config
		path   string
		want   string
		fix    advice.Fix
		args   []any
	}{
		{generated, fqdn, fqdn + ": no line names node n1; they name n1.cluster.example, n2.cluster.example,n3.cluster.example. " +
			"n1.cluster.example is n1 by another name, and Slurm matches node names exactly",
			advice.GresConfNodeAlias, []any{"n1.cluster.example", "n1"}},
		{&fqdnNode, short, short + ": no line names node n1.cluster.example; they name n[1-4]. " +
			"n1 is n1.cluster.example by another name, and Slurm matches node names exactly",
			advice.GresConfNodeAlias, []any{"n1", "n1.cluster.example"}},
		{generated, others, others + ": no line names node n1; they name gpu01, gpu02, gpu[03-04], gpu05 and others",
			advice.GresConfNodeName, nil},
	} {
		r, err := Compare(Inputs{Config: tc.config, GresConf: tc.path})
		var a *advice.Error
		if !errors.As(err, &a) || a.Fix != tc.fix || !slices.Equal(a.Args, tc.args) || err.Error() != tc.want {
			t.Errorf("node %s, %s: report %+v\n err = %v (%+v)\nwant %s, fix %v %q", tc.config.NodeName, tc.path, r, err, a, tc.want, tc.fix, tc.args)
		}
	}
	// Lines for every node, or a line that names the node only to set
	// its AutoDetect=, are this node's: a plain difference.
	for _, conf := range []string{
		"Name=gpu Type=a100 File=/dev/nvidia0\nNodeName=n2 Name=gpu Type=a100 File=/dev/nvidia0\n",
		"NodeName=n1 AutoDetect=nvml\nNodeName=n2 Name=gpu Type=a100 File=/dev/nvidia0\n",
		"# nothing yet\n",
	} {
		r, err := Compare(Inputs{Config: generated, GresConf: writeFile(t, "gres.conf", conf)})
		if err != nil || r.Same {
			t.Errorf("%q: %+v, %v; want a difference", conf, r, err)
		}
	}
}

// Without a node name only the lines for every node count: what gen
// --no-node-name writes.
func TestNoNodeName(t *testing.T) {
	path := writeFile(t, "gres.conf", "Name=gpu Type=a100 File=/dev/nvidia0\n"+
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap137,/dev/nvidia-caps/nvidia-cap138\n")
	generic := *generated
	generic.NodeName = ""
	r, err := Compare(Inputs{Config: &generic, GresConf: path})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GresConf.Added) != 2 || len(r.GresConf.Removed) != 0 {
		t.Errorf("added %d, removed %d; want the two MIG devices added", len(r.GresConf.Added), len(r.GresConf.Removed))
	}
	if !strings.Contains(text(t, r), "+++ generated for every node (no NodeName=)\n") {
		t.Errorf("text:\n%s", text(t, r))
	}
	if _, err := Compare(Inputs{Config: &generic, SlurmConf: path}); err == nil {
		t.Error("slurm.conf compared without a node name")
	}
}

func TestSameAndSlurmConf(t *testing.T) {
	gres := writeFile(t, "gres.conf", "NodeName=n[1-4] Name=gpu Type=A100 File=/dev/nvidia0\n"+
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap[137-138]\n"+
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap[146-147]\n"+
		"NodeName=n1 Name=shard Count=8\n")
	slurm := writeFile(t, "slurm.conf", "NodeName=n1 Gres=gpu:a100:1,gpu:a100_1g.10gb:3\nGresTypes=gpu\n")
	r, err := Compare(Inputs{Config: generated, GresConf: gres, SlurmConf: slurm})
	if err != nil {
		t.Fatal(err)
	}
	if r.Same || !r.GresConf.Same || r.SlurmConf.Same {
		t.Fatalf("same %v, gres.conf same %v, slurm.conf same %v", r.Same, r.GresConf.Same, r.SlurmConf.Same)
	}
	want := "different: slurm.conf: gpu:a100_1g.10gb 3 declared, 2 here (slurmctld drains a node that has fewer than declared)"
	if r.Verdict != want {
		t.Errorf("verdict %q\nwant    %q", r.Verdict, want)
	}
	if !strings.HasPrefix(text(t, r), slurm+":1: Gres=gpu:a100:1,gpu:a100_1g.10gb:3\n") {
		t.Errorf("text:\n%s", text(t, r))
	}
}

// slurmctld holding the node INVAL is a difference even when its Gres=
// (then the node's own report) matches.
func TestRunningInval(t *testing.T) {
	show := func(node string) (slurmhost.Node, error) {
		return slurmhost.Node{Gres: "gpu:a100:1,gpu:a100_1g.10gb:2(S:0)", State: "UNKNOWN+DRAIN+INVALID_REG",
			Reason: "gres/gpu count reported lower than configured (3 < 4)"}, nil
	}
	r, err := Compare(Inputs{Config: generated, Running: true, ShowNode: show})
	if err != nil {
		t.Fatal(err)
	}
	want := "different: slurmctld holds n1 in UNKNOWN+DRAIN+INVALID_REG: gres/gpu count reported lower than configured (3 < 4)"
	if r.Same || len(r.Running.Counts) != 0 || r.Verdict != want {
		t.Errorf("same %v, counts %v, verdict %q", r.Same, r.Running.Counts, r.Verdict)
	}
	failing := func(string) (slurmhost.Node, error) {
		return slurmhost.Node{}, errors.New("scontrol show node n1: boom")
	}
	if _, err := Compare(Inputs{Config: generated, Running: true, ShowNode: failing}); err == nil {
		t.Error("a failing scontrol is not an error")
	}
}

// A device state whose UUIDs the GPUs no longer have is a difference, and
// a state asked for by name is the only target (no default gres.conf).
func TestDeviceState(t *testing.T) {
	const migOld, migNew = "MIG-0000000a-0000-4000-8000-000000000000", "MIG-0000000b-0000-4000-8000-000000000000"
	u32 := func(v uint32) *uint32 { return &v }
	node := func(uuid string) *model.Node {
		return &model.Node{GPUs: []model.GPU{{Minor: 1, UUID: "GPU-00000001-0000-4000-8000-000000000000", MigEnabled: true, MigDevices: []model.MigDevice{
			{GPUInstanceID: 7, UUID: uuid, GICapMinor: u32(137), CICapMinor: u32(138)}}}}}
	}
	old, err := jobenv.NewState(node(migOld), "n1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "devices.json", string(old.Encode()))
	now, err := jobenv.NewState(node(migNew), "n1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Compare(Inputs{Config: generated, State: &StateInput{Path: path, Want: now, Asked: true}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Same || r.GresConf != nil {
		t.Fatalf("Same=%v GresConf=%v: want different, and no default gres.conf compared", r.Same, r.GresConf)
	}
	want := "device state " + path + " (generation " + old.Generation + ", the GPUs' " + now.Generation + "):\n" +
		"  ~ /dev/nvidia-caps/nvidia-cap138: UUID " + migOld + " -> " + migNew + "\n" +
		"different: device state " + path + " is stale (1 difference)\n"
	if diff := cmp.Diff(want, text(t, r)); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	// The verdict's stale state, its last part, carries the fix.
	if r.Fix != advice.StateStale {
		t.Errorf("fix %v, want advice.StateStale for the command line to word", r.Fix)
	}
	r, err = Compare(Inputs{Config: generated, State: &StateInput{Path: path, Want: old, Asked: true}})
	if err != nil || !r.Same {
		t.Errorf("the state of the GPUs now: Same=%v, %v", r.Same, err)
	}
}

// A device state that cannot be read or parsed is trouble, an error
// naming the file, not a stale state: a wrong path must not read as
// "rewrite it" (exit 1) to automation.
func TestUnreadableState(t *testing.T) {
	want := &jobenv.State{Version: jobenv.StateVersion, Node: "n1"}
	dir := t.TempDir()
	for path, msg := range map[string]string{
		filepath.Join(dir, "missing.json"): "no device state at " + filepath.Join(dir, "missing.json"),
		dir:                                dir + ": is a directory",
		writeFile(t, "garbage.json", "not json\n"): "not a slurm-mig state",
	} {
		r, err := Compare(Inputs{Config: generated, State: &StateInput{Path: path, Want: want, Asked: true}})
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("state %s: report %+v, err = %v; want an error with %q", path, r, err, msg)
		}
	}
}

// The state to compare: the one asked for, with the GPUs' state to want;
// none by default for a snapshot's GPUs.
func TestStateToCompare(t *testing.T) {
	n := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000"}}}
	noEnv := func(string) string { return "" }
	in, err := StateToCompare(jobenv.StateFile{Flag: "/x/devices.json", Getenv: noEnv}, n, "n1")
	if err != nil || in == nil || in.Path != "/x/devices.json" || !in.Asked || in.Want.Node != "n1" || len(in.Want.Devices) != 1 {
		t.Fatalf("asked for: %+v, %v", in, err)
	}
	if in, err := StateToCompare(jobenv.StateFile{Getenv: noEnv}, n, "n1"); in != nil || err != nil {
		t.Errorf("a snapshot's GPUs, no --state: %+v, %v; want none", in, err)
	}
}

// Only one of gres.conf and slurm.conf can be read from standard input.
func TestReadStdinTwice(t *testing.T) {
	for _, tc := range []struct {
		gres, slurm string
		want        bool
	}{{"-", "-", true}, {"-", "slurm.conf", false}, {"gres.conf", "-", false}, {"", "", false}} {
		if got := (Inputs{GresConf: tc.gres, SlurmConf: tc.slurm}).ReadStdinTwice(); got != tc.want {
			t.Errorf("gres.conf %q, slurm.conf %q: %v, want %v", tc.gres, tc.slurm, got, tc.want)
		}
	}
}

// A line slurmd logs and skips (a record without Name=, a NodeName= that
// is no hostlist) is reported with its file:line, and the rest of the
// file is compared, as slurmd reads it.
func TestGresConfLinesSlurmdSkipsAreReported(t *testing.T) {
	path := writeFile(t, "gres.conf", "NodeName=n1 Type=a100 File=/dev/nvidia0\n"+
		"NodeName=[localmachine] Name=gpu File=/dev/nvidia0\n"+
		"NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"+
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap137,/dev/nvidia-caps/nvidia-cap138\n"+
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap146,/dev/nvidia-caps/nvidia-cap147\n")
	r, err := Compare(Inputs{Config: generated, GresConf: path})
	if err != nil {
		t.Fatal(err)
	}
	if !r.GresConf.Same {
		t.Errorf("the devices differ: %+v", r.GresConf.GresDiff)
	}
	out := text(t, r)
	for _, want := range []string{path + ":1: error: record without Name=", path + ":2: error: NodeName=[localmachine]"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff says:\n%s\nwant a line with %q", out, want)
		}
	}
	if len(r.GresConf.Problems) != 2 {
		t.Errorf("problems %v, want the two lines", r.GresConf.Problems)
	}
}

// TestSlurmdReadsOtherDevices: diff says different wherever slurmd reads
// the files as other devices than the node has, even where the lines
// and the counts are the same: MultipleFiles= beside shard before
// 23.02.7 (each record split one GPU a file), records slurm.conf does
// not declare (ignored), a node declared twice.
func TestSlurmdReadsOtherDevices(t *testing.T) {
	gres := writeFile(t, "gres.conf", "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"+
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap137,/dev/nvidia-caps/nvidia-cap138\n"+
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap146,/dev/nvidia-caps/nvidia-cap147\n")
	const gpus = "gpu:a100:1,gpu:a100_1g.10gb:2"
	for _, tc := range []struct {
		name, slurm, release, want string
	}{
		{"shard, 22.05.8", "GresTypes=gpu,shard\nNodeName=n1 Gres=" + gpus + ",shard:8\n", "22.05.8",
			"different: slurmd 22.05.8 reads other devices than the node has (" + gres + ":2: MultipleFiles= where mps or shard is configured: slurmd 22.05.8 splits the record into 3 GPUs"},
		{"shard, 24.11", "GresTypes=gpu,shard\nNodeName=n1 Gres=" + gpus + ",shard:8\n", "24.11", "same: "},
		{"mps, 23.02.6", "GresTypes=gpu,mps\nNodeName=n1 Gres=" + gpus + "\n", "23.02.6",
			"different: slurmd 23.02.6 reads other devices than the node has (" + gres + ":2: MultipleFiles= where mps or shard is configured"},
		{"without mps or shard, 22.05.8", "GresTypes=gpu\nNodeName=n1 Gres=" + gpus + "\n", "22.05.8", "same: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slurm := writeFile(t, "slurm.conf", tc.slurm)
			v, err := slurmconf.ParseVersion(tc.release)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Compare(Inputs{Config: generated, GresConf: gres, SlurmConf: slurm, Release: v})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.Verdict, tc.want) || r.Same != strings.HasPrefix(tc.want, "same") {
				t.Errorf("same %v, verdict %q\nwant %q...", r.Same, r.Verdict, tc.want)
			}
		})
	}

	// Records slurm.conf does not declare: the lines are the node's, the
	// counts (compared as gres.conf gives them) too, yet slurmd ignores
	// the record: its SLURM_JOB_GPUS indices name other devices.
	extra := writeFile(t, "gres.conf", "Name=gpu Type=a100 File=/dev/nvidia[0-1]\n")
	slurm := writeFile(t, "slurm.conf", "GresTypes=gpu\nNodeName=n1 Gres=gpu:a100:1\n")
	one := &gresgen.Config{NodeName: "n1", Records: []slurmconf.GresRecord{{Name: "gpu", Type: "a100", File: "/dev/nvidia[0-1]"}},
		Counts: []slurmconf.GresCount{{Name: "gpu", Type: "a100", Count: 2}}}
	r, err := Compare(Inputs{Config: one, GresConf: extra, SlurmConf: slurm})
	if err != nil {
		t.Fatal(err)
	}
	if r.Same || r.Slurmd == nil || r.Slurmd.Same || !strings.Contains(r.Verdict, "Ignoring extra GRES") {
		t.Errorf("extra records: verdict %q", r.Verdict)
	}

	// A node on two NodeName= lines: slurmctld and slurmd do not start.
	twice := writeFile(t, "slurm.conf", "GresTypes=gpu\nNodeName=n[1-2] Gres="+gpus+"\nNodeName=n1 Gres="+gpus+"\n")
	if _, err := Compare(Inputs{Config: generated, GresConf: gres, SlurmConf: twice}); err == nil || !strings.Contains(err.Error(), "n1 is declared twice") {
		t.Errorf("declared twice: %v", err)
	}
}

// Without slurm.conf, diff still says different where slurmd reads the
// gres.conf's lines alone as other devices: a MultipleFiles= record
// beside the file's own shard line before 23.02.7, a device listed twice.
func TestSlurmdReadsOtherDevicesWithoutSlurmConf(t *testing.T) {
	recs := "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n" +
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap137,/dev/nvidia-caps/nvidia-cap138\n" +
		"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap146,/dev/nvidia-caps/nvidia-cap147\n"
	shard := writeFile(t, "gres.conf", recs+"NodeName=n1 Name=shard Count=8\n")
	for _, tc := range []struct {
		release string
		same    bool
	}{{"22.05.8", false}, {"23.02.7", true}} {
		v, _ := slurmconf.ParseVersion(tc.release)
		r, err := Compare(Inputs{Config: generated, GresConf: shard, Release: v})
		if err != nil {
			t.Fatal(err)
		}
		if r.Same != tc.same || !tc.same && !strings.Contains(r.Verdict, "splits the record into 3 GPUs") {
			t.Errorf("%s: same %v, verdict %q", tc.release, r.Same, r.Verdict)
		}
	}
	twice := writeFile(t, "gres.conf", recs+"NodeName=n1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap146,/dev/nvidia-caps/nvidia-cap147\n")
	r, err := Compare(Inputs{Config: generated, GresConf: twice})
	if err != nil {
		t.Fatal(err)
	}
	if r.Same || !strings.Contains(r.Verdict, "is listed twice") {
		t.Errorf("listed twice: same %v, verdict %q", r.Same, r.Verdict)
	}
}

// The verdict is the comparison's alone; the command line's hint for its
// Fix is a value of its own, said after it in the text and the JSON.
func TestVerdictHint(t *testing.T) {
	r := &Report{Verdict: "different: device state s.json is stale (1 difference)", Fix: advice.StateStale, Hint: ": rewrite it"}
	var text, js strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	want := "different: device state s.json is stale (1 difference): rewrite it"
	if text.String() != want+"\n" || !strings.Contains(js.String(), `"verdict": "`+want+`"`) {
		t.Errorf("text %q, JSON %s; want the verdict %q", text.String(), js.String(), want)
	}
	if r.Verdict != "different: device state s.json is stale (1 difference)" {
		t.Errorf("printing changed the verdict: %q", r.Verdict)
	}
}
