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
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// TestJobmap runs the shipped Prolog and Epilog (scripts/jobmap) in a
// cluster: while two jobs run side by side, each of the two job maps
// holds, in the file of each of its devices, the job's line (dcgm's
// <index>[.<gi>] files, the job id; jobstats' <index> and MIG-<UUID>,
// "JOBID UID"); once a job has ended its lines are gone and the other's
// stay; once both have, the maps are empty. A job of two GPU types is
// mapped whole: its Prolog asks slurmctld for the indices Slurm leaves
// out of SLURM_JOB_GPUS. Which device each job has comes from slurmd (`scontrol show
// job -d`'s IDX:, numbered by `slurmd -G`) and the node's model, not from
// slurm-mig's own index map; slurm.conf lists the types in another order
// than gres.conf. One cluster, kept lean: the TaskProlog tests cover the
// other layouts and forms of the same index map.
func TestJobmap(t *testing.T) {
	requireCluster(t)
	host := shortHostname(t)
	var l layout
	for _, x := range loadLayouts(t, host) {
		if x.name == "env.txtar/node.json" { // whole GPUs, two CIs of one GI, a 1g device
			l = x
		}
	}
	if l.node == nil {
		t.Fatal("no layout env.txtar/node.json")
	}
	devDir := t.TempDir()
	makeDevices(t, devDir, l.node)
	copyMigMinors(t, l.root, devDir)
	f := form{"model", "multiple", false}
	if refusal(t, l, f, host) != nil {
		f = form{"profile", "ci", false} // 20.11: MIG devices may not share their GPU's file
	}
	gres, nodeLine := render(t, l, f, host)
	types, nodeLine := reverseTypes(t, nodeLine, host)
	nodeLine += " RealMemory=2" // MB: two jobs of 1 run side by side (the default, 1, fits one)

	dir := shortTempDir(t)
	state := filepath.Join(dir, "devices.json")
	runSlurmMig(t, "--root", devDir, "state", "--from", l.snapshot, "--node-name", host, "--state", state)
	mapDir := filepath.Join(dir, "run", "jobmap") // made by the first Prolog
	var scripts []string
	for _, name := range []string{"prolog.sh", "epilog.sh"} {
		data, err := os.ReadFile(filepath.Join(fixture.Root(t), "scripts/jobmap", name))
		if err != nil {
			t.Fatal(err)
		}
		script := strings.ReplaceAll(string(data), "/usr/local/bin/slurm-mig jobmap",
			nodeCommand(slurmMig)+" --root "+devDir+" jobmap --state "+state)
		script = strings.ReplaceAll(script, "/run/slurm-mig/jobmap-dcgm", filepath.Join(mapDir, "dcgm"))
		script = strings.ReplaceAll(script, "/run/gpustat", filepath.Join(mapDir, "gpustat"))
		// What Slurm set, for the test's log.
		script = strings.Replace(script, "\n", fmt.Sprintf("\n{ echo %s; env | grep -E '^(SLURM|CUDA|GPU)' | sort; } | tr '\\n' ' ' >> %s/jobmap.log; echo >> %s/jobmap.log\n", name, dir, dir), 1)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, path)
	}
	conf := slurmConf(dir, host, nodeLine, hardware(t), freePorts(t)) + "Prolog=" + scripts[0] + "\nEpilog=" + scripts[1] + "\n"
	path := writeConfigs(t, dir, forThisMachine(gres, devDir), conf)
	uuidIdx, _ := slurmdIndexUUIDs(t, path, l.node, devDir)
	uuidAt := mapFiles(l.node, uuidIdx)
	cl := startClusterIn(t, dir, host, path)
	t.Cleanup(func() {
		env, _ := os.ReadFile(filepath.Join(dir, "jobmap.log"))
		t.Logf("what Slurm set for the Prolog and Epilog:\n%s", env)
	})
	if node := cl.waitNode(registered, "to register"); node.state != "IDLE" {
		t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", host, node.state, node.reason, cl.logs())
	}

	// Job a: two devices of the type slurm.conf names first with two
	// (two CIs of one GI); job b: a whole GPU; later job c: one device of
	// each of two types.
	var a, b, c3 string
	for _, tc := range types {
		mig := strings.Contains(tc.typ, ".")
		switch {
		case a == "" && tc.count >= 2 && mig:
			a = "gpu:" + tc.typ + ":2"
		case b == "" && !mig:
			b = "gpu:" + tc.typ + ":1"
		}
	}
	for _, tc := range types {
		if tc.count == 1 {
			c3 = "gpu:" + tc.typ + ":1," + b
		}
	}
	if a == "" || b == "" || c3 == "" {
		t.Fatalf("types %v: want a MIG type with two devices, a whole GPU and a type with one", types)
	}
	if release.Before(gresIndexEnvSince) {
		cl.checkBefore2108(a, devDir, mapDir)
		return
	}
	jobA, jobB := cl.startJob(a), cl.startJob(b)
	want := map[string][]string{}
	cl.addJob(want, jobA, uuidAt)
	cl.addJob(want, jobB, uuidAt)
	cl.waitMap(mapDir, want, "jobs "+jobA+" and "+jobB+" run")
	cl.endJob(jobA)
	want = map[string][]string{}
	cl.addJob(want, jobB, uuidAt)
	cl.waitMap(mapDir, want, "job "+jobA+" ended")

	// A job of two types: Slurm gives the Prolog and the Epilog the
	// indices of one type only in SLURM_JOB_GPUS, each type's overwriting
	// the one before (gres_common_prep_set_env), and nothing else in
	// their environment says so. The node has several types, so jobmap
	// asks slurmctld (scontrol show job -d) and maps the job whole.
	jobC := cl.startJob(c3)
	all := map[string][]string{}
	cl.addJob(all, jobC, uuidAt)
	for f, lines := range want {
		all[f] = append(all[f], lines...)
	}
	prologGPUs := cl.scriptVar("prolog.sh", jobC, "SLURM_JOB_GPUS")
	cl.waitMap(mapDir, all, "job "+jobC+" ("+c3+") runs beside job "+jobB)
	shown := cl.jobState(jobC)
	cl.endJob(jobC)
	cl.waitMap(mapDir, want, "job "+jobC+" ended")
	cl.endJob(jobB)
	cl.waitMap(mapDir, map[string][]string{}, "every job ended")
	t.Logf("scontrol show job -d -o %s:\n%s", jobC, shown)
	Announce("slurmtest: jobmap Prolog/Epilog: each job's line in both maps (dcgm, jobstats) while it ran (%s; %s), gone after it ended; %s: SLURM_JOB_GPUS=%s of IDX:%v in the Prolog, mapped whole (%d files) from scontrol show job -d", a, b, c3, prologGPUs, cl.jobIndicesOf(shown), len(all)-len(want))
}

// scriptVar is the value of a variable in the environment Slurm gave
// the script (prolog.sh, epilog.sh) of job, from the test's log.
func (c *cluster) scriptVar(script, job, name string) string {
	c.t.Helper()
	log, _ := os.ReadFile(filepath.Join(c.dir, "jobmap.log"))
	for _, l := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(l, script+" ") && strings.Contains(l, " SLURM_JOB_ID="+job+" ") {
			if m := regexp.MustCompile(` ` + name + `=(\S*) `).FindStringSubmatch(l); m != nil {
				return m[1]
			}
		}
	}
	return "(unset)"
}

// mapFiles names the file of each of slurmd's indices in each map,
// "dcgm/<file>" and "gpustat/<file>": NVML's index, and for a MIG device
// its GPU instance id (dcgm) or its UUID (jobstats).
func mapFiles(node *model.Node, uuidAt map[int]string) map[int][2]string {
	byUUID := map[string][2]string{}
	for _, g := range node.GPUs {
		idx := strconv.Itoa(g.Index)
		if !g.MigEnabled {
			byUUID[g.UUID] = [2]string{"dcgm/" + idx, "gpustat/" + idx}
		}
		for _, m := range g.MigDevices {
			byUUID[m.UUID] = [2]string{"dcgm/" + idx + "." + strconv.Itoa(m.GPUInstanceID), "gpustat/" + m.UUID}
		}
	}
	out := map[int][2]string{}
	for i, u := range uuidAt {
		out[i] = byUUID[u]
	}
	return out
}

// checkBefore2108: before 21.08 Slurm gives the Prolog no
// SLURM_JOB_GPUS at all (20.11.4 seen), and in its CUDA_VISIBLE_DEVICES
// the number that ends each device's file (157 for nvidia-cap157), not
// the GRES index, as in a task's SLURM_STEP_GPUS. jobmap, which maps GRES
// indices as env does, is for 21.08 and later; before, it sees no GPUs
// and leaves the map alone, and the job runs.
func (c *cluster) checkBefore2108(gres, devDir, mapDir string) {
	c.t.Helper()
	job := c.startJob(gres)
	idx := c.jobIndices(job)
	log, _ := os.ReadFile(filepath.Join(c.dir, "jobmap.log"))
	var line string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(l, "prolog.sh ") && strings.Contains(l, " SLURM_JOB_ID="+job+" ") {
			line = l
		}
	}
	if m := regexp.MustCompile(` SLURM_JOB_GPUS=(\S+) `).FindStringSubmatch(line); m != nil {
		c.t.Errorf("job %s (%s): Slurm %s sets SLURM_JOB_GPUS=%s in the Prolog (IDX:%v): jobmap reads it as GRES indices", job, gres, release, m[1], idx)
	}
	m := regexp.MustCompile(` CUDA_VISIBLE_DEVICES=(\S+) `).FindStringSubmatch(line)
	if m == nil {
		c.t.Fatalf("job %s: no CUDA_VISIBLE_DEVICES in the Prolog's log:\n%s", job, log)
	}
	var numbers []int
	for _, f := range strings.Split(m[1], ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			c.t.Fatalf("job %s: CUDA_VISIBLE_DEVICES=%s", job, m[1])
		}
		numbers = append(numbers, n)
		if _, err := os.Stat(filepath.Join(devDir, "dev/nvidia-caps/nvidia-cap"+f)); err != nil {
			c.t.Errorf("job %s (%s): CUDA_VISIBLE_DEVICES=%s: %d ends no cap file of the node", job, gres, m[1], n)
		}
	}
	if equalInts(numbers, idx) {
		c.t.Errorf("job %s (%s): CUDA_VISIBLE_DEVICES=%s is its IDX:%v: Slurm %s numbers as 21.08 does?", job, gres, m[1], idx, release)
	}
	if got := readJobMap(mapDir); len(got) != 0 {
		c.t.Errorf("job %s: the map holds %v; jobmap saw no GPUs", job, got)
	}
	c.endJob(job)
	Announce("slurmtest: jobmap: Slurm %s gives the Prolog no SLURM_JOB_GPUS and device numbers in CUDA_VISIBLE_DEVICES (%s for IDX:%v); jobmap, for %s and later, leaves the map alone", release, m[1], idx, gresIndexEnvSince)
}

// addJob adds to m the job's line in the file of each of its devices in
// both maps: which, from its IDX: and slurmd's numbering (fileAt). Two
// CIs of one GPU instance are one dcgm file, with one line.
func (c *cluster) addJob(m map[string][]string, job string, fileAt map[int][2]string) {
	c.t.Helper()
	seen := map[string]bool{}
	for _, i := range c.jobIndices(job) {
		files, ok := fileAt[i]
		if !ok {
			c.t.Fatalf("job %s has GPU index %d, which slurmd -G does not number", job, i)
		}
		if !seen[files[0]] {
			seen[files[0]] = true
			m[files[0]] = append(m[files[0]], job)
		}
		m[files[1]] = append(m[files[1]], job+" 0") // the jobs run as root
	}
}

// startJob submits a batch job asking for gres that runs until endJob,
// and returns its id once it runs: after the Prolog, which Slurm runs
// before the batch script.
func (c *cluster) startJob(gres string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := `touch started.$SLURM_JOB_ID; while [ ! -e end.$SLURM_JOB_ID ]; do sleep 0.1; done`
	out, err := c.command(ctx, "sbatch", "--parsable", "-N1", "-n1", "--mem=1", "--gres="+gres, "-o", "/dev/null", "--chdir", c.dir, "--wrap", script).CombinedOutput()
	job := strings.TrimSpace(string(out))
	if err != nil || job == "" {
		c.t.Fatalf("sbatch --gres=%s: %v\n%s\n%s", gres, err, out, c.logs())
	}
	job, _, _ = strings.Cut(job, ";") // id;cluster
	c.waitFor("job "+job+" ("+gres+") to start", func() (bool, string) {
		_, err := os.Stat(filepath.Join(c.dir, "started."+job))
		return err == nil, c.jobState(job)
	})
	return job
}

// endJob lets the job's script end, and waits until the job has
// completed, its Epilog run.
func (c *cluster) endJob(job string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "end."+job), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.waitFor("job "+job+" to complete", func() (bool, string) {
		line := c.jobState(job)
		return field(line, "JobState") == "COMPLETED", line
	})
}

// jobState is `scontrol show job -d -o JOB`.
func (c *cluster) jobState(job string) string {
	out, _ := c.command(context.Background(), "scontrol", "show", "job", "-d", "-o", job).CombinedOutput()
	return strings.TrimSpace(string(out))
}

var idxRe = regexp.MustCompile(`IDX:([0-9][0-9,-]*)`)

// jobIndices are the job's GPU indices on the node, as slurmctld shows
// them (GRES=gpu:a100:1(IDX:3),gpu:...(IDX:0-1)).
func (c *cluster) jobIndices(job string) []int {
	c.t.Helper()
	return c.jobIndicesOf(c.jobState(job))
}

// jobIndicesOf reads the IDX: of `scontrol show job -d -o`'s line.
func (c *cluster) jobIndicesOf(line string) []int {
	c.t.Helper()
	job := field(line, "JobId")
	var out []int
	for _, m := range idxRe.FindAllStringSubmatch(line, -1) {
		for _, r := range strings.Split(m[1], ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			first, err := strconv.Atoi(lo)
			last := first
			if err == nil && isRange {
				last, err = strconv.Atoi(hi)
			}
			if err != nil {
				c.t.Fatalf("job %s: IDX:%s: %v", job, m[1], err)
			}
			for i := first; i <= last; i++ {
				out = append(out, i)
			}
		}
	}
	if len(out) == 0 {
		c.t.Fatalf("job %s shows no IDX:\n%s", job, line)
	}
	return out
}

// waitMap waits until the job map holds exactly want: the lines of each
// file, sorted, by file name.
func (c *cluster) waitMap(dir string, want map[string][]string, when string) {
	c.t.Helper()
	for _, lines := range want {
		sort.Strings(lines)
	}
	c.waitFor("the job map once "+when+" to be "+fmt.Sprint(want), func() (bool, string) {
		got := readJobMap(dir)
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
}

// readJobMap reads the job maps under dir (dcgm/, gpustat/): each file's
// lines, sorted, by "map/name"; a missing directory is an empty map, a
// file that cannot be read holds the error.
func readJobMap(dir string) map[string][]string {
	got := map[string][]string{}
	for _, sub := range []string{"dcgm", "gpustat"} {
		entries, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range entries {
			name := sub + "/" + e.Name()
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				got[name] = []string{err.Error()}
				continue
			}
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			sort.Strings(lines)
			got[name] = lines
		}
	}
	return got
}
