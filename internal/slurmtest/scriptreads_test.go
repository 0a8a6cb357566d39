package slurmtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestScriptReadsOfSlurm holds what repartition.sh and its playbook take
// from Slurm's own commands, on each release: a job whose PrologSlurmctld
// runs is listed by squeue -t only with CONFIGURING named, and its node shows
// it allocated; scontrol ping with slurmctld stopped never says "is UP".
// And scontrol prints SlurmdStartTime in the zone TZ names, which
// rebalance --apply and the script set to UTC.
func TestScriptReadsOfSlurm(t *testing.T) {
	requireCluster(t)
	host := shortHostname(t)
	l := demoLayout(t)
	devDir := t.TempDir()
	makeDevices(t, devDir, l.node)
	gres, nodeLine := render(t, l, form{"model", string(gresgen.FileStyleFor(release)), false}, host)
	dir := shortTempDir(t)
	gate, prolog := filepath.Join(dir, "gate"), filepath.Join(dir, "prolog-slurmctld.sh")
	// Held until the test opens the gate, 60 s at most.
	must(t, os.WriteFile(prolog, []byte("#!/bin/sh\ni=0\nwhile [ ! -e "+gate+" ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i+1)); done\n"), 0o755))
	conf := writeConfigs(t, dir, forThisMachine(gres, devDir), slurmConf(dir, host, nodeLine, hardware(t), freePorts(t))+"PrologSlurmctld="+prolog+"\n")
	c := startClusterIn(t, dir, host, conf)
	if node := c.waitNode(registered, "to register"); node.state != "IDLE" {
		t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", host, node.state, node.reason, c.logs())
	}
	squeue := func(states string) string {
		t.Helper()
		out, err := c.command(context.Background(), "squeue", "-h", "-w", host, "-t", states, "-o", "%i").CombinedOutput()
		if err != nil {
			t.Fatalf("squeue -t %s: %v\n%s", states, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	job := c.sbatch("--wrap", "true")
	c.waitFor("the job to be CONFIGURING", func() (bool, string) {
		st := field(c.jobState(job), "JobState")
		return st == "CONFIGURING", st
	})
	t.Logf("%s: squeue -t RUNNING,COMPLETING,SUSPENDED lists %q", release, squeue("RUNNING,COMPLETING,SUSPENDED"))
	if got := squeue("RUNNING,COMPLETING,SUSPENDED,CONFIGURING"); got != job {
		t.Errorf("squeue -t RUNNING,COMPLETING,SUSPENDED,CONFIGURING lists %q, want job %s", got, job)
	}
	if st := c.waitNode(func(nodeState) bool { return true }, ""); !strings.HasPrefix(st.state, "ALLOC") && !strings.HasPrefix(st.state, "MIXED") {
		t.Errorf("node %s is %s with job %s CONFIGURING, want ALLOCATED or MIXED", host, st.state, job)
	}
	must(t, os.WriteFile(gate, nil, 0o644))
	c.waitNode(func(n nodeState) bool { return n.state == "IDLE" }, "IDLE once the job ended")

	// rebalance --apply reads SlurmdStartTime with TZ=UTC0, as the script
	// does: scontrol prints it in the zone TZ names.
	startIn := func(tz string) time.Time {
		t.Helper()
		cmd := c.command(context.Background(), "scontrol", "show", "node", "-o", host)
		cmd.Env = append(slices.Clip(cmd.Env), slurmconf.StandardTimes, "TZ="+tz)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("TZ=%s scontrol show node: %v\n%s", tz, err, out)
		}
		n, err := slurmhost.ParseNode(host, string(out))
		if err != nil {
			t.Fatal(err)
		}
		at, ok := n.SlurmdStarted()
		if !ok {
			t.Fatalf("TZ=%s: SlurmdStartTime=%q", tz, n.SlurmdStart)
		}
		return at
	}
	utc, tokyo := startIn("UTC0"), startIn("JST-9")
	t.Logf("%s: SlurmdStartTime %s with TZ=UTC0, %s with TZ=JST-9", release, utc.Format(slurmconf.TimeLayout), tokyo.Format(slurmconf.TimeLayout))
	if tokyo.Sub(utc) != 9*time.Hour {
		t.Errorf("SlurmdStartTime with TZ=JST-9 is %s after TZ=UTC0's, want 9h: scontrol does not print in the zone TZ names", tokyo.Sub(utc))
	}

	c.stopDaemon("slurmctld")
	out, err := c.command(context.Background(), "scontrol", "ping").CombinedOutput()
	t.Logf("%s: scontrol ping with slurmctld stopped: %v\n%s", release, err, out)
	if strings.Contains(string(out), " is UP") || !strings.Contains(string(out), " is DOWN") {
		t.Errorf("scontrol ping with slurmctld stopped says\n%s", out)
	}
	c.start("slurmctld", "-D")
	c.waitSlurmctld()
}
