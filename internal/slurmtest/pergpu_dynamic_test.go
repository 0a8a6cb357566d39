// Copyright and licence as the rest of the package.

package slurmtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestPerGPUDynamicNode asks real Slurm whether a dynamic node (slurmd
// -Z, 22.05 on) lets one GPU's layout change while a job runs on the
// node's other GPU (issue 37, item 3). The node registers itself with
// --conf "Gres=gpu:a:2,gpu:b:2"; GPU 1 then changes: its records are
// replaced in gres.conf and slurmd starts again with the new --conf.
// slurmctld keeps the node's first Gres= on every release: a change of
// per-type counts goes unseen, and the old type's jobs get the changed
// GPU's devices; a change of the total drains the node. scontrol delete
// node, which would let it register anew, refuses while a job runs.
func TestPerGPUDynamicNode(t *testing.T) {
	requireCluster(t)
	Require(t, "sbatch")
	host := shortHostname(t)
	if release.Before(dynamicNodesSince) {
		// 20.11 has no dynamic nodes: slurm.conf's MaxNodeCount= is unknown.
		dir := shortTempDir(t)
		conf := writeConfigs(t, dir, "", strings.Join(append(baseConf(dir, host, ports{}), "MaxNodeCount=4"), "\n")+"\n")
		c := &cluster{t: t, dir: dir, host: host, env: slurmEnv(conf)}
		out, err := c.command(context.Background(), "scontrol", "show", "config").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "unrecognized key: MaxNodeCount") {
			t.Errorf("scontrol show config with MaxNodeCount=4: %v\n%s\nwant it refused: no dynamic nodes before 22.05", err, out)
		}
		return
	}
	for _, tc := range []struct {
		name  string
		files []string // GPU 1's device files, now type c
	}{
		{"same-count", []string{"nvidia2", "nvidia3"}},
		{"count-changed", []string{"nvidia2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := shortTempDir(t)
			devs := filepath.Join(dir, "dev")
			if err := os.MkdirAll(devs, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 4; i++ {
				if err := syscall.Mknod(filepath.Join(devs, fmt.Sprintf("nvidia%d", i)), syscall.S_IFCHR|0o666, int(mkdev(195, uint32(i)))); err != nil {
					t.Fatal(err)
				}
			}
			gres := func(typ1 string, files1 []string) string {
				var b strings.Builder
				for _, f := range []string{"nvidia0", "nvidia1"} {
					fmt.Fprintf(&b, "NodeName=%s Name=gpu Type=a File=%s/%s\n", host, devs, f)
				}
				for _, f := range files1 {
					fmt.Fprintf(&b, "NodeName=%s Name=gpu Type=%s File=%s/%s\n", host, typ1, devs, f)
				}
				return b.String()
			}
			// Two jobs of 1 MB each fit beside each other.
			nodeConf := func(typ1 string, n1 int) string {
				return fmt.Sprintf("%s RealMemory=2 Gres=gpu:a:2,gpu:%s:%d", hardware(t), typ1, n1)
			}
			p := freePorts(t)
			// TreeWidth=65533: 22.05's dynamic nodes need it (its slurm.conf(5)).
			lines := append(baseConf(dir, host, p), "MaxNodeCount=4", "TreeWidth=65533",
				"PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
			conf := writeConfigs(t, dir, gres("b", []string{"nvidia2", "nvidia3"}), strings.Join(lines, "\n")+"\n")
			c := &cluster{t: t, dir: dir, host: host, env: slurmEnv(conf)}
			t.Cleanup(c.checkLogs)
			c.allowed = append(c.allowed, logLine{"slurm", regexp.MustCompile(`.`)})
			c.start("slurmctld", "-D", "-i")
			c.waitFor("slurmctld to answer", func() (bool, string) {
				out, err := c.command(context.Background(), "scontrol", "ping").CombinedOutput()
				return err == nil && strings.Contains(string(out), "is UP"), string(out)
			})
			c.start("slurmd", "-D", "-Z", "--conf", nodeConf("b", 2))
			first := c.waitNode(func(n nodeState) bool { return strings.HasPrefix(n.state, "IDLE") }, "IDLE")
			if first.gres != "gpu:a:2,gpu:b:2" || !strings.Contains(first.state, "DYNAMIC") {
				t.Fatalf("the dynamic node registered State=%s Gres=%s, want a DYNAMIC node of gpu:a:2,gpu:b:2", first.state, first.gres)
			}
			job := c.startLoopJob("gpu:a:1")
			idx := c.jobIndicesOf(c.jobState(job))

			if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(gres("c", tc.files)), 0o644); err != nil {
				t.Fatal(err)
			}
			started := c.slurmdStart()
			time.Sleep(1100 * time.Millisecond) // the new slurmd's start is a second of its own
			c.restart("slurmd", "-D", "-Z", "--conf", nodeConf("c", len(tc.files)))
			c.waitFor("slurmd to register again", func() (bool, string) {
				now := c.slurmdStart()
				return now != started && now != "None", now
			})
			var n nodeState
			if len(tc.files) == 2 {
				n = c.waitNode(func(n nodeState) bool { return !strings.Contains(n.state, "NOT_RESPONDING") }, "responding")
			} else {
				n = c.waitNode(func(n nodeState) bool { return strings.Contains(n.state, "INVALID_REG") }, "INVALID_REG")
			}
			after := c.jobState(job)
			t.Logf("%s: node State=%s Gres=%s Reason=%s; job %s %s IDX %v", tc.name, n.state, n.gres, n.reason, job, field(after, "JobState"), c.jobIndicesOf(after))
			if field(after, "JobState") != "RUNNING" || fmt.Sprint(c.jobIndicesOf(after)) != fmt.Sprint(idx) {
				t.Errorf("job %s is %s, IDX %v; want RUNNING on IDX %v\n%s", job, field(after, "JobState"), c.jobIndicesOf(after), idx, c.logs())
			}
			if n.gres != "gpu:a:2,gpu:b:2" {
				t.Errorf("node Gres=%s, want the first registration's gpu:a:2,gpu:b:2 kept", n.gres)
			}
			if len(tc.files) == 2 {
				// Unseen: not drained, no job for c, and a job for b gets
				// one of the devices slurmd now calls c.
				if strings.Contains(n.state, "DRAIN") || strings.Contains(n.state, "INVAL") {
					t.Errorf("node State=%s Reason=%s, want it in service", n.state, n.reason)
				}
				out, err := c.command(context.Background(), "sbatch", "--gres=gpu:c:1", "--mem=1", "-o", "/dev/null", "--wrap", "true").CombinedOutput()
				if err == nil || !strings.Contains(string(out), "Requested node configuration is not available") {
					t.Errorf("sbatch --gres=gpu:c:1: %v %s; want it refused, no node offers c", err, out)
				}
				old := c.startLoopJob("gpu:b:1")
				if got := c.jobIndicesOf(c.jobState(old)); len(got) != 1 || got[0] < 2 {
					t.Errorf("a job for gpu:b:1 got IDX %v, want one of GPU 1's (2-3), now type c in gres.conf", got)
				}
			} else if !strings.Contains(n.state, "DRAIN") || !strings.Contains(n.reason, "count reported lower than configured (3 < 4)") {
				t.Errorf("node State=%s Reason=%s, want drained INVALID_REG for its count", n.state, n.reason)
			}
			// The way to register a dynamic node anew is refused while a
			// job runs there.
			if out, err := c.command(context.Background(), "scontrol", "delete", "nodename="+host).CombinedOutput(); err == nil {
				t.Errorf("scontrol delete nodename=%s with a job running: %s; want it refused", host, out)
			}
			// Once empty, with slurmd stopped, it is deleted, and slurmd
			// registers the new layout: the way docs/repartition.md gives.
			if out, err := c.command(context.Background(), "scancel", "--full", "--user=root").CombinedOutput(); err != nil {
				t.Fatalf("scancel: %v %s", err, out)
			}
			c.waitNode(func(n nodeState) bool { return strings.HasPrefix(n.state, "IDLE") }, "IDLE once its jobs ended")
			c.stopDaemon("slurmd")
			if out, err := c.command(context.Background(), "scontrol", "delete", "nodename="+host).CombinedOutput(); err != nil {
				t.Fatalf("scontrol delete nodename=%s, empty and slurmd stopped: %v %s", host, err, out)
			}
			c.start("slurmd", "-D", "-Z", "--conf", nodeConf("c", len(tc.files)))
			want := fmt.Sprintf("gpu:a:2,gpu:c:%d", len(tc.files))
			n = c.waitNode(func(n nodeState) bool { return strings.HasPrefix(n.state, "IDLE") && n.gres == want }, "IDLE with Gres="+want)
			if drained(n) {
				t.Errorf("registered anew: State=%s Reason=%s, want it in service", n.state, n.reason)
			}
			c.startsOnGPU1("c", len(tc.files))
		})
	}
}

// slurmdStart is the node's SlurmdStartTime as slurmctld shows it.
func (c *cluster) slurmdStart() string {
	out, _ := c.command(context.Background(), "scontrol", "show", "node", "-o", c.host).CombinedOutput()
	return field(string(out), "SlurmdStartTime")
}

// dynamicNodesSince is the first release of the matrix with dynamic
// nodes (slurmd -Z, MaxNodeCount=): 22.05.
var dynamicNodesSince = slurmconf.Version{Major: 22, Minor: 5, Micro: -1}
