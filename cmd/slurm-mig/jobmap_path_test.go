package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// TestJobmapScriptsWithoutPATH runs scripts/jobmap/prolog.sh and
// epilog.sh as slurmd runs them: as root, with SLURM_CONF,
// SLURMD_NODENAME, SLURM_JOB_ID, SLURM_JOB_UID and SLURM_JOB_GPUS and no
// PATH at all (slurmd builds the Prolog's environment from scratch; the
// project says so itself in internal/slurmhost/scontrol.go and
// docs/jobmap.md, and looks for scontrol in /usr/bin etc. for that
// reason). The node is the demo node with shards configured beside its
// MIG devices (Gres=...,shard:8), where slurmd's GPU numbering depends on
// its release (MultipleFiles= beside shard is split before 23.02.7, kept
// after), so jobmap asks `slurmd -V`. That lookup
// (slurmhost.InstalledVersion) used exec.LookPath alone, with no fallback
// to the usual directories, so under slurmd it never found /usr/sbin/slurmd
// nor /usr/bin/scontrol, and every Prolog and Epilog failed with "how
// slurmd numbers this node's GPUs depends on its release ..., which is
// not known: no slurmd or scontrol on PATH". On a 23.02.7+ cluster with
// shards beside MIG, where `sh prolog.sh` from a root shell succeeds,
// every job that got a GPU drained the node ("Prolog error"), and every
// Epilog drained it again. With no PATH, jobmap now looks in the usual
// places, as for scontrol show job: both runs give the same answer.
func TestJobmapScriptsWithoutPATH(t *testing.T) {
	found := false
	for _, p := range []string{"/usr/sbin/slurmd", "/usr/bin/scontrol", "/usr/local/sbin/slurmd", "/usr/local/bin/scontrol"} {
		if _, err := os.Stat(p); err == nil {
			found = true
		}
	}
	if !found {
		t.Skip("no slurmd or scontrol installed in /usr or /usr/local: nothing for jobmap to find without PATH")
	}
	bin := buildBinary(t, t.TempDir())
	demo := fixture.Path(t, "demo")
	root, snap := filepath.Join(demo, "root"), filepath.Join(demo, "snapshot.json")
	dir := t.TempDir()
	state := filepath.Join(dir, "devices.json")
	gres := filepath.Join(dir, "gres.conf")
	slurmConf := filepath.Join(dir, "slurm.conf")
	if out, err := exec.Command(bin, "--root", root, "gen", "--from", snap, "-o", gres, "--state", state).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	f, err := os.OpenFile(gres, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("NodeName=gpu-demo01 Name=shard Count=8 File=/dev/nvidia0\n")
	f.Close()
	mustWrite(t, slurmConf, "ClusterName=c\nGresTypes=gpu,shard\nNodeName=gpu-demo01 Gres="+demoGres(7)+",shard:8\n")

	var scripts []string
	for _, name := range []string{"prolog.sh", "epilog.sh"} {
		data, err := os.ReadFile(filepath.Join(fixture.Root(t), "scripts/jobmap", name))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.NewReplacer(
			slurmMigPath+" jobmap", bin+" --root "+root+" jobmap --state "+state+" --no-controller",
			"/run/slurm-mig/jobmap-dcgm", filepath.Join(dir, "run/dcgm"),
			"/run/gpustat", filepath.Join(dir, "run/gpustat")).Replace(string(data))
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, path)
	}
	slurmdEnv := []string{"SLURM_CONF=" + slurmConf, "SLURMD_NODENAME=gpu-demo01", "SLURM_JOB_ID=31", "SLURM_JOB_UID=1000", "SLURM_JOB_GPUS=1"}
	run := func(script string, env []string) (int, string) {
		cmd := exec.Command("/bin/sh", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	for _, script := range scripts {
		withCode, withOut := run(script, append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, slurmdEnv...))
		bareCode, bareOut := run(script, slurmdEnv)
		if strings.Contains(bareOut, "on PATH") || withCode != bareCode || withOut != bareOut {
			t.Errorf("%s as slurmd runs it (no PATH): exit %d\n%s\nfrom a root shell (PATH set): exit %d\n%s", filepath.Base(script), bareCode, bareOut, withCode, withOut)
		}
	}
}
