package jobmap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// The test node: GPU 0 and 2 whole, GPU 1 with a 3g device and two 1g
// ones, GPU 3 with two 3g devices. gres.conf lists them by GPU, mixing
// MultipleFiles= and File= (CI caps) records; slurm.conf's Gres= names
// the types in another order, so slurmd numbers 0 the 3g device of GPU 1,
// 1-2 those of GPU 3, 3-4 the 1g devices, 5-6 the whole GPUs.
const (
	gres = `Name=gpu Type=a100 File=/dev/nvidia0
Name=gpu Type=1g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13
Name=gpu Type=3g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22
Name=gpu Type=1g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap30,/dev/nvidia-caps/nvidia-cap31
Name=gpu Type=a100 File=/dev/nvidia2
Name=gpu Type=3g File=/dev/nvidia-caps/nvidia-cap[41,51]
`
	slurmConf = "NodeName=n1 CPUs=8 Gres=gpu:3g:3,gpu:1g:2,gpu:a100:2\nGresTypes=gpu\n"
)

func uuid(prefix string, n int) string {
	return fmt.Sprintf("%s-%08d-0000-4000-8000-000000000000", prefix, n)
}

// byIndex are the UUIDs of the test node's indices 0-6.
var byIndex = []string{uuid("MIG", 122), uuid("MIG", 341), uuid("MIG", 351), uuid("MIG", 112), uuid("MIG", 131), uuid("GPU", 0), uuid("GPU", 2)}

// fileAt are the files of the test node's indices 0-6 in each format:
// NVML numbers /dev/nvidia1 0, /dev/nvidia0 1, /dev/nvidia3 2 and
// /dev/nvidia2 3; the MIG devices' GPU instance ids are in testNode.
var fileAt = map[Format][]string{
	DCGM:     {"0.1", "2.1", "2.2", "0.9", "0.10", "1", "3"},
	Jobstats: {byIndex[0], byIndex[1], byIndex[2], byIndex[3], byIndex[4], "1", "3"},
}

// lineOf is the line of job id (of uid) in a file of the format.
func lineOf(f Format, id, uid int) string {
	if f == DCGM {
		return strconv.Itoa(id)
	}
	return fmt.Sprintf("%d %d", id, uid)
}

func caps(gi, ci uint32) (*uint32, *uint32) { return &gi, &ci }

func mig(uuidN, gi int, giCap, ciCap uint32) model.MigDevice {
	g, c := caps(giCap, ciCap)
	return model.MigDevice{UUID: uuid("MIG", uuidN), GPUInstanceID: gi, GICapMinor: g, CICapMinor: c}
}

// testNode writes the test node's slurm.conf, gres.conf and device state
// into a new directory and returns the options that read them.
func testNode(t testing.TB) (jobenv.Options, string) {
	dir := t.TempDir()
	n := &model.Node{GPUs: []model.GPU{
		{Index: 1, Minor: 0, UUID: uuid("GPU", 0)},
		{Index: 0, Minor: 1, UUID: uuid("GPU", 1), MigEnabled: true, MigDevices: []model.MigDevice{mig(112, 9, 12, 13), mig(122, 1, 21, 22), mig(131, 10, 30, 31)}},
		{Index: 3, Minor: 2, UUID: uuid("GPU", 2)},
		{Index: 2, Minor: 3, UUID: uuid("GPU", 3), MigEnabled: true, MigDevices: []model.MigDevice{mig(341, 1, 40, 41), mig(351, 2, 50, 51)}},
	}}
	st, err := jobenv.NewState(n, "n1", "", "test")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"slurm.conf": slurmConf, "gres.conf": gres, "devices.json": string(st.Encode())} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return jobenv.Options{SlurmConf: filepath.Join(dir, "slurm.conf"), State: filepath.Join(dir, "devices.json"), Root: "/"}, dir
}

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func jobEnv(id, uid int, gpus string) map[string]string {
	return map[string]string{"SLURM_JOB_ID": strconv.Itoa(id), "SLURM_JOB_UID": strconv.Itoa(uid), "SLURM_JOB_GPUS": gpus, "SLURMD_NODENAME": "n1"}
}

// readMap reads the job map directory: each file's lines, by name.
func readMap(t testing.TB, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
	return got
}

// treeState is everything of a directory a change would show: each
// entry's name, mode, size, mtime and content.
func treeState(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		data := ""
		if info.Mode().IsRegular() {
			d, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			data = string(d)
		}
		fmt.Fprintf(&b, "%s %v %d %d %q\n", path, info.Mode(), info.Size(), info.ModTime().UnixNano(), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSharedDevice(t *testing.T) {
	for _, f := range []Format{DCGM, Jobstats} {
		t.Run(f.String(), func(t *testing.T) { testSharedDevice(t, f) })
	}
}

func testSharedDevice(t *testing.T, f Format) {
	opts, tmp := testNode(t)
	dir := filepath.Join(tmp, "run", "jobmap")
	at := fileAt[f]
	run := func(env map[string]string, remove bool) {
		t.Helper()
		if _, err := Run(Options{Dir: dir, Format: f, Remove: remove, Map: opts}, lookup(env)); err != nil {
			t.Fatal(err)
		}
	}
	run(jobEnv(7, 1000, "0,5,3"), false)
	run(jobEnv(8, 1001, "3,6"), false)
	run(jobEnv(7, 1000, "0,5,3"), false) // a Prolog run twice
	j7, j8 := lineOf(f, 7, 1000), lineOf(f, 8, 1001)
	want := map[string][]string{
		at[0]: {j7},
		at[5]: {j7},
		at[3]: {j7, j8},
		at[6]: {j8},
	}
	if diff := cmp.Diff(want, readMap(t, dir)); diff != "" {
		t.Errorf("after two Prologs (-want +got):\n%s", diff)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("the directory made: %v, %v; want mode 0755", info.Mode(), err)
	}

	run(jobEnv(7, 1000, "0,5,3"), true)
	want = map[string][]string{at[3]: {j8}, at[6]: {j8}}
	if diff := cmp.Diff(want, readMap(t, dir)); diff != "" {
		t.Errorf("after job 7's Epilog (-want +got):\n%s", diff)
	}
	run(jobEnv(8, 1001, "3,6"), true)
	if got := readMap(t, dir); len(got) != 0 {
		t.Errorf("after both Epilogs the directory holds %v", got)
	}

	// An Epilog makes no directory.
	dir = filepath.Join(tmp, "none")
	run(jobEnv(8, 1001, "3,6"), true)
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("an Epilog made the directory: %v", err)
	}
}

// TestMapsAsEnv gives two jobs random index sets that share a device and
// holds the files to the UUIDs env exports for the same indices: jobmap
// and the TaskProlog must name the same devices. The expected map is
// built from env's output, the map itself only from the files.
func TestMapsAsEnv(t *testing.T) {
	for _, f := range []Format{DCGM, Jobstats} {
		t.Run(f.String(), func(t *testing.T) { testMapsAsEnv(t, f) })
	}
}

func testMapsAsEnv(t *testing.T, f Format) {
	opts, tmp := testNode(t)
	st, err := jobenv.LoadState(opts.State)
	if err != nil {
		t.Fatal(err)
	}
	// The file of each UUID, from the state's index and GPU instance id.
	fileOf := map[string]string{}
	for _, d := range st.Devices {
		switch {
		case d.MIG:
		case d.CICap == "":
			fileOf[d.UUID] = strconv.Itoa(*d.Index)
		case f == DCGM:
			fileOf[d.UUID] = fmt.Sprintf("%d.%d", *d.Index, *d.GI)
		default:
			fileOf[d.UUID] = d.UUID
		}
	}
	r := rand.New(rand.NewPCG(27, 1))
	envUUIDs := func(indices []int) []string {
		t.Helper()
		lines, err := jobenv.Run(opts, lookup(map[string]string{"SLURM_CONF": opts.SlurmConf, "SLURMD_NODENAME": "n1", "SLURM_STEP_ID": "0", "SLURM_STEP_GPUS": join(indices)}))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimPrefix(lines[0], "export CUDA_VISIBLE_DEVICES="), ",")
	}
	for round := 0; round < 40; round++ {
		dir := filepath.Join(tmp, "map"+strconv.Itoa(round))
		a, b := r.Perm(len(byIndex))[:1+r.IntN(4)], r.Perm(len(byIndex))[:1+r.IntN(4)]
		if !slices.Contains(b, a[0]) {
			b = append(b, a[0]) // they share a device
		}
		want := map[string][]string{}
		for _, u := range envUUIDs(a) {
			want[fileOf[u]] = append(want[fileOf[u]], lineOf(f, 1, 500))
		}
		for _, u := range envUUIDs(b) {
			want[fileOf[u]] = append(want[fileOf[u]], lineOf(f, 2, 501))
		}
		for i, job := range []map[string]string{jobEnv(1, 500, join(a)), jobEnv(2, 501, join(b))} {
			if _, err := Run(Options{Dir: dir, Format: f, Map: opts}, lookup(job)); err != nil {
				t.Fatalf("round %d, job %d: %v", round, i+1, err)
			}
		}
		if diff := cmp.Diff(want, readMap(t, dir)); diff != "" {
			t.Fatalf("round %d, jobs on %v and %v (-env +jobmap):\n%s", round, a, b, diff)
		}
		// The expected UUIDs by index, independently of env.
		for _, i := range a {
			if !slices.Contains(readMap(t, dir)[fileAt[f][i]], lineOf(f, 1, 500)) {
				t.Fatalf("round %d: index %d (%s) lacks job 1's line", round, i, fileAt[f][i])
			}
		}

		// A bad index changes nothing.
		before := treeState(t, dir)
		bad := append(slices.Clone(a), len(byIndex)+r.IntN(3))
		if _, err := Run(Options{Dir: dir, Format: f, Map: opts}, lookup(jobEnv(3, 502, join(bad)))); err == nil {
			t.Fatalf("round %d: index set %v accepted", round, bad)
		}
		if _, err := Run(Options{Dir: dir, Format: f, Remove: true, Map: opts}, lookup(jobEnv(1, 500, join(bad)))); err == nil {
			t.Fatalf("round %d: removal of index set %v accepted", round, bad)
		}
		if after := treeState(t, dir); after != before {
			t.Fatalf("round %d: refused runs changed the directory:\n%s\nto\n%s", round, before, after)
		}

		// Removing job 1 leaves job 2's lines, and only those.
		if _, err := Run(Options{Dir: dir, Format: f, Remove: true, Map: opts}, lookup(jobEnv(1, 500, join(a)))); err != nil {
			t.Fatal(err)
		}
		want = map[string][]string{}
		for _, u := range envUUIDs(b) {
			want[fileOf[u]] = append(want[fileOf[u]], lineOf(f, 2, 501))
		}
		if diff := cmp.Diff(want, readMap(t, dir)); diff != "" {
			t.Fatalf("round %d, job 1 removed (-want +got):\n%s", round, diff)
		}
	}
}

func join(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// TestBurst runs the Prologs of 32 jobs at once, then the Epilogs of
// half of them at once: every line is there once, none lost.
func TestBurst(t *testing.T) {
	for _, f := range []Format{DCGM, Jobstats} {
		t.Run(f.String(), func(t *testing.T) { testBurst(t, f) })
	}
}

func testBurst(t *testing.T, f Format) {
	opts, tmp := testNode(t)
	dir := filepath.Join(tmp, "jobmap")
	const jobs = 32
	indices := func(job int) []int {
		if job%3 == 0 {
			return []int{job % 7, (job + 3) % 7}
		}
		return []int{job % 7}
	}
	burst := func(remove bool, which func(job int) bool) {
		var wg sync.WaitGroup
		errs := make(chan error, jobs)
		for job := 1; job <= jobs; job++ {
			if !which(job) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := Run(Options{Dir: dir, Format: f, Remove: remove, Map: opts}, lookup(jobEnv(job, 1000+job, join(indices(job)))))
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(what string, kept func(job int) bool) {
		want := map[string][]string{}
		for job := 1; job <= jobs; job++ {
			if kept(job) {
				for _, i := range indices(job) {
					want[fileAt[f][i]] = append(want[fileAt[f][i]], lineOf(f, job, 1000+job))
				}
			}
		}
		got := readMap(t, dir)
		for _, lines := range got {
			sort.Strings(lines)
		}
		for _, lines := range want {
			sort.Strings(lines)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	all := func(int) bool { return true }
	odd := func(job int) bool { return job%2 == 1 }
	burst(false, all)
	check("after 32 Prologs at once", all)
	burst(true, odd)
	check("after 16 Epilogs at once", func(job int) bool { return !odd(job) })
	if entries, _ := os.ReadDir(dir); len(entries) > len(byIndex) {
		t.Errorf("the directory holds more than the device files: %v", entries)
	}
}

// TestNoGPUs: a job without GPUs on the node reads nothing and makes no
// directory.
func TestNoGPUs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "jobmap")
	unset := jobEnv(5, 1000, "")
	delete(unset, "SLURM_JOB_GPUS")
	for _, env := range []map[string]string{jobEnv(5, 1000, ""), jobEnv(5, 1000, " "), unset} {
		if _, err := Run(Options{Dir: dir, Map: jobenv.Options{SlurmConf: "/nonexistent", State: "/nonexistent"}}, lookup(env)); err != nil {
			t.Errorf("SLURM_JOB_GPUS=%q: %v", env["SLURM_JOB_GPUS"], err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a job without GPUs made the directory: %v", err)
	}
}

// TestNotOutOfDir: a symlink in the directory, one of another name
// leading out, a FIFO: nothing outside is read or written, nothing
// inside changes, and the error names the file.
func TestNotOutOfDir(t *testing.T) {
	for _, f := range []Format{DCGM, Jobstats} {
		t.Run(f.String(), func(t *testing.T) { testNotOutOfDir(t, f) })
	}
}

func testNotOutOfDir(t *testing.T, f Format) {
	opts, tmp := testNode(t)
	dir := filepath.Join(tmp, "jobmap")
	outside := filepath.Join(tmp, "outside")
	if err := os.WriteFile(outside, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{Dir: dir, Format: f, Map: opts}, lookup(jobEnv(1, 1000, "6"))); err != nil {
		t.Fatal(err)
	}
	for _, plant := range []func(path string) error{
		func(path string) error { return os.Symlink(outside, path) },
		func(path string) error { return os.Symlink("../outside", path) },
		func(path string) error { return os.Symlink(filepath.Join(tmp, "nonexistent"), path) },
		func(path string) error { return mkfifo(path) },
		func(path string) error { return os.Mkdir(path, 0o755) },
	} {
		target := filepath.Join(dir, fileAt[f][4])
		if err := plant(target); err != nil {
			t.Fatal(err)
		}
		before := treeState(t, tmp)
		_, err := Run(Options{Dir: dir, Format: f, Map: opts}, lookup(jobEnv(2, 1000, "6,4")))
		if err == nil || !strings.HasPrefix(err.Error(), target+" is ") {
			t.Errorf("err = %v; want one naming %s", err, target)
		}
		if h := hintOf(err); h != " (remove it)" {
			t.Errorf("err = %v; its hint %q, want %q", err, h, " (remove it)")
		}
		_, err = Run(Options{Dir: dir, Format: f, Remove: true, Map: opts}, lookup(jobEnv(2, 1000, "6,4")))
		if err == nil || !strings.HasPrefix(err.Error(), target+" is ") {
			t.Errorf("--remove: err = %v; want one naming %s", err, target)
		}
		if after := treeState(t, tmp); after != before {
			t.Errorf("changed:\n%s\nto\n%s", before, after)
		}
		if err := os.Remove(target); err != nil {
			t.Fatal(err)
		}
	}

	// A directory that every user may write is refused, before anything
	// in it is read.
	open := filepath.Join(tmp, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := Run(Options{Dir: open, Format: f, Map: opts}, lookup(jobEnv(2, 1000, "6")))
	if err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a world-writable directory: err = %v", err)
	}
	// So is a sticky one, which the walk lets through, with the hint to
	// make it the owner's alone.
	if err := unix.Chmod(open, 0o1777); err != nil {
		t.Fatal(err)
	}
	_, err = Run(Options{Dir: open, Format: f, Map: opts}, lookup(jobEnv(2, 1000, "6")))
	if h := hintOf(err); err == nil || !strings.Contains(err.Error(), "writable by others than its owner") || h != "; chmod 0755 it" {
		t.Errorf("a sticky world-writable directory: err = %v, its hint %q", err, h)
	}
}

// hintOf is the hint err carries apart from its message (advice.Hinter),
// "" for none.
func hintOf(err error) string {
	var h advice.Hinter
	if !errors.As(err, &h) {
		return ""
	}
	if strings.Contains(err.Error(), h.Hint()) {
		return "spliced into the message too: " + h.Hint()
	}
	return h.Hint()
}

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		old, add, remove string
		removed          bool // the file goes
	}{
		{old: "", add: "7 1000\n", removed: true},
		{old: "8 1001\n", add: "8 1001\n7 1000\n", remove: "8 1001\n"},
		{old: "7 1000\n", add: "7 1000\n", removed: true},
		{old: "7 1000\n8 1001\n", add: "7 1000\n8 1001\n", remove: "8 1001\n"},
		// Another uid for the job gives way; a bare JOBID line is the job's.
		{old: "7 0\n8 1001\n", add: "8 1001\n7 1000\n", remove: "8 1001\n"},
		{old: "7\n", add: "7 1000\n", removed: true},
		// Lines of other jobs and anything else stay, byte for byte; 70
		// and 17 are other jobs.
		{old: "70 1\n17 2\n# note\n\n", add: "70 1\n17 2\n# note\n\n7 1000\n", remove: "70 1\n17 2\n# note\n\n"},
		{old: "8 1001", add: "8 1001\n7 1000\n", remove: "8 1001"},
		{old: "7 1000\n\n", add: "7 1000\n\n", removed: true},
	} {
		var old []byte
		if tc.old != "" {
			old = []byte(tc.old)
		}
		got, _ := withJob(old, "7", "7 1000")
		if string(got) != tc.add {
			t.Errorf("withJob(%q) = %q, want %q", tc.old, got, tc.add)
		}
		got, changed := withoutJob(old, "7")
		switch {
		case tc.removed && tc.old != "" && (got != nil || !changed):
			t.Errorf("withoutJob(%q) = %q, %v; want the file removed", tc.old, got, changed)
		case !tc.removed && string(got) != tc.remove:
			t.Errorf("withoutJob(%q) = %q, want %q", tc.old, got, tc.remove)
		}
	}
	if _, changed := withJob([]byte("8 1\n7 1000\n9 2\n"), "7", "7 1000"); changed {
		t.Error("withJob rewrote a file that holds the job's line")
	}
	if _, changed := withoutJob([]byte("8 1\n"), "7"); changed {
		t.Error("withoutJob rewrote a file without the job's line")
	}
}

func TestReadJob(t *testing.T) {
	full := map[string]string{"SLURM_JOB_ID": "42", "SLURM_JOB_UID": "1000", "SLURM_JOB_GPUS": "3,1", "SLURMD_NODENAME": "n1"}
	got, err := ReadJob(lookup(full))
	if want := (Job{ID: "42", UID: "1000", Node: "n1", Indices: []int{3, 1}}); err != nil || !cmp.Equal(got, want) {
		t.Errorf("ReadJob = %+v, %v; want %+v", got, err, want)
	}
	for _, tc := range []struct{ key, value, want string }{
		{"SLURM_JOB_GPUS", "1,a", `SLURM_JOB_GPUS=1,a: "a" is not a GPU index`},
		{"SLURM_JOB_GPUS", "1,1", "SLURM_JOB_GPUS=1,1: index 1 given twice"},
		{"SLURM_JOB_GPUS", "-1", `SLURM_JOB_GPUS=-1: "-1" is not a GPU index`},
		{"SLURM_JOB_ID", "", "SLURM_JOB_GPUS is set but SLURM_JOB_ID is not: not a Slurm Prolog or Epilog?"},
		{"SLURM_JOB_ID", "4 2", "SLURM_JOB_ID=4 2 is not a number"},
		{"SLURM_JOB_ID", "../x", "SLURM_JOB_ID=../x is not a number"},
		{"SLURM_JOB_UID", "", "SLURM_JOB_GPUS is set but SLURM_JOB_UID is not: not a Slurm Prolog or Epilog?"},
		{"SLURM_JOB_UID", "01000", "SLURM_JOB_UID=01000 is not a number"},
		{"SLURMD_NODENAME", "", "SLURM_JOB_GPUS is set but SLURMD_NODENAME is not: not a Slurm Prolog or Epilog?"},
	} {
		env := map[string]string{}
		for k, v := range full {
			env[k] = v
		}
		env[tc.key] = tc.value
		if _, err := ReadJob(lookup(env)); err == nil || err.Error() != tc.want {
			t.Errorf("%s=%q: err = %v, want %s", tc.key, tc.value, err, tc.want)
		}
	}
}

func mkfifo(path string) error { return unix.Mkfifo(path, 0o644) }

// TestRefusesWhatSlurmdMisreads: a gres.conf record that slurmd ignores
// (a type slurm.conf does not declare) fails the Prolog, naming the
// line, and maps no job: the indices would name devices slurmd did not
// give it.
func TestRefusesWhatSlurmdMisreads(t *testing.T) {
	opts, dir := testNode(t)
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(gres+"Name=gpu Type=h100 File=/dev/nvidia3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mapDir := filepath.Join(t.TempDir(), "map")
	_, err := Run(Options{Dir: mapDir, Map: opts}, lookup(jobEnv(7, 1000, "0")))
	want := filepath.Join(dir, "gres.conf") + ":7: Gres=gpu:3g:3,gpu:1g:2,gpu:a100:2 (" + filepath.Join(dir, "slurm.conf") + ":1) declares no gpu:h100"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v\nwant %s...", err, want)
	}
	if entries, _ := os.ReadDir(mapDir); len(entries) != 0 {
		t.Errorf("job map written: %v", entries)
	}
}

// TestTwoTypes: on a node of several GPU types the Prolog asks the
// controller once for the job's indices and maps them all; the Epilog
// asks nothing and takes the job's lines out of every file. On a node of
// one type no job can have two, and nothing is asked.
func TestTwoTypes(t *testing.T) {
	opts, tmp := testNode(t)
	dir := filepath.Join(tmp, "jobmap")
	var asked []string
	ask := func(id, node string) ([]int, error) {
		asked = append(asked, id+"@"+node)
		return []int{3, 5, 6}, nil // a 1g device and both whole GPUs
	}
	o := Options{Dir: dir, Map: opts, JobGPUs: ask}
	if _, err := Run(o, lookup(jobEnv(9, 1000, "5,6"))); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{fileAt[DCGM][3]: {"9"}, fileAt[DCGM][5]: {"9"}, fileAt[DCGM][6]: {"9"}}
	if diff := cmp.Diff(want, readMap(t, dir)); diff != "" || !slices.Equal(asked, []string{"9@n1"}) {
		t.Errorf("Prolog: asked %v (-want +got):\n%s", asked, diff)
	}
	o.Remove = true
	if _, err := Run(o, lookup(jobEnv(9, 1000, "5,6"))); err != nil {
		t.Fatal(err)
	}
	if got := readMap(t, dir); len(got) != 0 || len(asked) != 1 {
		t.Errorf("Epilog: asked %v, left %v", asked, got)
	}

	// A controller that does not answer: a warning, and the indices of
	// the environment.
	o = Options{Dir: dir, Map: opts, JobGPUs: func(string, string) ([]int, error) { return nil, errors.New("no answer in 10s") }}
	warned, err := Run(o, lookup(jobEnv(10, 1000, "6")))
	if err != nil {
		t.Fatal(err)
	}
	if got := readMap(t, dir); !cmp.Equal(got, map[string][]string{fileAt[DCGM][6]: {"10"}}) || len(warned) != 1 ||
		warned[0].Error() != "job 10: no answer in 10s; mapping the SLURM_JOB_GPUS=6 it has alone (a job of several GPU types may have more)" {
		t.Errorf("map %v, warnings %v", got, warned)
	}

	// One type: nothing asked, Prolog or Epilog.
	one := t.TempDir()
	oneConf := filepath.Join(one, "slurm.conf")
	if err := os.WriteFile(oneConf, []byte("GresTypes=gpu\nNodeName=n1 CPUs=8 Gres=gpu:a100:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(one, "gres.conf"), []byte("Name=gpu Type=a100 File=/dev/nvidia[0,2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oneOpts := opts
	oneOpts.SlurmConf = oneConf
	asked = nil
	oneDir := filepath.Join(one, "jobmap")
	for _, remove := range []bool{false, true} {
		if _, err := Run(Options{Dir: oneDir, Map: oneOpts, JobGPUs: ask, Remove: remove}, lookup(jobEnv(11, 1000, "1"))); err != nil {
			t.Fatal(err)
		}
		if len(asked) != 0 {
			t.Fatalf("a job on a node of one GPU type asked the controller (remove=%v)", remove)
		}
	}
}

// TestOtherFormatRefused: a directory holding the other format's files
// (or an older slurm-mig's, named by UUID) is refused, unchanged.
func TestOtherFormatRefused(t *testing.T) {
	opts, tmp := testNode(t)
	for _, tc := range []struct {
		f          Format
		name, data string
		want       string
	}{
		{DCGM, byIndex[0], "7 1000\n", "holds " + byIndex[0] + " (a file named by UUID, of jobstats' format (or of an older slurm-mig's job map))"},
		{DCGM, uuid("GPU", 2), "7 1000\n", "holds " + uuid("GPU", 2) + " (a file named by UUID"},
		{DCGM, "3", "7 1000\n", "3 holds a JOBID UID line, of jobstats' format"},
		{Jobstats, "0.1", "7\n", "holds 0.1 (a <index>.<GPU instance id> file, of dcgm-exporter's format)"},
		{Jobstats, "3", "7\n", "3 holds a JOBID line without the UID, of dcgm-exporter's format"},
		{Jobstats, uuid("GPU", 2), "7 1000\n", "holds " + uuid("GPU", 2) + " (a GPU-<UUID> file"},
	} {
		dir := filepath.Join(tmp, "other"+strconv.Itoa(int(tc.f))+tc.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, tc.name), []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		before := treeState(t, dir)
		for _, remove := range []bool{false, true} {
			_, err := Run(Options{Dir: dir, Format: tc.f, Remove: remove, Map: opts}, lookup(jobEnv(8, 1001, "6")))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s in a %s map: err = %v, want %q", tc.name, tc.f, err, tc.want)
			}
			if h := hintOf(err); !strings.HasPrefix(h, " (give each exporter its own directory") {
				t.Errorf("%s in a %s map: err = %v, its hint %q", tc.name, tc.f, err, h)
			}
		}
		if after := treeState(t, dir); after != before {
			t.Errorf("%s in a %s map: the refusal changed the directory", tc.name, tc.f)
		}
	}
}

// TestOldState: a state without NVML indices and GPU instance ids, as
// releases before wrote it, is refused with its fix; the map is not made.
func TestOldState(t *testing.T) {
	opts, tmp := testNode(t)
	st, err := jobenv.LoadState(opts.State)
	if err != nil {
		t.Fatal(err)
	}
	for i := range st.Devices {
		st.Devices[i].Index, st.Devices[i].GI = nil, nil
	}
	old, err := jobenv.NewState(&model.Node{}, "n1", "", "old")
	if err != nil {
		t.Fatal(err)
	}
	old.Devices = st.Devices
	data := string(old.Encode())
	// The generation of the devices without index, as the old release made it.
	parsed, perr := jobenv.ParseState([]byte(data))
	if perr == nil || !strings.Contains(perr.Error(), "does not match its devices (") {
		t.Fatalf("ParseState: %v, %v", parsed, perr)
	}
	gen := strings.TrimSuffix(strings.Split(perr.Error(), "does not match its devices (")[1], "); the file was edited or damaged")
	data = strings.Replace(data, `"generation": "`+old.Generation+`"`, `"generation": "`+gen+`"`, 1)
	path := filepath.Join(tmp, "old.json")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.State = path
	dir := filepath.Join(tmp, "jobmap")
	_, err = Run(Options{Dir: dir, Map: opts}, lookup(jobEnv(8, 1001, "6")))
	var a *advice.Error
	if err == nil || !errors.As(err, &a) || a.Fix != advice.StateStale || !strings.HasPrefix(err.Error(), path+" records no NVML index or GPU instance id") {
		t.Errorf("err = %v; want the state refused as stale", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the map was made: %v", err)
	}
}
