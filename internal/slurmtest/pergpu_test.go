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

// TestPerGPU asks real Slurm whether one GPU's layout can change while a
// job keeps running on the node's other GPU (issue 37, item 3). The node
// has two GPUs of two MIG devices each: GPU 0's are type a (indices 0-1),
// GPU 1's type b (indices 2-3). A job holds one of GPU 0's. GPU 1 then
// changes: its records are replaced in gres.conf and slurm.conf, slurmctld
// and slurmd are restarted (or scontrol reconfigure is run), and the test
// pins what becomes of the job and the node, and whether a job for the
// new type then starts on GPU 1.
func TestPerGPU(t *testing.T) {
	requireCluster(t)
	Require(t, "sbatch")
	host := shortHostname(t)
	// Two jobs of 1 MB each fit beside each other: the default
	// RealMemory (1 MB) would hold the second back for memory.
	hw := hardware(t) + " RealMemory=2"
	for _, tc := range []struct {
		name string
		// GPU 1's new records: its device files' names and the new type
		newType string
		files   []string
		// reconfigure: scontrol reconfigure in place of the restarts
		reconfigure bool
	}{
		// Same node total (4), per-type counts changed: b:2 becomes c:2.
		{"restart-same-count", "c", []string{"nvidia2", "nvidia3"}, false},
		// GPU 1 from two devices to one: node total 4 becomes 3.
		{"restart-count-changed", "c", []string{"nvidia2"}, false},
		// The same-count change told by scontrol reconfigure alone.
		{"reconfigure-same-count", "c", []string{"nvidia2", "nvidia3"}, true},
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
			nodeLine := func(typ1 string, n1 int) string {
				return fmt.Sprintf("NodeName=%s Gres=gpu:a:2,gpu:%s:%d", host, typ1, n1)
			}
			p := freePorts(t)
			conf := writeConfigs(t, dir, gres("b", []string{"nvidia2", "nvidia3"}), slurmConf(dir, host, nodeLine("b", 2), hw, p))
			c := startClusterIn(t, dir, host, conf)
			c.waitNode(func(n nodeState) bool { return n.state == "IDLE" }, "IDLE")
			job := c.startLoopJob("gpu:a:1")
			before := c.jobState(job)
			idx := c.jobIndicesOf(before)
			// GPU 1 changes: the node drained? No: the point is to change
			// it with the job running, so only the changed GPU is idle.
			if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(gres(tc.newType, tc.files)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(conf, []byte(slurmConf(dir, host, nodeLine(tc.newType, len(tc.files)), hw, p)), 0o644); err != nil {
				t.Fatal(err)
			}
			want := strings.TrimPrefix(nodeLine(tc.newType, len(tc.files)), "NodeName="+host+" Gres=")
			c.allowed = append(c.allowed, logLine{"slurm", regexp.MustCompile(`.`)})
			if tc.reconfigure {
				if c.reconfigureGPU(job, idx, want) {
					c.startsOnGPU1(tc.newType, len(tc.files))
				}
				return
			}
			c.restart("slurmctld", "-D", "-i")
			c.waitFor("slurmctld to answer", func() (bool, string) {
				out, err := c.command(context.Background(), "scontrol", "ping").CombinedOutput()
				return err == nil && strings.Contains(string(out), "is UP"), string(out)
			})
			c.restart("slurmd", "-D")
			// Wait for slurmd's registration with the new records: before
			// it, slurmctld may show the node MIXED with the Gres it
			// recovered with the job.
			n := c.waitNode(func(n nodeState) bool {
				return n.gres == want && !strings.Contains(n.state, "UNKNOWN") && !strings.Contains(n.state, "NOT_RESPONDING")
			}, "to register Gres="+want)
			after := c.jobState(job)
			t.Logf("%s: node State=%s Gres=%s; job %s %s", tc.name, n.state, n.gres, job, after)
			if len(tc.files) == 2 {
				// Node total unchanged: the job runs on, on the same device.
				if field(after, "JobState") != "RUNNING" || fmt.Sprint(c.jobIndicesOf(after)) != fmt.Sprint(idx) {
					t.Errorf("node total unchanged: job %s is %s, IDX %v; want RUNNING on IDX %v\n%s", job, field(after, "JobState"), c.jobIndicesOf(after), idx, c.logs())
				}
				if n.gres != "gpu:a:2,gpu:c:2" {
					t.Errorf("node Gres=%s, want gpu:a:2,gpu:c:2", n.gres)
				}
			} else {
				// Node total changed: slurmctld kills the job; 22.05 on
				// requeue it, 20.11 leaves it NODE_FAIL.
				c.waitFor("the job killed", func() (bool, string) {
					l := c.jobState(job)
					if release.Before(pergpuRequeueSince) {
						return field(l, "JobState") == "NODE_FAIL", l
					}
					return field(l, "JobState") == "PENDING" && field(l, "Restarts") == "1", l
				})
				data, _ := os.ReadFile(filepath.Join(dir, "slurmctld.log"))
				if !strings.Contains(string(data), "gres/gpu count mismatch on node "+host+" (4 != 3)") {
					t.Errorf("slurmctld.log says nothing of killing job %s for the count\n%s", job, c.logs())
				}
			}
			c.startsOnGPU1(tc.newType, len(tc.files))
		})
	}
}

// startsOnGPU1 checks that a job for the new type starts at once, on the
// changed GPU's records (indices 2 on), beside whatever still runs.
func (c *cluster) startsOnGPU1(newType string, n int) {
	c.t.Helper()
	next := c.startLoopJob("gpu:" + newType + ":1")
	got := c.jobIndicesOf(c.jobState(next))
	if len(got) != 1 || got[0] < 2 || got[0] >= 2+n {
		c.t.Errorf("a job for gpu:%s:1 after the change got IDX %v, want one of GPU 1's (2-%d)\n%s", newType, got, 1+n, c.jobState(next))
	}
}

// reconfigureGPU tells slurmctld of GPU 1's change with scontrol
// reconfigure alone, with no restart, and checks what each release does:
// 23.11 on, whose reconfigure restarts the daemons in place, take the new
// records with the job running on; before, slurmd keeps its old records
// and slurmctld drains the node for the new type's count. It says
// whether the node took the change.
func (c *cluster) reconfigureGPU(job string, idx []int, want string) bool {
	c.t.Helper()
	if out, err := c.command(context.Background(), "scontrol", "reconfigure").CombinedOutput(); err != nil {
		c.t.Fatalf("scontrol reconfigure: %v\n%s", err, out)
	}
	took := !release.Before(reconfigureGresSince)
	n := c.waitNode(func(n nodeState) bool {
		if took {
			return n.gres == want && n.state == "MIXED"
		}
		return strings.Contains(n.state, "DRAIN") && strings.Contains(n.reason, "count too low (0 < 2)")
	}, "after scontrol reconfigure")
	after := c.jobState(job)
	c.t.Logf("scontrol reconfigure: node State=%s Gres=%s Reason=%s; job %s", n.state, n.gres, n.reason, after)
	if field(after, "JobState") != "RUNNING" || fmt.Sprint(c.jobIndicesOf(after)) != fmt.Sprint(idx) {
		c.t.Errorf("after scontrol reconfigure: job %s is %s, IDX %v; want RUNNING on IDX %v\n%s", job, field(after, "JobState"), c.jobIndicesOf(after), idx, c.logs())
	}
	return took
}

// reconfigureGresSince is the first release of the matrix whose scontrol
// reconfigure brings slurmd's new gres.conf records (24.11.5; 22.05.8
// drains the node INVAL, 20.11.4 drains it).
var reconfigureGresSince = slurmconf.Version{Major: 23, Minor: 11, Micro: -1}

// pergpuRequeueSince is the first release of the matrix seen to requeue
// a job slurmctld kills for a changed GRES count (20.11.4 sets it
// NODE_FAIL; 22.05.8 requeues it).
var pergpuRequeueSince = slurmconf.Version{Major: 22, Minor: 5, Micro: -1}

// restart stops the daemon called name and starts it again with args;
// the stopped one leaves the cluster's list, so that waitFor does not take
// its exit for a death.
func (c *cluster) restart(name string, args ...string) {
	c.t.Helper()
	c.stopDaemon(name)
	c.start(name, args...)
}

// stopDaemon stops the daemon called name and takes it off the list.
func (c *cluster) stopDaemon(name string) {
	for i, d := range c.daemons {
		if d.name == name && !d.exited() {
			d.stop()
			c.daemons = append(c.daemons[:i], c.daemons[i+1:]...)
			return
		}
	}
}

// startLoopJob submits a batch job asking for gres that runs until the
// test ends, and returns its id once it runs. Its script also ends when
// the cluster's dir is gone: it outlives a killed slurmd
// (proctrack/linuxproc), and a requeued job runs it again.
func (c *cluster) startLoopJob(gres string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := `touch started.$SLURM_JOB_ID; while [ -e slurm.conf ]; do sleep 0.1; done`
	out, err := c.command(ctx, "sbatch", "--parsable", "-N1", "-n1", "--mem=1", "--gres="+gres, "-o", "/dev/null", "--chdir", c.dir, "--wrap", script).CombinedOutput()
	job, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if err != nil || job == "" {
		c.t.Fatalf("sbatch --gres=%s: %v\n%s\n%s", gres, err, out, c.logs())
	}
	c.waitFor("job "+job+" ("+gres+") to start", func() (bool, string) {
		_, err := os.Stat(filepath.Join(c.dir, "started."+job))
		return err == nil, c.jobState(job)
	})
	return job
}
