package slurmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/slurmd"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// readNodeCase is a node's gres.conf and slurm.conf lines that slurmd -G
// and slurm-mig's one model of slurmd (slurmd.ReadNode) both read.
// $D is a directory of device nodes: nvidia0 and nvidia1 whole GPUs,
// nvidia2 in MIG mode with GI cap10 and its CIs cap11 and cap12, nvidia3
// with GI cap13 and its CIs cap14 and cap15; $H is this host.
type readNodeCase struct {
	name, grestypes, gres, nodes string
}

const (
	readMIGs = "Name=gpu Type=1g MultipleFiles=$D/nvidia2,$D/nvidia-caps/nvidia-cap10,$D/nvidia-caps/nvidia-cap11\n" +
		"Name=gpu Type=1g MultipleFiles=$D/nvidia2,$D/nvidia-caps/nvidia-cap10,$D/nvidia-caps/nvidia-cap12\n" +
		"Name=gpu Type=3g MultipleFiles=$D/nvidia3,$D/nvidia-caps/nvidia-cap13,$D/nvidia-caps/nvidia-cap14\n"
	readWhole = "Name=gpu Type=a100 File=$D/nvidia[0-1]\n"
	// readCIs: the CI caps alone (gen --files ci).
	readCIs = "Name=gpu Type=1g File=$D/nvidia-caps/nvidia-cap[11-12]\nName=gpu Type=3g File=$D/nvidia-caps/nvidia-cap14\n"
)

var readNodeCases = []readNodeCase{
	{"mig", "gpu", readMIGs + readWhole, "Gres=gpu:a100:2,gpu:1g:2,gpu:3g:1"},
	{"mig-shard", "gpu,shard", readMIGs + readWhole + "Name=shard Count=8\n", "Gres=gpu:a100:2,gpu:1g:2,gpu:3g:1,shard:8"},
	{"mig-mps", "gpu,mps", readMIGs + readWhole + "Name=mps Count=200\n", "Gres=gpu:1g:2,gpu:3g:1,gpu:a100:2,mps:200"},
	{"mig-shard-undeclared", "gpu,shard", readMIGs + readWhole, "Gres=gpu:a100:2,gpu:1g:2,gpu:3g:1"},
	{"ci-caps-shard", "gpu,shard", readCIs + readWhole + "Name=shard Count=8\n", "Gres=gpu:3g:1,gpu:1g:2,gpu:a100:2,shard:8"},
	{"extra-records", "gpu", readMIGs + readWhole, "Gres=gpu:a100:1,gpu:1g:1,gpu:3g:1"},
	{"extra-records-shard", "gpu,shard", readMIGs + readWhole + "Name=shard Count=8\n", "Gres=gpu:a100:1,gpu:1g:2,shard:8"},
	{"type-slurm-conf-lacks", "gpu", readMIGs + readWhole, "Gres=gpu:1g:2,gpu:3g:1"},
	{"case-only-types", "gpu", "Name=gpu Type=A100 File=$D/nvidia0\nName=gpu Type=a100 File=$D/nvidia1\n", "Gres=gpu:a100:1,gpu:A100:1"},
	{"case-only-types-one-record", "gpu", "Name=gpu Type=a100 File=$D/nvidia[0-1]\n", "Gres=gpu:A100:1,gpu:a100:1"},
	{"untyped-declared", "gpu", readMIGs + readWhole, "Gres=gpu:5"},
	{"typed-and-untyped-records", "gpu", "Name=gpu Type=a100 File=$D/nvidia0\nName=gpu File=$D/nvidia1\n", "Gres=gpu:2"},
	{"typed-and-untyped-declared", "gpu", readWhole, "Gres=gpu:a100:1,gpu:1"},
	{"node-lines-after-global", "gpu", "NodeName=$H Name=gpu Type=a100 File=$D/nvidia1\n" + readMIGs + "Name=gpu Type=a100 File=$D/nvidia0\n", "Gres=gpu:a100:2,gpu:1g:2,gpu:3g:1"},
	{"fileless-gpu-shard", "gpu,shard", readWhole + "Name=gpu Type=b Count=1\nName=shard Count=8\n", "Gres=gpu:a100:2,gpu:b:1,shard:8"},
	{"device-listed-twice", "gpu", readMIGs + "Name=gpu Type=1g MultipleFiles=$D/nvidia2,$D/nvidia-caps/nvidia-cap10,$D/nvidia-caps/nvidia-cap11\n", "Gres=gpu:1g:3,gpu:3g:1"},
	{"renamed-node", "gpu", "NodeName=other[1-4] Name=gpu Type=a100 File=$D/nvidia[0-1]\n", "Gres=gpu:a100:2"},
	{"declared-twice", "gpu", readWhole, "Gres=gpu:a100:2\nNodeName=$H Gres=gpu:a100:1"},
}

// readNodeUUIDs are the test devices' UUIDs, by the file that is each
// device's own: a whole GPU's /dev/nvidiaN, a MIG device's CI cap.
var readNodeUUIDs = map[string]string{
	"nvidia0": uuidOf("GPU", 0), "nvidia1": uuidOf("GPU", 1),
	"nvidia-cap11": uuidOf("MIG", 11), "nvidia-cap12": uuidOf("MIG", 12), "nvidia-cap14": uuidOf("MIG", 14), "nvidia-cap15": uuidOf("MIG", 15),
}

func uuidOf(prefix string, n int) string {
	return fmt.Sprintf("%s-%08d-0000-4000-8000-000000000000", prefix, n)
}

// readNodeState is the device state of the test devices.
func readNodeState(t *testing.T) *jobenv.State {
	u := func(v uint32) *uint32 { return &v }
	// Each GPU has its NVML index, and each MIG device the id of its GPU
	// instance (both CIs of a GPU share one here), as NVML gives them:
	// the job map names its files by them.
	mig := func(giID, ciID int, gi, ci uint32) model.MigDevice {
		return model.MigDevice{UUID: uuidOf("MIG", int(ci)), GPUInstanceID: giID, ComputeInstanceID: ciID, GICapMinor: u(gi), CICapMinor: u(ci)}
	}
	n := &model.Node{GPUs: []model.GPU{
		{Index: 0, Minor: 0, UUID: uuidOf("GPU", 0)},
		{Index: 1, Minor: 1, UUID: uuidOf("GPU", 1)},
		{Index: 2, Minor: 2, UUID: uuidOf("GPU", 2), MigEnabled: true, MigDevices: []model.MigDevice{mig(1, 0, 10, 11), mig(1, 1, 10, 12)}},
		{Index: 3, Minor: 3, UUID: uuidOf("GPU", 3), MigEnabled: true, MigDevices: []model.MigDevice{mig(1, 0, 13, 14), mig(1, 1, 13, 15)}},
	}}
	st, err := jobenv.NewState(n, "", "", "test")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestReadNodeAgainstSlurmd has real slurmd -G of the release under test
// and slurm-mig's model of it read each case: where slurmd starts, the
// model's GPU indices must be slurmd's, index by index (type and files),
// and where it dies, the model says fatal. Then env (jobenv.Load, what
// env and jobmap map through) must either refuse the node, where the
// model says slurmd reads it otherwise than written, or give for each
// index the UUID of the device that slurmd gives a job for it.
func TestReadNodeAgainstSlurmd(t *testing.T) {
	Require(t, "slurmd")
	RequireRoot(t)
	host := shortHostname(t)
	hw := hardware(t)
	root := t.TempDir()
	devDir := filepath.Join(root, "dev")
	makeCheckDevices(t, devDir)
	state := filepath.Join(t.TempDir(), "devices.json")
	if err := os.WriteFile(state, readNodeState(t).Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range readNodeCases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rep := strings.NewReplacer("$D", devDir, "$H", host)
			gres := rep.Replace(c.gres)
			slurm := strings.Replace(slurmConf(dir, host, "NodeName="+host+" "+rep.Replace(c.nodes), hw, ports{}), "GresTypes=gpu\n", "GresTypes="+c.grestypes+"\n", 1)
			conf := writeConfigs(t, dir, gres, slurm)
			died, out, gpus := slurmdIndices(t, conf, host)

			nc, err := slurmd.ReadNode(filepath.Join(dir, "gres.conf"), conf, host, release)
			modelDied := err != nil || nc.Fatal()
			if modelDied != died {
				t.Fatalf("model: fatal %v (%v, %v), slurmd -G: died %v:\n%s", modelDied, err, nc.Problems, died, out)
			}
			if died {
				return
			}
			var model []string
			for _, g := range nc.GPUs {
				model = append(model, g.Type+" "+strings.Join(g.Files, ","))
			}
			if diff := cmp.Diff(gpus, model); diff != "" {
				t.Errorf("GPU indices (-slurmd -G +model):\n%s\nproblems: %v\nslurmd -G:\n%s", diff, nc.Problems, out)
			}

			opts := jobenv.Options{SlurmConf: conf, State: state, Root: hostfs.FS(root),
				Release: func() (slurmconf.Version, error) { return release, nil }}
			n, err := jobenv.Load(opts, host, func(string) (string, bool) { return "", false })
			if len(nc.Misread) > 0 {
				if err == nil {
					t.Errorf("env maps the node, which slurmd reads otherwise than written: %v", nc.Misread)
				}
				return
			}
			if err != nil {
				t.Fatalf("env: %v", err)
			}
			for i, g := range gpus {
				_, files, _ := strings.Cut(g, " ")
				want, ok := deviceUUID(files)
				picked, err := n.Pick("SLURM_STEP_GPUS", []int{i})
				switch {
				case !ok && err == nil:
					t.Errorf("index %d (%s) is no one device, yet env gives %s", i, g, picked[0].UUID)
				case ok && err != nil:
					t.Errorf("index %d (%s): env: %v", i, g, err)
				case ok && picked[0].UUID != want:
					t.Errorf("index %d (%s): env gives %s, slurmd gives the device %s", i, g, picked[0].UUID, want)
				}
			}
			if _, err := n.Pick("SLURM_STEP_GPUS", []int{len(gpus)}); err == nil {
				t.Errorf("env maps index %d, beyond slurmd's %d GPUs", len(gpus), len(gpus))
			}
		})
	}
}

// deviceUUID is the UUID of the one device that list (comma-separated
// files) is: a whole GPU's file alone, a MIG device's CI cap alone (gen
// --files ci), or its GPU, GI and CI files; ok false where they are
// none, or several.
func deviceUUID(list string) (string, bool) {
	if list == "" {
		return "", false
	}
	files := strings.Split(list, ",")
	own := filepath.Base(files[len(files)-1])
	uuid, ok := readNodeUUIDs[own]
	switch {
	case !ok:
		return "", false
	case len(files) == 1:
		return uuid, true
	case len(files) == 3:
		ci, _ := strconv.Atoi(strings.TrimPrefix(own, "nvidia-cap"))
		gi := map[int]int{11: 10, 12: 10, 14: 13, 15: 13}[ci]
		gpu := map[int]string{10: "nvidia2", 13: "nvidia3"}[gi]
		return uuid, filepath.Base(files[0]) == gpu && filepath.Base(files[1]) == "nvidia-cap"+strconv.Itoa(gi)
	}
	return "", false
}

// slurmdIndices runs slurmd -N host -G and returns whether it died, its
// output, and its GPU indices in order, each "type files": a record of
// Count=N with N files is N indices of a file each, one of Count=1 with
// several files (MultipleFiles=) one index.
func slurmdIndices(t *testing.T, conf, host string) (died bool, out string, gpus []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "slurmd", "-N", host, "-G")
	cmd.Env = slurmEnv(conf)
	b, err := cmd.CombinedOutput()
	out = string(b)
	died = err != nil || strings.Contains(out, "fatal:")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		prefix := gresLine.FindString(line)
		if prefix == "" {
			continue
		}
		rec, ok := slurmdGPU(t, line[len(prefix):])
		if !ok {
			continue
		}
		files := strings.Split(rec.Files, ",")
		switch {
		case rec.Files == "":
			for range rec.Count {
				gpus = append(gpus, rec.Type+" ")
			}
		case rec.Count == len(files):
			for _, f := range files {
				gpus = append(gpus, rec.Type+" "+f)
			}
		case rec.Count == 1:
			gpus = append(gpus, rec.Type+" "+rec.Files)
		default:
			t.Fatalf("slurmd -G record of count %d with %d files: %s", rec.Count, len(files), line)
		}
	}
	return died, out, gpus
}
