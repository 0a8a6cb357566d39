package jobmap

// The job map read as the exporters read it. Their reading code is
// restated here, rule for rule, from their sources (docs/jobmap.md quotes
// the releases), and the directory jobmap writes is read through it: every
// device of every job must carry exactly that job, and nothing else any.

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// metric is what an exporter labels: a device as its metrics name it.
// For dcgm-exporter a whole GPU's metric has gpu (DCGM's GPU id, NVML's
// index) and no MIG profile; a MIG device's has its GPU's gpu, a profile
// and GPU_I_ID. jobstats' exporter names the same by ordinal (NVML's
// index), UUID and, for a MIG device, its GPU instance id.
type metric struct {
	GPU           string // gpu / ordinal
	GPUInstanceID string // GPU_I_ID; "" for a whole GPU
	MigProfile    string // "" for a whole GPU (and a GPU in MIG mode)
	UUID          string // GPU-... or MIG-...
}

func (m metric) String() string {
	if m.MigProfile == "" {
		return "gpu=" + m.GPU
	}
	return "gpu=" + m.GPU + ",GPU_I_ID=" + m.GPUInstanceID
}

// dcgmHPCMapper restates dcgm-exporter's hpcMapper
// (internal/pkg/transformation/hpc.go, release 4.5.3-4.8.2, with its
// #602): getGPUFiles takes the directory's entries that are not
// directories and whose names match ^\d+(\.\d+)?$; readFile makes each
// line (bufio.Scanner) one job; Process keys a metric by
// "<gpu>.<GPU_I_ID>" when it has a MIG profile, else by "<gpu>", and
// turns a metric with jobs into one copy per job, each with
// hpc_job=<the line>. It returns the hpc_job labels of each metric
// (none: the metric is left unlabelled).
func dcgmHPCMapper(t *testing.T, dir string, metrics []metric) map[metric][]string {
	t.Helper()
	validGPUFile := regexp.MustCompile(`^\d+(\.\d+)?$`)
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	gpuToJobMap := map[string][]string{}
	for _, file := range files {
		finfo, err := file.Info()
		if err != nil || finfo.IsDir() || !validGPUFile.MatchString(file.Name()) {
			continue
		}
		f, err := os.Open(path.Join(dir, file.Name()))
		if err != nil {
			t.Fatal(err)
		}
		scanner := bufio.NewScanner(f)
		for scanner.Scan() {
			gpuToJobMap[file.Name()] = append(gpuToJobMap[file.Name()], scanner.Text())
		}
		f.Close()
	}
	out := map[metric][]string{}
	for _, m := range metrics {
		key := m.GPU
		if m.MigProfile != "" {
			key = fmt.Sprintf("%s.%s", m.GPU, m.GPUInstanceID)
		}
		if jobs := gpuToJobMap[key]; len(jobs) != 0 {
			out[m] = append([]string(nil), jobs...)
		}
	}
	return out
}

// dcgmHPCMapperOld restates the mapper of dcgm-exporter before #602
// (4.5.2-4.8.1 and earlier): a file's name must be a number
// (strconv.Atoi), and every metric is keyed by its gpu alone.
func dcgmHPCMapperOld(t *testing.T, dir string, metrics []metric) map[metric][]string {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	gpuToJobMap := map[string][]string{}
	for _, file := range files {
		if _, err := strconv.Atoi(file.Name()); err != nil || file.IsDir() {
			continue
		}
		data, err := os.ReadFile(path.Join(dir, file.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			gpuToJobMap[file.Name()] = append(gpuToJobMap[file.Name()], sc.Text())
		}
	}
	out := map[metric][]string{}
	for _, m := range metrics {
		if jobs := gpuToJobMap[m.GPU]; len(jobs) != 0 {
			out[m] = jobs
		}
	}
	return out
}

// jobstatsExporter restates the job lookup of Princeton's jobstats GPU
// exporter (plazonic/nvidia_gpu_prometheus_exporter main.go, v0.2.2 and
// its master of May 2026): the file is /run/gpustat/<UUID> (GPU-... or
// MIG-...), else, where that does not exist, <ordinal>.<GPU instance id>
// for a MIG device and <ordinal> for a GPU; its content, trimmed, split
// at blanks, is "JOBID" or "JOBID UID" (more fields: "Invalid content",
// no job); the fmt.Sscanf("%d %d") that follows scans into strings and
// changes nothing. A jobid that parses as a number labels the metric
// (jobid=, userid=). It returns "JOBID UID" per labelled metric.
func jobstatsExporter(t *testing.T, dir string, metrics []metric) map[metric]string {
	t.Helper()
	out := map[metric]string{}
	for _, m := range metrics {
		slurmInfo := filepath.Join(dir, m.UUID)
		if _, err := os.Stat(slurmInfo); err != nil {
			if m.GPUInstanceID != "" {
				slurmInfo = filepath.Join(dir, m.GPU+"."+m.GPUInstanceID)
			} else {
				slurmInfo = filepath.Join(dir, m.GPU)
			}
			if _, err := os.Stat(slurmInfo); err != nil {
				continue
			}
		}
		content, err := os.ReadFile(slurmInfo)
		if err != nil {
			continue
		}
		var jobID, jobUID string
		jobUser := strings.Split(strings.TrimSpace(string(content)), " ")
		if len(jobUser) <= 2 {
			jobID = jobUser[0]
			if len(jobUser) == 2 {
				jobUID = jobUser[1]
			}
		}
		if jobID == "" {
			continue
		}
		if _, err := strconv.ParseFloat(jobID, 64); err == nil {
			out[m] = strings.TrimSpace(jobID + " " + jobUID)
		}
	}
	return out
}

// jobstatsExporterOld restates v0.2.0 (January 2025): a MIG device has no
// ordinal, so only /run/gpustat/MIG-<UUID> is read for it; a GPU's file is
// GPU-<UUID>, else <ordinal>; fmt.Sscanf(content, "%d %d") reads the job
// id and uid, as integers, from the start of the file. A job id of 0
// is none.
func jobstatsExporterOld(t *testing.T, dir string, metrics []metric) map[metric]string {
	t.Helper()
	out := map[metric]string{}
	for _, m := range metrics {
		slurmInfo := filepath.Join(dir, m.UUID)
		if _, err := os.Stat(slurmInfo); err != nil {
			if m.MigProfile != "" {
				continue
			}
			slurmInfo = filepath.Join(dir, m.GPU)
			if _, err := os.Stat(slurmInfo); err != nil {
				continue
			}
		}
		content, err := os.ReadFile(slurmInfo)
		if err != nil {
			continue
		}
		var jobID, jobUID int64
		fmt.Sscanf(string(content), "%d %d", &jobID, &jobUID)
		if jobID != 0 {
			out[m] = fmt.Sprintf("%d %d", jobID, jobUID)
		}
	}
	return out
}

// The exporters' node: NVML's GPU 0 (/dev/nvidia1) in MIG mode with GPU
// instance 1 split into two compute instances and two 1g instances 7
// and 8; GPU 1 (/dev/nvidia0) whole; GPU 2 (/dev/nvidia3) in MIG mode
// with 3g instances 3 and 4; GPU 3 (/dev/nvidia2) whole. Slurm numbers
// 0-1 the two CIs of GI 1, 2-3 the 1g devices, 4-5 the 3g ones, 6-7 the
// whole GPUs.
const (
	exporterGres = `Name=gpu Type=1c.3g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22
Name=gpu Type=1c.3g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap23
Name=gpu Type=1g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap84,/dev/nvidia-caps/nvidia-cap85
Name=gpu Type=1g MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap93,/dev/nvidia-caps/nvidia-cap94
Name=gpu Type=3g MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap300,/dev/nvidia-caps/nvidia-cap301
Name=gpu Type=3g MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap309,/dev/nvidia-caps/nvidia-cap310
Name=gpu Type=a100 File=/dev/nvidia[0,2]
`
	exporterSlurmConf = "GresTypes=gpu\nNodeName=n1 CPUs=8 Gres=gpu:1c.3g:2,gpu:1g:2,gpu:3g:2,gpu:a100:2\n"
)

// exporterMetrics are the node's metrics as each exporter names them: a
// GPU-level metric of every GPU (those in MIG mode too, which no job has
// whole) and one per GPU instance; atIndex is the metric of each Slurm
// index, worked out here from the layout above, apart from jobmap.
func exporterNode(t *testing.T) (opts jobenv.Options, metrics []metric, atIndex []metric) {
	t.Helper()
	dir := t.TempDir()
	migd := func(uuidN, gi, ci int, giCap, ciCap uint32) model.MigDevice {
		m := mig(uuidN, gi, giCap, ciCap)
		m.ComputeInstanceID = ci
		return m
	}
	n := &model.Node{GPUs: []model.GPU{
		{Index: 1, Minor: 0, UUID: uuid("GPU", 10)},
		{Index: 0, Minor: 1, UUID: uuid("GPU", 11), MigEnabled: true, MigDevices: []model.MigDevice{
			migd(110, 1, 0, 21, 22), migd(111, 1, 1, 21, 23), migd(170, 7, 0, 84, 85), migd(180, 8, 0, 93, 94)}},
		{Index: 3, Minor: 2, UUID: uuid("GPU", 12)},
		{Index: 2, Minor: 3, UUID: uuid("GPU", 13), MigEnabled: true, MigDevices: []model.MigDevice{
			migd(330, 3, 0, 300, 301), migd(340, 4, 0, 309, 310)}},
	}}
	st, err := jobenv.NewState(n, "n1", "", "test")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"slurm.conf": exporterSlurmConf, "gres.conf": exporterGres, "devices.json": string(st.Encode())} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gpu := func(index, uuidN int) metric {
		return metric{GPU: strconv.Itoa(index), UUID: uuid("GPU", uuidN)}
	}
	gi := func(index, gi int, profile string, uuidN int) metric {
		return metric{GPU: strconv.Itoa(index), GPUInstanceID: strconv.Itoa(gi), MigProfile: profile, UUID: uuid("MIG", uuidN)}
	}
	// DCGM reports a GPU instance once, whatever its compute instances;
	// the CI's own UUID (111) names no metric of dcgm-exporter, but
	// jobstats' exporter lists every MIG device, CIs apart.
	gi1 := gi(0, 1, "1c.3g.40gb", 110)
	gi1ci1 := gi(0, 1, "1c.3g.40gb", 111)
	atIndex = []metric{gi1, gi1ci1, gi(0, 7, "1g.10gb", 170), gi(0, 8, "1g.10gb", 180),
		gi(2, 3, "3g.40gb", 330), gi(2, 4, "3g.40gb", 340), gpu(1, 10), gpu(3, 12)}
	metrics = append([]metric{gpu(0, 11), gpu(2, 13)}, atIndex...)
	return jobenv.Options{SlurmConf: filepath.Join(dir, "slurm.conf"), State: filepath.Join(dir, "devices.json"), Root: "/"}, metrics, atIndex
}

// exporterJob is a job of the exporters' test: its id, uid and Slurm
// indices on the node.
type exporterJob struct {
	id, uid int
	indices []int
}

// checkExporters runs the jobs' Prologs into a dcgm and a jobstats
// directory and reads each through its exporter's rules: every device
// of every job labelled with exactly the jobs that have it, nothing else
// labelled. jobstats labels a device with one job: one that two jobs
// share it labels with none (its exporter refuses a file of more than
// one line), and its v0.2.0 with the first.
func checkExporters(t *testing.T, jobs []exporterJob) {
	t.Helper()
	opts, metrics, atIndex := exporterNode(t)
	dirs := map[Format]string{DCGM: filepath.Join(t.TempDir(), "dcgm"), Jobstats: filepath.Join(t.TempDir(), "gpustat")}
	for _, j := range jobs {
		for f, dir := range dirs {
			if _, err := Run(Options{Dir: dir, Format: f, Map: opts}, lookup(jobEnv(j.id, j.uid, join(j.indices)))); err != nil {
				t.Fatalf("job %d (%s): %v", j.id, f, err)
			}
		}
	}
	// Which jobs each metric must carry, by what DCGM reports: a GPU
	// instance's metric, those of all its compute instances.
	dcgmWant := map[metric][]string{}
	statsWant := map[metric][]string{}
	for _, j := range jobs {
		seen := map[metric]bool{}
		for _, i := range j.indices {
			m := atIndex[i]
			statsWant[m] = append(statsWant[m], fmt.Sprintf("%d %d", j.id, j.uid))
			if i == 1 { // the second CI of GI 1: DCGM's metric is the GPU instance's
				m = atIndex[0]
			}
			if !seen[m] {
				seen[m] = true
				dcgmWant[m] = append(dcgmWant[m], strconv.Itoa(j.id))
			}
		}
	}
	var dcgmMetrics []metric // DCGM has no metric of a compute instance
	for _, m := range metrics {
		if m != atIndex[1] {
			dcgmMetrics = append(dcgmMetrics, m)
		}
	}
	got := dcgmHPCMapper(t, dirs[DCGM], dcgmMetrics)
	if diff := cmp.Diff(sortedLines(dcgmWant), sortedLines(got)); diff != "" {
		t.Errorf("dcgm-exporter 4.5.3's hpc_job labels by metric (-want +got):\n%s", diff)
	}
	// Before #602 dcgm-exporter skips <gpu>.<gi> files and keys every
	// metric by gpu: MIG devices carry no job, whole GPUs theirs.
	old := dcgmHPCMapperOld(t, dirs[DCGM], dcgmMetrics)
	for m, jobs := range old {
		if m.MigProfile != "" || !slices.Equal(jobs, got[m]) {
			t.Errorf("dcgm-exporter before #602: %v labelled %v", m, jobs)
		}
	}

	// jobstats: one job a device.
	one := map[metric]string{}
	for m, lines := range statsWant {
		if len(lines) == 1 {
			one[m] = lines[0]
		}
	}
	if diff := cmp.Diff(one, jobstatsExporter(t, dirs[Jobstats], metrics)); diff != "" {
		t.Errorf("jobstats' exporter (v0.2.2)'s jobid userid by metric (-want +got):\n%s", diff)
	}
	oldWant := map[metric]string{}
	for m, lines := range statsWant {
		oldWant[m] = lines[0]
	}
	if diff := cmp.Diff(oldWant, jobstatsExporterOld(t, dirs[Jobstats], metrics)); diff != "" {
		t.Errorf("jobstats' exporter v0.2.0's jobId jobUid by metric (-want +got):\n%s", diff)
	}

	// Once every Epilog has run, nothing is labelled.
	for _, j := range jobs {
		for f, dir := range dirs {
			if _, err := Run(Options{Dir: dir, Format: f, Remove: true, Map: opts}, lookup(jobEnv(j.id, j.uid, join(j.indices)))); err != nil {
				t.Fatalf("job %d's Epilog (%s): %v", j.id, f, err)
			}
		}
	}
	if got := dcgmHPCMapper(t, dirs[DCGM], dcgmMetrics); len(got) != 0 {
		t.Errorf("after every Epilog dcgm-exporter labels %v", got)
	}
	if got := jobstatsExporter(t, dirs[Jobstats], metrics); len(got) != 0 {
		t.Errorf("after every Epilog jobstats labels %v", got)
	}
}

func sortedLines(m map[metric][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		v = slices.Clone(v)
		slices.Sort(v)
		out[k.String()] = v
	}
	return out
}

func TestExportersRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs []exporterJob
	}{
		{"whole GPUs", []exporterJob{{11, 1000, []int{6}}, {12, 1001, []int{7}}}},
		{"MIG devices on two GPUs", []exporterJob{{21, 1000, []int{2, 4}}, {22, 1001, []int{5}}, {23, 1002, []int{3}}}},
		{"two jobs share a device", []exporterJob{{31, 1000, []int{3}}, {32, 1001, []int{3}}, {33, 1002, []int{2}}}},
		{"a job on two devices, a GPU and a MIG device", []exporterJob{{41, 1000, []int{7, 5}}, {42, 1001, []int{6}}}},
		{"a job on two CIs of one GPU instance", []exporterJob{{51, 1000, []int{0, 1}}, {52, 1001, []int{4}}}},
		{"everything at once", []exporterJob{{61, 1000, []int{6}}, {62, 1001, []int{0, 1}}, {63, 1002, []int{2, 4}}, {64, 1003, []int{3}}, {65, 1004, []int{3}}, {66, 1005, []int{7, 5}}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkExporters(t, tc.jobs) })
	}
}

// TestExportersReadRandomLayouts: random jobs of one to three devices,
// shared or not, read through both exporters.
func TestExportersReadRandomLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 2))
	for round := 0; round < 20; round++ {
		var jobs []exporterJob
		for j := 0; j < 1+r.IntN(5); j++ {
			jobs = append(jobs, exporterJob{id: 100*round + j + 1, uid: 2000 + j, indices: r.Perm(8)[:1+r.IntN(3)]})
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) { checkExporters(t, jobs) })
	}
}
