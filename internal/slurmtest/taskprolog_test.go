package slurmtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestTaskPrologExportsUUIDs runs `slurm-mig env` as the cluster's
// TaskProlog and checks what jobs get: every task's CUDA_VISIBLE_DEVICES
// must hold the UUIDs of exactly the devices at the indices Slurm gave it
// (SLURM_STEP_GPUS, SLURM_JOB_GPUS in a batch step, within `scontrol show
// job -d`'s IDX:), in that order. Which device an index is comes from
// slurmd itself (`slurmd -G` lists the records in its index order) and
// which UUID a device has from the node's model, not from slurm-mig's
// own index map. slurm.conf lists the types in another order than
// gres.conf, as admins write it. Under task/cgroup with ConstrainDevices
// the device cgroup must grant each task the caps of its UUIDs.
func TestTaskPrologExportsUUIDs(t *testing.T) {
	requireCluster(t)
	host := shortHostname(t)
	hw := hardware(t)
	want := map[string]bool{ // whole GPUs and MIG devices, several CIs in a GI, old MIG UUIDs, a real H100
		"mixed.txtar/mixed.json": true, "mig_edge.txtar/node.json": true, "real_h100.txtar/h100.json": true,
	}
	var chosen []layout
	for _, l := range loadLayouts(t, host) {
		if want[l.name] {
			chosen = append(chosen, l)
		}
	}
	if len(chosen) != len(want) {
		t.Fatalf("found %d of the layouts %v", len(chosen), want)
	}
	t.Cleanup(func() {
		Announce("slurmtest: TaskProlog (slurm-mig env) clusters: %d (srun per type, -n2 --gpu-bind=single:1, batch step, step in a batch job, --gres=none, no state; task/none and task/cgroup)", taskPrologScenarios.Load())
	})
	forms := []form{{"model", "multiple", false}, {"profile", "ci", true}, {"autodetect", "multiple", true}}
	for _, l := range chosen {
		devDir := t.TempDir()
		makeDevices(t, devDir, l.node)
		copyMigMinors(t, l.root, devDir) // env --root devDir reads them there
		for i, f := range forms {
			for _, plugin := range []string{"task/none", "task/cgroup"} {
				if plugin == "task/cgroup" && i == 2 {
					continue // two forms under cgroups are enough
				}
				name := l.name + "/" + f.String() + "/" + plugin
				if refused := refusal(t, l, f, host); refused != nil {
					t.Run(name+"/"+refusedName(refused), func(t *testing.T) {
						checkSlurmMigRefuses(t, l, f, host, refused)
					})
					continue
				}
				if release.Before(gresIndexEnvSince) {
					if plugin == "task/none" {
						t.Run(name+"/step-gpus-are-device-numbers-before-"+gresIndexEnvSince.String(), func(t *testing.T) {
							t.Parallel()
							startTaskPrologCluster(t, l, f, host, hw, devDir, plugin).checkDeviceNumbers()
						})
					}
					continue
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					s := startTaskPrologCluster(t, l, f, host, hw, devDir, plugin)
					s.check()
					if !t.Failed() {
						taskPrologScenarios.Add(1)
					}
				})
			}
		}
	}
}

var taskPrologScenarios atomic.Int64

// copyMigMinors puts the layout's mig-minors under dir.
func copyMigMinors(t *testing.T, root, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "proc/driver/nvidia-caps/mig-minors"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "proc/driver/nvidia-caps/mig-minors")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// taskPrologCluster is a running cluster whose TaskProlog runs
// `slurm-mig env`, with what the checks need to know of it.
type taskPrologCluster struct {
	*cluster
	types   []typeCount       // slurm.conf's Gres=, in its order
	uuidAt  map[int]string    // index -> UUID, from slurmd -G and the model
	capOf   map[string]string // UUID -> the CI cap (or GPU file) the cgroup must allow
	cgroups bool
	devDir  string
}

// startTaskPrologCluster renders the layout in form f, writes the
// device state with `slurm-mig state`, a TaskProlog that runs `slurm-mig
// env` and slurm.conf with the types in reverse order, and starts the
// cluster.
func startTaskPrologCluster(t *testing.T, l layout, f form, host, hw, devDir, plugin string) *taskPrologCluster {
	t.Helper()
	gres, nodeLine := render(t, l, f, host)
	types, nodeLine := reverseTypes(t, nodeLine, host)

	// A short path: slurmstepd's sockets live in the spool dir and a Unix
	// socket path has 108 bytes (t.TempDir holds the test's long name).
	dir, err := os.MkdirTemp("", "slurm-tp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	state := filepath.Join(dir, "devices.json")
	runSlurmMig(t, "--root", devDir, "state", "--from", l.snapshot, "--node-name", host, "--state", state)
	prolog := filepath.Join(dir, "taskprolog")
	// The wrapper keeps what Slurm set, for the test's log.
	script := fmt.Sprintf("#!/bin/sh\nenv | grep -E '^(CUDA|GPU|ROCR|ZE|SLURM_STEP_ID|SLURM_STEP_GPUS|SLURM_JOB_GPUS|SLURM_GPU|SLURM_TRES|SLURM_LOCALID|SLURM_GPUS)' | sort | tr '\\n' ' ' >> %s/taskenv.log\necho >> %s/taskenv.log\nexec %s --root %s env --state %s\n", dir, dir, nodeCommand(slurmMig), devDir, state)
	if err := os.WriteFile(prolog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := freePorts(t)
	conf := strings.Replace(slurmConf(dir, host, nodeLine, hw, p), "TaskPlugin=task/none\n", "TaskPlugin="+plugin+"\n", 1) +
		"TaskProlog=" + prolog + "\n" +
		// Job ids of their own: clusters run side by side, and task/cgroup
		// names its cgroups by job id alone.
		fmt.Sprintf("FirstJobId=%d\n", p.slurmctld*1000)
	if plugin == "task/cgroup" {
		cg := cgroupV1Conf() + "ConstrainDevices=yes\n"
		if err := os.WriteFile(filepath.Join(dir, "cgroup.conf"), []byte(cg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := writeConfigs(t, dir, forThisMachine(gres, devDir), conf)

	s := &taskPrologCluster{types: types, cgroups: plugin == "task/cgroup", devDir: devDir}
	s.uuidAt, s.capOf = slurmdIndexUUIDs(t, path, l.node, devDir)
	s.cluster = startClusterIn(t, dir, host, path)
	if node := s.waitNode(registered, "to register"); node.state != "IDLE" {
		t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", host, node.state, node.reason, s.logs())
	}
	return s
}

// reverseTypes writes the node line with the types of its Gres= in
// reverse order, as an admin who keeps slurm.conf by hand may list them:
// slurmd then numbers the devices otherwise than gres.conf lists them.
// It returns the types in that order, and the line.
func reverseTypes(t *testing.T, nodeLine, host string) ([]typeCount, string) {
	t.Helper()
	orig := gresList(t, nodeLine)
	var types []typeCount
	var reversed []string
	for i := len(orig) - 1; i >= 0; i-- {
		types = append(types, orig[i])
		reversed = append(reversed, fmt.Sprintf("gpu:%s:%d", orig[i].typ, orig[i].count))
	}
	return types, "NodeName=" + host + " Gres=" + strings.Join(reversed, ",")
}

// slurmdIndexUUIDs numbers the devices as slurmd does, by asking it
// (`slurmd -G` prints the records in its index order), and gives each
// index the UUID the node's model has for its files.
func slurmdIndexUUIDs(t *testing.T, conf string, node *model.Node, devDir string) (map[int]string, map[string]string) {
	t.Helper()
	byFiles := map[string]string{}
	capOf := map[string]string{}
	for _, g := range node.GPUs {
		if !g.MigEnabled {
			byFiles[g.DevicePath()] = g.UUID
			capOf[g.UUID] = g.DevicePath()
			continue
		}
		for _, m := range g.MigDevices {
			ci := model.CapPath(*m.CICapMinor)
			byFiles[ci] = m.UUID
			byFiles[g.DevicePath()+","+model.CapPath(*m.GICapMinor)+","+ci] = m.UUID
			capOf[m.UUID] = ci
		}
	}
	uuidAt := map[int]string{}
	for i, u := range units(t, slurmdRecords(t, conf)) {
		uuid, ok := byFiles[strings.ReplaceAll(u, devDir+"/dev/", "/dev/")]
		if !ok {
			t.Fatalf("slurmd -G index %d is %s, no device of the node", i, u)
		}
		uuidAt[i] = uuid
	}
	return uuidAt, capOf
}

// taskReport is the line each task prints (see reportTask).
type taskReport struct {
	cvd, step, job, ordinal string
	idx                     []int           // the job's IDX: from scontrol show job -d
	open                    map[string]bool // device files the task may open
}

// reportTask is a shell command that prints, from inside a task, what
// the checks read: the GPU variables ("-" when unset), the job's IDX:
// (the pattern does not match itself: 26.05 shows the job's command,
// this script, too) and, with probe, which of the node's device files under devDir the
// task may open (a fake device node the cgroup allows fails with "No
// such device", one it denies with "Operation not permitted").
func reportTask(devDir string, probe bool) string {
	open := ""
	if probe {
		open = `$(for f in ` + devDir + `/dev/nvidia[0-9]* ` + devDir + `/dev/nvidia-caps/nvidia-cap*; do ` +
			`dd if=$f of=/dev/null count=0 2>&1 | grep -q 'not permitted' || printf '%s;' ${f#` + devDir + `}; done)`
	}
	return `printf 'REPORT cvd=%s step=%s job=%s ord=%s idx=%s open=%s\n' ` +
		`"${CUDA_VISIBLE_DEVICES--}" "${SLURM_STEP_GPUS--}" "${SLURM_JOB_GPUS--}" "${GPU_DEVICE_ORDINAL--}" ` +
		`"$(scontrol show job -d $SLURM_JOB_ID | grep -o 'IDX:[0-9][^)]*' | tr '\n' ';')" "` + open + `"`
}

func (s *taskPrologCluster) check() {
	t := s.t
	multi := typeCount{}
	for _, tc := range s.types {
		n := min(tc.count, 2)
		reports := s.srunReports("--gres=gpu:"+tc.typ+":"+strconv.Itoa(n), "-n1")
		if len(reports) != 1 {
			t.Fatalf("srun --gres=gpu:%s:%d: %d task reports, want 1", tc.typ, n, len(reports))
		}
		r := reports[0]
		s.checkTask("srun gpu:"+tc.typ, r, r.step)
		if got := indices(t, r.step); !equalInts(got, r.idx) || len(got) != n {
			t.Errorf("srun --gres=gpu:%s:%d: SLURM_STEP_GPUS=%s, IDX:%v", tc.typ, n, r.step, r.idx)
		}
		if tc.count >= 2 && multi.typ == "" {
			multi = tc
		}
	}
	if multi.typ != "" {
		// Two tasks bound to one GPU each: each sees only its own.
		reports := s.srunReports("--gres=gpu:"+multi.typ+":2", "-n2", "--gpu-bind=single:1")
		if len(reports) != 2 {
			t.Fatalf("srun -n2 --gpu-bind=single:1: %d task reports, want 2", len(reports))
		}
		var union []int
		for _, r := range reports {
			list := r.step
			if s.cgroups {
				// Slurm names the step's first GPU in every task's
				// SLURM_STEP_GPUS here (see jobenv.Lines); the cgroup
				// says which the task has.
				list = s.grantedIndices(r)
			}
			s.checkTask("srun -n2 --gpu-bind=single:1", r, list)
			if len(indices(t, list)) != 1 {
				t.Errorf("srun -n2 --gpu-bind=single:1: a task has GPUs %s (SLURM_STEP_GPUS=%s), want one", list, r.step)
			}
			union = append(union, indices(t, list)...)
		}
		sort.Ints(union)
		if !equalInts(union, reports[0].idx) {
			t.Errorf("srun -n2 --gpu-bind=single:1: tasks have %v, the job IDX:%v", union, reports[0].idx)
		}
	}
	s.checkBatch()
	s.checkFailsClosed()
	env, _ := os.ReadFile(filepath.Join(s.dir, "taskenv.log"))
	t.Logf("what Slurm set before the TaskProlog:\n%s", env)
}

// checkFailsClosed takes the device state away: a GPU task must then
// not run at all (Slurm kills it: "TaskProlog failed"), and a task
// without GPUs must run as before.
// checkDeviceNumbers: before 21.08 Slurm puts in SLURM_STEP_GPUS (and
// CUDA_VISIBLE_DEVICES) the number at the end of each device's file
// (dev_num: 202 for nvidia-cap202), not its GRES index (0ebfd37834, "GPUs:
// Use index instead of dev_num for CUDA_VISIBLE_DEVICES"), so slurm-mig
// env, which maps GRES indices, is for 21.08 and later.
func (s *taskPrologCluster) checkDeviceNumbers() {
	t := s.t
	numbers := map[int]bool{}
	for _, dir := range []string{"dev", "dev/nvidia-caps"} {
		entries, err := os.ReadDir(filepath.Join(s.devDir, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			// nvidiaN in dev, nvidia-capN in dev/nvidia-caps.
			digits, ok := strings.CutPrefix(e.Name(), "nvidia-cap")
			if !ok {
				digits = strings.TrimPrefix(e.Name(), "nvidia")
			}
			if n, err := strconv.Atoi(digits); err == nil {
				numbers[n] = true
			}
		}
	}
	differs := false
	for _, tc := range s.types {
		r := s.srunReports("--gres=gpu:"+tc.typ+":1", "-n1")
		if len(r) != 1 {
			t.Fatalf("srun --gres=gpu:%s:1: %d task reports, want 1", tc.typ, len(r))
		}
		got := indices(t, r[0].step)
		for _, n := range got {
			if !numbers[n] {
				t.Errorf("srun --gres=gpu:%s:1: SLURM_STEP_GPUS=%s: %d ends no device file of the node", tc.typ, r[0].step, n)
			}
		}
		differs = differs || !equalInts(got, r[0].idx)
	}
	mig := false // a MIG device's number (its CI cap's) is no index
	for _, file := range s.capOf {
		mig = mig || strings.Contains(file, "nvidia-caps")
	}
	if mig && !differs {
		t.Errorf("SLURM_STEP_GPUS was the GRES index (IDX) of every type: Slurm %s maps indices as 21.08 does?", release)
	}
}

func (s *taskPrologCluster) checkFailsClosed() {
	t := s.t
	state := filepath.Join(s.dir, "devices.json")
	if err := os.Rename(state, state+".away"); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(state+".away", state)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.command(ctx, "srun", "--immediate=10", "-N1", "-n1", "--gres=gpu:"+s.types[0].typ+":1", "sh", "-c", "echo RAN").CombinedOutput()
	if release.Before(taskPrologFailsTaskSince) {
		t.Run("task-runs-anyway-before-"+taskPrologFailsTaskSince.String(), func(t *testing.T) {
			if !strings.Contains(string(out), "RAN") {
				t.Errorf("srun with no device state: %v\n%s\nwant the task run: Slurm %s ignores the TaskProlog's exit status", err, out, release)
			}
		})
	} else {
		if err == nil || strings.Contains(string(out), "RAN") {
			t.Errorf("srun with no device state: %v\n%s\nwant the task killed before it runs", err, out)
		}
		// The failure this test makes is an error: line of slurmd's.
		s.expectLog("slurmd", regexp.MustCompile(`error: TaskProlog failed status=`))
	}
	out, err = s.command(ctx, "srun", "--immediate=10", "-N1", "-n1", "sh", "-c", "echo RAN").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "RAN") {
		t.Errorf("srun without GPUs and with no device state: %v\n%s\nwant it to run", err, out)
	}
}

// checkBatch runs a batch job with a GPU step and a --gres=none step.
func (s *taskPrologCluster) checkBatch() {
	t := s.t
	tc := s.types[0]
	for _, c := range s.types {
		if c.count >= 2 {
			tc = c
			break
		}
	}
	n := min(tc.count, 2)
	out := filepath.Join(s.dir, "batch.out")
	script := filepath.Join(s.dir, "batch.sh")
	report := reportTask(s.devDir, s.cgroups)
	quoted := "'" + strings.ReplaceAll(report, "'", `'\''`) + "'"
	body := "#!/bin/sh\n" + report + "\n" +
		"srun -n1 --gres=gpu:" + tc.typ + ":1 sh -c " + quoted + "\n" +
		"srun -n1 --gres=none sh -c " + quoted + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := s.command(ctx, "sbatch", "--wait", "-N1", "-n1", "--gres=gpu:"+tc.typ+":"+strconv.Itoa(n), "-o", out, script)
	if msg, err := cmd.CombinedOutput(); err != nil {
		data, _ := os.ReadFile(out)
		lg, _ := os.ReadFile(filepath.Join(s.dir, "slurmd.log"))
		t.Fatalf("sbatch: %v\n%s\n%s\n%s\n%s", err, msg, data, s.logs(), lg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	reports := parseReports(t, string(data))
	t.Logf("batch job's tasks:\n%s", data)
	if len(reports) != 3 {
		t.Fatalf("batch job printed %d task reports, want 3 (batch step, GPU step, --gres=none step):\n%s", len(reports), data)
	}
	batch, step, none := reports[0], reports[1], reports[2]
	if batch.step != "-" || !equalInts(indices(t, batch.job), batch.idx) || len(batch.idx) != n {
		t.Errorf("batch step: SLURM_STEP_GPUS=%s SLURM_JOB_GPUS=%s IDX:%v", batch.step, batch.job, batch.idx)
	}
	s.checkTask("batch step", batch, batch.job)
	s.checkTask("GPU step in a batch job", step, step.step)
	if got := indices(t, step.step); len(got) != 1 || !subset(got, step.idx) {
		t.Errorf("GPU step in a batch job: SLURM_STEP_GPUS=%s, job IDX:%v", step.step, step.idx)
	}
	if strings.Contains(none.cvd, "GPU-") || strings.Contains(none.cvd, "MIG-") || none.step != "-" {
		t.Errorf("srun --gres=none in a GPU job: CUDA_VISIBLE_DEVICES=%s SLURM_STEP_GPUS=%s, want no UUID and no step GPUs", none.cvd, none.step)
	}
	if none.job == "-" {
		t.Errorf("srun --gres=none in a GPU job: SLURM_JOB_GPUS unset; the case env must leave alone has it inherited")
	}
}

// checkTask checks one task's CUDA_VISIBLE_DEVICES against the UUIDs of
// the indices list (its SLURM_STEP_GPUS or SLURM_JOB_GPUS), and under
// cgroups that the device cgroup grants each of them.
func (s *taskPrologCluster) checkTask(what string, r taskReport, list string) {
	t := s.t
	t.Helper()
	var want []string
	for _, i := range indices(t, list) {
		want = append(want, s.uuidAt[i])
	}
	if got := r.cvd; got != strings.Join(want, ",") {
		t.Errorf("%s: CUDA_VISIBLE_DEVICES=%s for indices %s, want %s", what, got, list, strings.Join(want, ","))
	}
	if r.ordinal != "-" {
		t.Errorf("%s: GPU_DEVICE_ORDINAL=%s, want it unset (it holds GRES indices, no device numbers)", what, r.ordinal)
	}
	if !s.cgroups {
		return
	}
	granted := map[string]bool{}
	for _, u := range want {
		granted[s.capOf[u]] = true
		if !r.open[s.capOf[u]] {
			t.Errorf("%s: the device cgroup denies %s, the device of %s in CUDA_VISIBLE_DEVICES=%s", what, s.capOf[u], u, r.cvd)
		}
	}
	for _, file := range s.capOf {
		if r.open[file] && !granted[file] {
			t.Errorf("%s: the device cgroup grants %s, which is not in CUDA_VISIBLE_DEVICES=%s", what, file, r.cvd)
		}
	}
}

// grantedIndices lists the indices whose device the task's cgroup grants.
func (s *taskPrologCluster) grantedIndices(r taskReport) string {
	var list []string
	for i := 0; i < len(s.uuidAt); i++ {
		if r.open[s.capOf[s.uuidAt[i]]] {
			list = append(list, strconv.Itoa(i))
		}
	}
	return strings.Join(list, ",")
}

// srunReports runs reportTask in a job with args and returns each task's
// report.
func (s *taskPrologCluster) srunReports(args ...string) []taskReport {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append(append([]string{"--immediate=10", "-N1"}, args...), "sh", "-c", reportTask(s.devDir, s.cgroups))
	out, err := s.command(ctx, "srun", args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("srun %s: %v\n%s\n%s", strings.Join(args, " "), err, out, s.logs())
	}
	return parseReports(s.t, string(out))
}

func parseReports(t *testing.T, out string) []taskReport {
	t.Helper()
	var reports []taskReport
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "REPORT ")
		if !ok {
			continue
		}
		var r taskReport
		for _, w := range strings.Fields(rest) {
			k, v, _ := strings.Cut(w, "=")
			switch k {
			case "cvd":
				r.cvd = v
			case "step":
				r.step = v
			case "job":
				r.job = v
			case "ord":
				r.ordinal = v
			case "open":
				r.open = map[string]bool{}
				for _, f := range strings.Split(v, ";") {
					r.open[f] = f != ""
				}
			case "idx":
				for _, part := range strings.Split(strings.TrimSuffix(v, ";"), ";") {
					names, err := slurmconf.ExpandHostlist("[" + strings.TrimPrefix(part, "IDX:") + "]")
					if err != nil {
						t.Fatalf("IDX in %q: %v", line, err)
					}
					for _, n := range names {
						i, _ := strconv.Atoi(n)
						r.idx = append(r.idx, i)
					}
				}
				sort.Ints(r.idx)
			}
		}
		reports = append(reports, r)
	}
	return reports
}

// indices reads a SLURM_*_GPUS value; "-" (unset) is none.
func indices(t *testing.T, list string) []int {
	t.Helper()
	if list == "-" || list == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		i, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("GPU index list %q: %v", list, err)
		}
		out = append(out, i)
	}
	return out
}

func equalInts(a, b []int) bool {
	a, b = append([]int(nil), a...), append([]int(nil), b...)
	sort.Ints(a)
	sort.Ints(b)
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func subset(a, b []int) bool {
	in := map[int]bool{}
	for _, x := range b {
		in[x] = true
	}
	for _, x := range a {
		if !in[x] {
			return false
		}
	}
	return true
}
