package slurmtest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// checkLinePool are gres.conf lines, clean and odd, that the differential
// test puts together at random: $D is a directory of device nodes, $H
// this host.
var checkLinePool = []string{
	"Name=gpu Type=a File=$D/nvidia[0-1]",
	"Name=gpu Type=b File=$D/nvidia2",
	"Name=gpu Type=a File=$D/nvidia3 Cores=0",
	"NodeName=$H Name=gpu Type=b File=$D/nvidia3",
	"NodeName=other Name=gpu Type=a File=$D/nvidia0",
	"NodeName=$H,other[1-3] Name=gpu Type=c MultipleFiles=$D/nvidia1,$D/nvidia-caps/nvidia-cap10",
	"Name=gpu Type=c MultipleFiles=$D/nvidia0,$D/nvidia-caps/nvidia-cap11,$D/nvidia-caps/nvidia-cap12",
	"Name=gpu File=$D/nvidia[2-3]",
	"Name=gpu Type=a File=$D/nvidia[0-1] Count=2",
	"Name=gpu Type=a File=$D/nvidia[0-1] Count=3",
	"Name=gpu Type=b Count=2",
	"NodeName=$H Type=a File=$D/nvidia0",
	"NodeName=[localmachine] Name=gpu File=$D/nvidia0",
	"AutoDetect=off",
	"AutoDetect=nvidia",
	"NodeName=$H AutoDetect=off",
	"NodeName=$H AutoDetect=nvml",
	"Name=mps Count=100",
	"Name=shard Count=8",
	"Name=nic Count=2",
	"Name=foo Count=1",
	"Name=gpu Type=a File=$D/nvidia0 Cores=0-10000",
	"Name=gpu Type=a File=$D/nvidia0 Flags=nvidia_gpu_env",
	"Name=gpu Type=A File=$D/nvidia1 Links=-1,0",
	"Name=gpu Type=a Type=b File=$D/nvidia2",
	"name=GPU type=b file=$D/nvidia[1,3]",
	"NodeName=$H Name=gpu Type=a File=$D/nvidia[0-3]",
	"Name=gpu Type=a Files=$D/nvidia[0-1] Flags=CountOnly",
	"NodeName=$H Name=gpu Type=b File=$D/nvidia[2-3] Count=2 Cores=0-1",
	"NodeName=$H[ Name=gpu Type=b File=$D/nvidia2",
	"Name=mps Count=100 File=$D/nvidia0",
	"Name=shard Count=8 File=$D/nvidia[0-1]",
	"Name=gpu Type=\"a\" File=$D/nvidia[0-1]",
	"Name=gpu Type=b File=$D/nvidia2 \\\n Cores=1",
	"# a comment",
	"",
}

// checkDeclPool are items of the node's Gres=.
//
// Left out, as check does not follow slurmd there yet (docs/check.md):
// types in Gres= that differ only in case (gpu:A:1 beside gpu:a:2), and
// a type given twice.
var checkDeclPool = []string{"gpu:a:2", "gpu:b:1", "gpu:c:1", "gpu:2", "gpu:b:3", "mps:100", "shard:8", "nic:2", "bar:1"}

// TestCheckDiffersNotFromSlurmd puts gres.conf files together at random
// from checkLinePool (a fixed seed: the same files every run) and has
// check and slurmd -G read each: the verdict (fatal, error, clean) and
// the GPU records in order must be the same.
func TestCheckDiffersNotFromSlurmd(t *testing.T) {
	Require(t, "slurmd")
	RequireRoot(t)
	host := shortHostname(t)
	hw := hardware(t)
	devDir := t.TempDir()
	makeCheckDevices(t, devDir)
	seed, n := int64(26), 200
	if s := os.Getenv("SLURMTEST_CHECK_SEED"); s != "" {
		// More files, from another seed, when looking for rules.
		if _, err := fmt.Sscan(s, &seed, &n); err != nil {
			t.Fatalf("SLURMTEST_CHECK_SEED=%q: want SEED COUNT", s)
		}
	}
	linePool, declPool, suffix := checkLinePool, checkDeclPool, ""
	if release.Before(slurmconf.Version{Major: 21, Minor: 8, Micro: -1}) {
		// 20.11 knows no shard, reads mps otherwise, and Debian's build
		// dies on AutoDetect=nvml (no NVML in it): check is held to it on
		// the rest, and on TestCheckAgainstSlurmd's cases.
		linePool, declPool = without(linePool, "shard", "mps", "nvml"), without(declPool, "shard", "mps")
		suffix = "/without-mps-shard-nvml-before-21.08"
	}
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < n; i++ {
		var lines []string
		for n := 1 + rng.Intn(5); n > 0; n-- {
			lines = append(lines, linePool[rng.Intn(len(linePool))])
		}
		var decl []string
		for n := rng.Intn(4); n > 0; n-- {
			// Each item once: a type given twice in Gres= is left out
			// (docs/check.md).
			item := declPool[rng.Intn(len(declPool))]
			typ := item[:strings.LastIndexByte(item, ':')]
			if !slices.ContainsFunc(decl, func(d string) bool { return strings.HasPrefix(d, typ+":") }) {
				decl = append(decl, item)
			}
		}
		gresDecl := ""
		if len(decl) > 0 {
			gresDecl = "Gres=" + strings.Join(decl, ",")
		}
		// Without mps or shard configured, slurmd keeps a line one
		// record; with them, it reads GPUs device by device.
		gresTypes := "gpu,mps,shard,nic"
		if rng.Intn(2) == 0 {
			gresTypes = "gpu,nic"
		}
		c := checkCase{name: fmt.Sprintf("%03d%s/%s", i, suffix, strings.ReplaceAll(gresTypes, ",", "-")), gres: strings.Join(lines, "\n") + "\n", decl: gresDecl}
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			gres := strings.NewReplacer("$D", devDir, "$H", host).Replace(c.gres)
			slurm := strings.Replace(slurmConf(dir, host, "NodeName="+host+" "+c.decl, hw, ports{}), "GresTypes=gpu\n", "GresTypes="+gresTypes+"\n", 1)
			conf := writeConfigs(t, dir, gres, slurm)
			died, errs, gpus := slurmdCheck(t, conf, host)
			rep := runCheck(t, filepath.Join(dir, "gres.conf"), conf, host)
			slurmd := "clean"
			switch {
			case died:
				slurmd = "fatal"
			case len(errs) > 0:
				slurmd = "error"
			}
			got := rep.verdict()
			if got != slurmd {
				t.Errorf("gres.conf:\n%s\n%s\ncheck: %s (%v), slurmd -G: %s (%q)", c.gres, c.decl, got, rep.Nodes[0].Problems, slurmd, errs)
			}
			if !died {
				if diff := cmp.Diff(gpus, rep.gpus()); diff != "" {
					t.Errorf("gres.conf:\n%s\n%s\nGPU records (-slurmd -G +check):\n%s", c.gres, c.decl, diff)
				}
			}
		})
	}
}

// without is pool less the entries that contain any of words.
func without(pool []string, words ...string) []string {
	var out []string
	for _, p := range pool {
		keep := true
		for _, w := range words {
			keep = keep && !strings.Contains(p, w)
		}
		if keep {
			out = append(out, p)
		}
	}
	return out
}
