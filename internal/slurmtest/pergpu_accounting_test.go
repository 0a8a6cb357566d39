// Copyright and licence as the rest of the package.

package slurmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestPerGPUAccounting asks real Slurm, with slurmdbd and MariaDB, what a
// per-GPU change does to a running job's devices inside the job and to
// its accounting (issue 37, item 3; TestPerGPU pins the node and the
// job's IDX). The node is TestPerGPU's: GPU 0 of type a (indices 0-1),
// GPU 1 of type b (2-3). A job on GPU 0 records its batch step's GPU
// variables and waits; GPU 1 changes to c:2 (node total unchanged,
// slurmctld and slurmd restarted); the job then runs a step (srun) and
// ends. Pinned: the step got the device the batch step had, and sacct
// keeps one record of the job, COMPLETED, typed gres/gpu:a=1, started
// before the change and ended after it; a job of the new type is
// recorded as gres/gpu:c=1. Then a job on GPU 0 meets a change of the
// node's total (GPU 1 to d:1), which kills it (TestPerGPU): sacct keeps
// that run's record with the state slurmctld gave it.
func TestPerGPUAccounting(t *testing.T) {
	requireAccounting(t)
	Require(t, "sbatch")
	host := shortHostname(t)
	dir := shortTempDir(t)
	devs := twoGPUDevices(t, dir)
	p := freeTCPPorts(t, 4) // slurmctld, slurmd, slurmdbd, mariadb
	hw := hardware(t) + " RealMemory=2"
	conf := func(typ1 string, n1 int) string {
		lines := append(append(baseConf(dir, host, ports{p[0], p[1]}), accountingConf(p[2])...),
			"AccountingStorageTRES=gres/gpu,gres/gpu:a,gres/gpu:b,gres/gpu:c,gres/gpu:d",
			fmt.Sprintf("NodeName=%s Gres=gpu:a:2,gpu:%s:%d NodeAddr=127.0.0.1 %s", host, typ1, n1, hw),
			"PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
		return strings.Join(lines, "\n") + "\n"
	}
	confPath := writeConfigs(t, dir, twoGPUGres(host, devs, "b", []string{"nvidia2", "nvidia3"}), conf("b", 2))
	startAccounting(t, dir, host, p[2], p[3], "test")
	c := startClusterIn(t, dir, host, confPath)
	c.allowed = append(c.allowed, accountingNoise...)
	c.waitNode(func(n nodeState) bool { return n.state == "IDLE" }, "IDLE")
	change := func(typ1 string, files []string) time.Time {
		t.Helper()
		at := time.Now().Truncate(time.Second)
		c.writeConfs(twoGPUGres(host, devs, typ1, files), conf(typ1, len(files)))
		c.restartFor(fmt.Sprintf("gpu:a:2,gpu:%s:%d", typ1, len(files)))
		return at
	}

	// A job on GPU 0 that outlives the change, then runs a step.
	job := c.sbatchStepAfter("gpu:a:1")
	idx := c.jobIndicesOf(c.jobState(job))
	// A job that has run a while is in slurmdbd before a change comes.
	began := c.sacctJob(job, running)[0].start
	changed := change("c", []string{"nvidia2", "nvidia3"})
	if err := os.WriteFile(filepath.Join(dir, "go."+job), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitWithin(90*time.Second, "job "+job+" to end", func() (bool, string) {
		l := c.jobState(job)
		if field(l, "JobState") == "COMPLETED" {
			return true, l
		}
		// What a job that does not end is doing, for the failure.
		srun, err := os.ReadFile(filepath.Join(dir, "srun."+job))
		steps, _ := c.command(context.Background(), "scontrol", "show", "step", job).CombinedOutput()
		ls, _ := exec.Command("ls", dir).CombinedOutput()
		ps, _ := exec.Command("ps", "axf", "-o", "pid,stat,etime,args").CombinedOutput()
		return false, fmt.Sprintf("%s\nsrun's stderr (%v): %s\nsteps: %s\nls: %s\nps: %s", l, err, srun, steps, ls, ps)
	})
	batch, step := readFile(t, filepath.Join(dir, "env.batch."+job)), readFile(t, filepath.Join(dir, "env.step."+job))
	t.Logf("job %s on IDX %v: batch step %q; step after the change %q", job, idx, batch, step)
	if len(idx) != 1 || batch == "" || batch != step || !strings.Contains(batch, fmt.Sprintf("gpus=%d", idx[0])) {
		t.Errorf("job %s (IDX %v): batch step's GPU variables %q, a step's after the change %q; want both gpus=%v\nsrun's stderr: %s",
			job, idx, batch, step, idx, readFile(t, filepath.Join(dir, "srun."+job)))
	}
	rec := c.sacctJob(job, func(recs []sacctRecord) bool { return len(recs) == 1 && recs[0].state == "COMPLETED" })
	if r := rec[0]; !strings.Contains(r.tres, "gres/gpu:a=1") || !strings.Contains(r.tres, "gres/gpu=1") ||
		!r.start.Equal(began) || r.end.Before(changed) {
		t.Errorf("sacct: job %s %+v; want gres/gpu:a=1 and gres/gpu=1, started when it did (%s), before the change (%s), and ended after", job, r, began, changed)
	}
	// A job of the new type, on the changed GPU, accounted by its type.
	next := c.startsOnGPU1("c", 2)
	recs := c.sacctJob(next, running)
	if !strings.Contains(recs[0].tres, "gres/gpu:c=1") {
		t.Errorf("sacct: job %s of the new type %+v; want gres/gpu:c=1", next, recs[0])
	}
	if out, err := c.command(context.Background(), "scancel", next).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v\n%s", next, err, out)
	}

	// A change of the node's total kills the job on GPU 0.
	killed := c.startLoopJob("gpu:a:1")
	c.sacctJob(killed, running)
	c.expectLog("slurmctld", regexp.MustCompile(`error: \w+: Killing job `+killed+`: gres/gpu count mismatch on node `+host+` \(4 != 3\)`))
	c.expectLog("slurmctld", regexp.MustCompile(`error: Aborting JobId=`+killed+` due to use of invalid GRES configuration`))
	c.expectLog("slurmd", regexp.MustCompile(`error: \*\*\* JOB `+killed+` ON `+host+` CANCELLED AT \S+ DUE TO NODE FAILURE`))
	c.allowed = append(c.allowed, logLine{"slurmd", regexp.MustCompile(`error: \*\*\* JOB ` + next + ` ON ` + host + ` CANCELLED AT \S+ (DUE to SIGNAL Terminated )?\*\*\*$`)})
	killedAt := change("d", []string{"nvidia2"})
	recs = c.sacctJob(killed, func(recs []sacctRecord) bool { return len(recs) > 0 && recs[0].state != "RUNNING" })
	if r := recs[0]; (r.state != "NODE_FAIL" && r.state != "REQUEUED") || !strings.Contains(r.tres, "gres/gpu:a=1") || r.end.Before(killedAt) {
		t.Errorf("sacct: the run of job %s killed by the change of the node's total: %+v; want NODE_FAIL or REQUEUED, gres/gpu:a=1, ended at the change (%s)", killed, r, killedAt)
	}
	clusterScenarios.Add(1)
	Announce("slurmtest: per-GPU change with accounting (Slurm %s): a job on GPU 0 keeps CUDA_VISIBLE_DEVICES and one sacct record (COMPLETED, gres/gpu:a=1) across a same-count change; a total change leaves its run %s", release, recs[0].state)
}

// sbatchStepAfter submits a batch job asking for gres that writes its
// batch step's GPU variables to env.batch.ID, waits for a file go.ID,
// then runs one step (srun) that writes its own to env.step.ID, and
// ends (srun given a minute). It returns the job's id once it runs.
func (c *cluster) sbatchStepAfter(gres string) string {
	c.t.Helper()
	script := filepath.Join(c.dir, "step-after.sh")
	body := `#!/bin/sh
echo "cvd=$CUDA_VISIBLE_DEVICES gpus=$SLURM_JOB_GPUS" > env.batch.$SLURM_JOB_ID
touch started.$SLURM_JOB_ID
while [ ! -e go.$SLURM_JOB_ID ]; do
	[ -e slurm.conf ] || exit 1
	sleep 0.1
done
timeout 60 srun -n1 --mem=1 --gres=` + gres + ` sh -c 'echo "cvd=$CUDA_VISIBLE_DEVICES gpus=$SLURM_STEP_GPUS"' > env.step.$SLURM_JOB_ID 2> srun.$SLURM_JOB_ID
echo "srun: exit $?" >> srun.$SLURM_JOB_ID
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		c.t.Fatal(err)
	}
	job := c.sbatch("-N1", "--mem=1", "--gres="+gres, "--chdir", c.dir, script)
	c.waitFor("job "+job+" ("+gres+") to start", func() (bool, string) {
		_, err := os.Stat(filepath.Join(c.dir, "started."+job))
		return err == nil, c.jobState(job)
	})
	return job
}

// sacctRecord is one record of a job in sacct (-X: the job, not its
// steps; -D: every run of a requeued job).
type sacctRecord struct {
	state, tres string
	start, end  time.Time
}

// sacctJob waits until sacct's records of job satisfy ok, and returns
// them, oldest first.
func (c *cluster) sacctJob(job string, ok func([]sacctRecord) bool) []sacctRecord {
	c.t.Helper()
	var recs []sacctRecord
	var raw string
	c.waitFor("sacct's records of job "+job, func() (bool, string) {
		out, err := c.command(context.Background(), "sacct", "-X", "-D", "-n", "-P", "-o", "JobID,State,AllocTRES,Start,End,Submit,Elapsed", "-j", job).CombinedOutput()
		if err != nil {
			return false, fmt.Sprintf("sacct: %v\n%s", err, out)
		}
		recs = nil
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Split(line, "|")
			if len(f) != 7 {
				continue
			}
			r := sacctRecord{state: strings.Fields(f[1] + " ")[0], tres: f[2]}
			r.start, _ = time.ParseInLocation(slurmconf.TimeLayout, f[3], time.Local)
			r.end, _ = time.ParseInLocation(slurmconf.TimeLayout, f[4], time.Local)
			recs = append(recs, r)
		}
		raw = string(out)
		return ok(recs), raw
	})
	c.t.Logf("sacct -X -D -j %s:\n%s", job, raw)
	return recs
}

// running says whether sacct has the job's one record, RUNNING.
func running(recs []sacctRecord) bool { return len(recs) == 1 && recs[0].state == "RUNNING" }

// readFile is the file's content, trimmed, or "" where it cannot be read.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Log(err)
	}
	return strings.TrimSpace(string(data))
}
