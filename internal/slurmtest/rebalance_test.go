package slurmtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/rebalance"
)

// queueArgs are rebalance.QueueFormat as squeue's arguments.
var queueArgs = []string{"--noheader", "--array", "--states=PD", "--format=%i %V %D %b"}

// TestRebalanceReadsSlurm holds rebalance's readers to what this
// release's squeue and scontrol print: held jobs asking for a MIG type,
// a whole GPU, two nodes, or no GPU, read back as their requests; the
// node idle, then busy while a GPU job runs on it (GresUsed says so;
// AllocTRES does not, accounting here not tracking gres/gpu).
func TestRebalanceReadsSlurm(t *testing.T) {
	requireCluster(t)
	if got := "squeue " + strings.Join(queueArgs[:3], " ") + " '" + strings.TrimPrefix(queueArgs[3], "--format=") + "'"; got != strings.Replace(rebalance.QueueFormat, "--format='", "'", 1) {
		t.Fatalf("queueArgs say %s, rebalance.QueueFormat %s", got, rebalance.QueueFormat)
	}
	host := shortHostname(t)
	l := demoLayout(t)
	devDir := t.TempDir()
	makeDevices(t, devDir, l.node)
	f := form{"model", string(gresgen.FileStyleFor(release)), false}
	gres, nodeLine := render(t, l, f, host)
	c := startCluster(t, host, forThisMachine(gres, devDir), nodeLine, hardware(t))
	if node := c.waitNode(registered, "to register"); node.state != "IDLE" {
		t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", host, node.state, node.reason, c.logs())
	}
	types := gresList(t, nodeLine)
	mig := types[len(types)-1].typ
	submit := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.command(ctx, "sbatch", append([]string{"--parsable", "-n1", "--output=/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
		return id
	}
	jMig := submit("--hold", "--gres=gpu:"+mig+":2", "--wrap=true")
	jAny := submit("--hold", "--gres=gpu:1", "--wrap=true")
	jCPU := submit("--hold", "--wrap=true")

	out, err := c.command(context.Background(), "squeue", queueArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("squeue: %v\n%s", err, out)
	}
	t.Logf("squeue %s printed:\n%s", strings.Join(queueArgs, " "), out)
	jobs, err := rebalance.ParseQueue("squeue", out, time.Local)
	if err != nil {
		t.Fatalf("%v\nsqueue printed:\n%s", err, out)
	}
	want := map[string]string{jMig: fmt.Sprintf("[{%s 2}]", mig), jAny: "[{ 1}]", jCPU: "[]"}
	for _, j := range jobs {
		if got := fmt.Sprint(j.GPU); got != want[j.ID] && !(got == "[]" && want[j.ID] == "[]") {
			t.Errorf("job %s: GPU %s, want %s (squeue: %q)", j.ID, got, want[j.ID], out)
		}
		if j.Nodes != 1 || time.Since(j.Submit) > time.Hour || time.Since(j.Submit) < -time.Minute {
			t.Errorf("job %s: %d nodes, submitted %s", j.ID, j.Nodes, j.Submit)
		}
		delete(want, j.ID)
	}
	if len(want) > 0 {
		t.Errorf("squeue lacks jobs %v:\n%s", want, out)
	}

	why := func() string {
		t.Helper()
		out, err := c.command(context.Background(), "scontrol", "--details", "--oneliner", "show", "node").CombinedOutput()
		if err != nil {
			t.Fatalf("scontrol: %v\n%s", err, out)
		}
		states, err := rebalance.ParseNodes("scontrol", out)
		if err != nil {
			t.Fatalf("%v\nscontrol printed:\n%s", err, out)
		}
		s, ok := states[host]
		if !ok {
			t.Fatalf("scontrol printed no node %s:\n%s", host, out)
		}
		return s.Why()
	}
	if w := why(); w != "" {
		t.Errorf("idle node: %s", w)
	}
	submit("--gres=gpu:"+mig+":1", "--wrap=sleep 60")
	c.waitFor("the GPU job to run", func() (bool, string) {
		w := why()
		return w != "", w
	})
	if w := why(); w != "1 GPUs in use by running jobs" {
		t.Errorf("busy node: %q", w)
	}
}
