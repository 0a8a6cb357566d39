package jobenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/slurmd"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// readIndices numbers node n1's GPUs as slurmd does, from its Gres= and
// a gres.conf.
func readIndices(t *testing.T, gres, conf string) ([]Device, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte("GresTypes=gpu\nNodeName=n1 Gres="+gres+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nc, err := slurmd.ReadNode(filepath.Join(dir, "gres.conf"), filepath.Join(dir, "slurm.conf"), "n1", slurmconf.Version{})
	if err == nil && (nc.Fatal() || len(nc.Misread) > 0) {
		err = fmt.Errorf("%v", nc.Problems)
	}
	return nc.GPUs, err
}

func lookup(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vars  map[string]string
		leave bool
		from  string
		want  []int
		err   string
	}{
		{"srun step", map[string]string{"SLURM_STEP_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"},
			false, "SLURM_STEP_GPUS", []int{2, 3}, ""},
		{"batch step: no SLURM_STEP_ID", map[string]string{"SLURM_JOB_GPUS": "4,5", "CUDA_VISIBLE_DEVICES": "0,1", "SLURMD_NODENAME": "n1"},
			false, "SLURM_JOB_GPUS", []int{4, 5}, ""},
		{"batch step of 26.05: SLURM_STEP_ID=-5", map[string]string{"SLURM_JOB_GPUS": "4,5", "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_STEP_ID": "-5", "SLURMD_NODENAME": "n1"},
			false, "SLURM_JOB_GPUS", []int{4, 5}, ""},
		{"--gres=none in a GPU job", map[string]string{"SLURM_JOB_GPUS": "2,3", "SLURM_STEP_ID": "1", "SLURMD_NODENAME": "n1"},
			true, "", nil, ""},
		{"--gres=none in a GPU job, no step id either", map[string]string{"SLURM_JOB_GPUS": "2,3", "SLURMD_NODENAME": "n1"},
			true, "", nil, ""},
		{"batch step with Flags=no_gpu_env: only SLURM_GPUS_ON_NODE", map[string]string{"SLURM_JOB_GPUS": "4", "SLURM_GPUS_ON_NODE": "1", "SLURMD_NODENAME": "n1"},
			false, "SLURM_JOB_GPUS", []int{4}, ""},
		{"AutoDetect gave UUIDs", map[string]string{"SLURM_STEP_GPUS": "2", "CUDA_VISIBLE_DEVICES": "MIG-8f1e", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"},
			true, "", nil, ""},
		{"AutoDetect, a whole GPU and a MIG device", map[string]string{"SLURM_STEP_GPUS": "0,2", "CUDA_VISIBLE_DEVICES": "0,MIG-8f1e", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"},
			true, "", nil, ""},
		{"job without GPUs", map[string]string{"SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"}, true, "", nil, ""},
		{"batch job without GPUs", map[string]string{"SLURMD_NODENAME": "n1"}, true, "", nil, ""},
		{"unreadable list", map[string]string{"SLURM_STEP_GPUS": "2,x", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"}, false, "", nil, `"x" is not a GPU index`},
		{"range", map[string]string{"SLURM_STEP_GPUS": "2-3", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"}, false, "", nil, "not a GPU index"},
		{"twice", map[string]string{"SLURM_STEP_GPUS": "2,2", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"}, false, "", nil, "given twice"},
		{"no node name", map[string]string{"SLURM_STEP_GPUS": "2", "SLURM_STEP_ID": "0"}, false, "", nil, "SLURMD_NODENAME is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Decide(lookup(tc.vars))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Leave != tc.leave || req.From != tc.from || !cmp.Equal(req.Indices, tc.want) {
				t.Errorf("Decide = %+v, want leave=%v from=%s indices=%v", req, tc.leave, tc.from, tc.want)
			}
		})
	}
}

// The UUIDs of testState's devices, in NVML's form.
const (
	gpu0 = "GPU-00000000-0000-4000-8000-000000000000"
	gpu1 = "GPU-00000001-0000-4000-8000-000000000000"
	migA = "MIG-aaaaaaaa-0000-4000-8000-000000000000"
	migB = "MIG-bbbbbbbb-0000-4000-8000-000000000000"
	migC = "MIG-cccccccc-0000-4000-8000-000000000000"
)

// testState is a node with a whole GPU (minor 0), a GPU in MIG mode
// (minor 1) with two CIs in one GI and one in another.
func testState(t *testing.T) *State {
	t.Helper()
	u32 := func(v uint32) *uint32 { return &v }
	n := &model.Node{GPUs: []model.GPU{
		{Index: 0, Minor: 0, UUID: gpu0, Name: "A100"},
		{Index: 1, Minor: 1, UUID: gpu1, Name: "A100", MigEnabled: true, MigDevices: []model.MigDevice{
			{GPUInstanceID: 2, ComputeInstanceID: 0, UUID: migA, GICapMinor: u32(156), CICapMinor: u32(157)},
			{GPUInstanceID: 2, ComputeInstanceID: 1, UUID: migB, GICapMinor: u32(156), CICapMinor: u32(158)},
			{GPUInstanceID: 7, ComputeInstanceID: 0, UUID: migC, GICapMinor: u32(201), CICapMinor: u32(202)},
		}},
	}}
	st, err := NewState(n, "n1", "boot-1", "test")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStateLookup(t *testing.T) {
	st := testState(t)
	for _, tc := range []struct {
		files []string
		uuid  string
		err   string
	}{
		{[]string{"/dev/nvidia0"}, gpu0, ""},
		{[]string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap156", "/dev/nvidia-caps/nvidia-cap158"}, migB, ""},
		{[]string{"/dev/nvidia-caps/nvidia-cap158", "/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap156"}, migB, ""},
		{[]string{"/dev/nvidia-caps/nvidia-cap202"}, migC, ""}, // --files ci
		{[]string{"/dev/nvidia1"}, "", "in MIG mode"},
		{[]string{"/dev/nvidia-caps/nvidia-cap156"}, "", "no device in the state"}, // a GI cap alone
		{[]string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap156", "/dev/nvidia-caps/nvidia-cap157"}, "", "not a file of the MIG device"},
		{[]string{"/dev/nvidia-caps/nvidia-cap157", "/dev/nvidia-caps/nvidia-cap158"}, "", "two MIG devices"},
		{[]string{"/dev/nvidia7"}, "", "no device in the state"},
	} {
		d, err := st.Lookup(tc.files)
		var h advice.Hinter
		if tc.err == "in MIG mode" && (!errors.As(err, &h) || h.Hint() != " (offer its MIG devices: slurm-mig gen)" || strings.Contains(err.Error(), "slurm-mig gen")) {
			t.Errorf("Lookup(%v): %v, want the hint to offer its MIG devices apart from it", tc.files, err)
		}
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Lookup(%v): err = %v, want %q", tc.files, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("Lookup(%v): %v", tc.files, err)
		case tc.err == "" && d.UUID != tc.uuid:
			t.Errorf("Lookup(%v) = %s, want %s", tc.files, d.UUID, tc.uuid)
		}
	}
}

func TestStateRoundTripAndChecks(t *testing.T) {
	st := testState(t)
	back, err := ParseState(st.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	edited := strings.Replace(string(st.Encode()), migB, "MIG-bbbbbbbb-0000-4000-8000-000000000001", 1)
	if _, err := ParseState([]byte(edited)); err == nil || !strings.Contains(err.Error(), "does not match its devices") {
		t.Errorf("an edited state: err = %v", err)
	}
	if err := CheckState(st, "s.json", "n2", "boot-1"); err == nil || !strings.Contains(err.Error(), "written for node n1, but this task runs on n2") {
		t.Errorf("another node's state: err = %v", err)
	}
	// A state of another boot, or none, carries the fix: the commands
	// that write it, which the command line words.
	var a *advice.Error
	if err := CheckState(st, "s.json", "n1", "boot-2"); !errors.As(err, &a) || a.Fix != advice.StateBeforeReboot || !strings.HasSuffix(err.Error(), "MIG devices and their UUIDs do not survive one") {
		t.Errorf("a state of another boot: err = %v", err)
	}
	if err := CheckState(st, "s.json", "n1", "boot-1"); err != nil {
		t.Error(err)
	}
	none := filepath.Join(t.TempDir(), "none.json")
	if _, err := LoadState(none); !errors.As(err, &a) || a.Fix != advice.StateMissing || err.Error() != "no device state at "+none {
		t.Errorf("a missing state: err = %v", err)
	}
}

// TestStateUUIDs: a state whose device has a UUID that is missing, empty
// or not in NVML's form is refused where it is read, naming the file and
// the device, even when its generation was made to match: env would
// export it as CUDA_VISIBLE_DEVICES.
func TestStateUUIDs(t *testing.T) {
	for _, tc := range []struct {
		dev  StateDevice
		want string
	}{
		{StateDevice{UUID: "garbage", GPU: "/dev/nvidia1", GICap: "/dev/nvidia-caps/nvidia-cap156", CICap: "/dev/nvidia-caps/nvidia-cap157"},
			`devices[1] (/dev/nvidia-caps/nvidia-cap157): uuid "garbage" is not a MIG UUID`},
		{StateDevice{UUID: "", GPU: "/dev/nvidia1", GICap: "/dev/nvidia-caps/nvidia-cap156", CICap: "/dev/nvidia-caps/nvidia-cap157"},
			"devices[1] (/dev/nvidia-caps/nvidia-cap157): no uuid"},
		{StateDevice{UUID: "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b", GPU: "/dev/nvidia1"},
			`devices[1] (/dev/nvidia1): uuid "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b" is not a GPU UUID`},
		{StateDevice{UUID: "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b,GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", GPU: "/dev/nvidia1", GICap: "/dev/nvidia-caps/nvidia-cap156", CICap: "/dev/nvidia-caps/nvidia-cap157"},
			`devices[1] (/dev/nvidia-caps/nvidia-cap157): uuid "MIG-0b7e074a-1c2d-5e3f-8a9b-1c2d3e4f5a6b,GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0" is not a MIG UUID`},
	} {
		st := &State{Version: StateVersion, Node: "n1", Devices: []StateDevice{
			{UUID: "GPU-87669b4f-4d3a-9852-0688-cd1e4683e9f0", GPU: "/dev/nvidia0"}, tc.dev}}
		st.Generation = generation(st.Devices)
		path := filepath.Join(t.TempDir(), "devices.json")
		if err := os.WriteFile(path, st.Encode(), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadState(path)
		if want := path + ": " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("LoadState of %+v\n err = %v\nwant %s...", tc.dev, err, want)
		}
	}
}

func TestLines(t *testing.T) {
	st := testState(t)
	devs, err := readIndices(t, "gpu:1g:2,gpu:a100:1,gpu:2c:1", `Name=gpu Type=a100 File=/dev/nvidia0
Name=gpu Type=2c MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap156,/dev/nvidia-caps/nvidia-cap158
Name=gpu Type=1g File=/dev/nvidia-caps/nvidia-cap[157,202]
`)
	if err != nil {
		t.Fatal(err)
	}
	// Index 0: migA, 1: migC, 2: gpu0, 3: migB.
	n := &Node{Devices: devs, State: st, Context: "node n1"}
	env := map[string]string{"CUDA_VISIBLE_DEVICES": "0,1", "GPU_DEVICE_ORDINAL": "0,1", "ROCR_VISIBLE_DEVICES": "0,1", "ZE_AFFINITY_MASK": "5"}
	got, err := Lines(Request{From: "SLURM_STEP_GPUS", Indices: []int{3, 0}}, n, lookup(env), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"export CUDA_VISIBLE_DEVICES=" + migB + "," + migA, "unset GPU_DEVICE_ORDINAL", "unset ROCR_VISIBLE_DEVICES"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if _, err := Lines(Request{From: "SLURM_STEP_GPUS", Indices: []int{4}}, n, lookup(env), nil); err == nil ||
		err.Error() != "SLURM_STEP_GPUS names GPU index 4, but node n1 numbers indices 0-3" {
		t.Errorf("out of range: err = %v", err)
	}

	// Bound under ConstrainDevices: Slurm says index 0 for the second
	// task too; the cgroup grants it index 1's device.
	probe := func(granted ...string) Probe {
		return func(file string) (bool, error) {
			for _, g := range granted {
				if g == file {
					return true, nil
				}
			}
			return false, nil
		}
	}
	req := Request{From: "SLURM_STEP_GPUS", Indices: []int{0}, Narrowed: true}
	got, err = Lines(req, n, lookup(nil), probe("/dev/nvidia-caps/nvidia-cap202"))
	if err != nil || got[0] != "export CUDA_VISIBLE_DEVICES="+migC {
		t.Errorf("bound task under a device cgroup: %v, %v", got, err)
	}
	all := probe("/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap157", "/dev/nvidia-caps/nvidia-cap158", "/dev/nvidia-caps/nvidia-cap202")
	got, err = Lines(req, n, lookup(nil), all)
	if err != nil || got[0] != "export CUDA_VISIBLE_DEVICES="+migA {
		t.Errorf("bound task without a device cgroup: %v, %v", got, err)
	}
	_, err = Lines(req, n, lookup(nil), probe("/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap202"))
	if err == nil || !strings.Contains(err.Error(), "the task's device cgroup grants 2") {
		t.Errorf("cgroup and SLURM_STEP_GPUS disagree on the count: err = %v", err)
	}
}

func TestGresTypeCounts(t *testing.T) {
	got, err := slurmconf.GresTypeCounts("gpu:a100:2(S:0-1),mps:100,gpu:1g.10gb:no_consume:3,gpu:A100:1,gpu:a100:1k", "gpu")
	if err != nil {
		t.Fatal(err)
	}
	want := []slurmconf.GresCount{{Name: "gpu", Type: "a100", Count: 2 + 1024}, {Name: "gpu", Type: "1g.10gb", Count: 3}, {Name: "gpu", Type: "A100", Count: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRunLeavesAloneWithoutReadingFiles(t *testing.T) {
	// No slurm.conf, gres.conf or state exists: a task without GPUs must
	// still pass, and fast.
	opts := Options{SlurmConf: "/nonexistent/slurm.conf", State: "/nonexistent/state.json"}
	lines, err := Run(opts, lookup(map[string]string{"SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"}))
	if err != nil || lines != nil {
		t.Errorf("Run = %v, %v; want nothing", lines, err)
	}
	_, err = Run(opts, lookup(map[string]string{"SLURM_STEP_GPUS": "0", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "n1"}))
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/slurm.conf") {
		t.Errorf("missing slurm.conf: err = %v", err)
	}
}

// TestLoadRefusesWhatSlurmdMisreads: env and jobmap refuse, naming the
// line, where slurmd reads the node as other devices than the lines and
// the device state name; a task never gets a device slurmd did not give
// it.
func TestLoadRefusesWhatSlurmdMisreads(t *testing.T) {
	const migs = "Name=gpu Type=1g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap156,/dev/nvidia-caps/nvidia-cap157\n" +
		"Name=gpu Type=1g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap156,/dev/nvidia-caps/nvidia-cap158\n"
	release := func(s string) func() (slurmconf.Version, error) {
		return func() (slurmconf.Version, error) { return slurmconf.ParseVersion(s) }
	}
	for _, tc := range []struct {
		name, slurm, gres string
		release           func() (slurmconf.Version, error)
		err               string // "" for none
	}{
		{"MultipleFiles beside shard, 22.05: split", "GresTypes=gpu,shard\nNodeName=n1 Gres=gpu:1g:2,shard:8\n", migs + "Name=shard Count=8\n",
			release("22.05.8"), "gres.conf:1: MultipleFiles= where mps or shard is configured: slurmd 22.05.8 splits the record into 3 GPUs"},
		{"MultipleFiles beside shard, release not known", "GresTypes=gpu,shard\nNodeName=n1 Gres=gpu:1g:2,shard:8\n", migs + "Name=shard Count=8\n",
			nil, "gres.conf:1: how slurmd numbers this node's GPUs depends on its release"},
		{"MultipleFiles beside shard, 24.11: kept", "GresTypes=gpu,shard\nNodeName=n1 Gres=gpu:1g:2,shard:8\n", migs + "Name=shard Count=8\n",
			release("24.11.1"), ""},
		{"more records than Gres= declares", "GresTypes=gpu\nNodeName=n1 Gres=gpu:1g:1\n", migs,
			nil, "gres.conf:2: Gres=gpu:1g:1 (" + "slurm.conf:2) declares fewer; slurmd: \"A line in gres.conf for GRES gpu:1g has 1 more configured than expected in slurm.conf. Ignoring extra GRES.\""},
		{"a type slurm.conf lacks", "GresTypes=gpu\nNodeName=n1 Gres=gpu:1g:2\n", migs + "Name=gpu Type=a100 File=/dev/nvidia0\n",
			nil, "gres.conf:3: Gres=gpu:1g:2 (slurm.conf:2) declares no gpu:a100"},
		{"slurmd dies", "GresTypes=gpu\nNodeName=n1 Gres=gpu:1g:2,gpu:1\n", migs, nil, "slurm.conf:2: Gres=gpu:1g:2,gpu:1 gives GPUs with a type and without"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := testState(t)
			st.BootID = ""
			for name, data := range map[string]string{"slurm.conf": tc.slurm, "gres.conf": tc.gres, "devices.json": string(st.Encode())} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Positions are said with the path; the test's wants are
			// relative to dir.
			opts := Options{SlurmConf: filepath.Join(dir, "slurm.conf"), State: filepath.Join(dir, "devices.json"), Root: "/", Release: tc.release}
			n, err := Load(opts, "n1", lookup(nil))
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), dir+"/", "")
			}
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if picked, err := n.Pick("SLURM_STEP_GPUS", []int{1}); err != nil || picked[0].UUID != migB {
					t.Errorf("index 1: %v, %v", picked, err)
				}
				return
			}
			if !strings.HasPrefix(got, tc.err) || strings.Contains(got, "\n") {
				t.Errorf("err = %s\nwant %s...", got, tc.err)
			}
			// Where slurmd misreads the lines, check is the hint, apart
			// from the message.
			const hint = " (slurm-mig check says what slurmd reads)"
			var h advice.Hinter
			if misread := strings.Contains(got, "slurmd's GPU indices are not"); misread && (!errors.As(err, &h) || h.Hint() != hint || strings.HasSuffix(got, hint)) {
				t.Errorf("err = %s: want the hint %q apart from it", got, hint)
			}
		})
	}
}

// TestStateIndices: the state records each device's NVML index and a MIG
// device's GPU instance id, which the job map names files by; a state
// without them (an older release's) still parses, but is not Addressed,
// and diff calls it stale; ones that would name two devices by one file
// are refused.
func TestStateIndices(t *testing.T) {
	st := testState(t)
	got := map[string][2]int{}
	for _, d := range st.Devices {
		gi := -1
		if d.GI != nil {
			gi = *d.GI
		}
		got[d.UUID] = [2]int{*d.Index, gi}
	}
	want := map[string][2]int{gpu0: {0, -1}, gpu1: {1, -1}, migA: {1, 2}, migB: {1, 2}, migC: {1, 7}}
	if diff := cmp.Diff(want, got); diff != "" || !st.Addressed() {
		t.Errorf("index, GI by UUID (-want +got):\n%s", diff)
	}

	old := *st
	old.Devices = slices.Clone(st.Devices)
	for i := range old.Devices {
		old.Devices[i].Index, old.Devices[i].GI = nil, nil
	}
	// A slurm-mig that knows no index reads the state: the generation is
	// the same without them.
	if g := generation(old.Devices); g != st.Generation {
		t.Errorf("the generation without indices is %s, with them %s", g, st.Generation)
	}
	back, err := ParseState(old.Encode())
	if err != nil || back.Addressed() {
		t.Fatalf("a state without indices: %v, Addressed %v", err, back != nil && back.Addressed())
	}
	path := filepath.Join(t.TempDir(), "old.json")
	if err := os.WriteFile(path, old.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := CompareState(path, st)
	if err != nil || r.Same || !strings.Contains(strings.Join(r.Problems, "\n"), "no NVML index or GPU instance id recorded (written by an older slurm-mig)") {
		t.Errorf("CompareState of a state without indices: %+v, %v", r, err)
	}

	for _, tc := range []struct {
		edit func(devs []StateDevice)
		err  string
	}{
		{func(d []StateDevice) { d[0].GI = d[2].GI }, "gpu_instance_id is for MIG devices"},
		{func(d []StateDevice) { d[2].Index = nil }, "a gpu_instance_id without an index"},
		{func(d []StateDevice) { d[0].Index = d[1].Index; d[1].MIG = false }, "has the index and gpu_instance_id of devices[0]"},
		{func(d []StateDevice) { d[4].GI = d[2].GI }, "has the index and gpu_instance_id of devices[3]"},
	} {
		bad := *st
		bad.Devices = slices.Clone(st.Devices)
		for i, d := range bad.Devices {
			if d.Index != nil {
				v := *d.Index
				bad.Devices[i].Index = &v
			}
		}
		tc.edit(bad.Devices)
		bad.Generation = generation(bad.Devices)
		if _, err := ParseState(bad.Encode()); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("err = %v, want %q", err, tc.err)
		}
	}
}
