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
// new type then starts on GPU 1. Records are one File= each, and, from
// 21.08 on, also gen's MultipleFiles= form.
func TestPerGPU(t *testing.T) {
	requireCluster(t)
	Require(t, "sbatch")
	host := shortHostname(t)
	// Two jobs of 1 MB each fit beside each other: the default
	// RealMemory (1 MB) would hold the second back for memory.
	hw := hardware(t) + " RealMemory=2"
	type perGPUCase struct {
		name string
		// GPU 1's new records: its device files' names (caps' minors
		// "GI-CI" with multiple) and the new type
		newType string
		files   []string
		// reconfigure: scontrol reconfigure in place of the restarts
		reconfigure bool
		// multiple: records as gen writes them from 21.08 on,
		// MultipleFiles= of the GPU's file and the MIG device's two caps
		// (twoGPUGresMultiple); else one File= a record.
		multiple bool
	}
	cases := []perGPUCase{
		// Same node total (4), per-type counts changed: b:2 becomes c:2.
		{"restart-same-count", "c", []string{"nvidia2", "nvidia3"}, false, false},
		// GPU 1 from two devices to one: node total 4 becomes 3.
		{"restart-count-changed", "c", []string{"nvidia2"}, false, false},
		// The same-count change told by scontrol reconfigure alone.
		{"reconfigure-same-count", "c", []string{"nvidia2", "nvidia3"}, true, false},
	}
	if !release.Before(slurmconf.SharedFilesSince) {
		// The same two restarts with gen's records of 21.08 on, whose
		// records of one GPU share its /dev/nvidiaN (20.11 refuses that,
		// and gen writes File= for it).
		cases = append(cases,
			perGPUCase{"multiple-same-count", "c", []string{"9-10", "11-12"}, false, true},
			perGPUCase{"multiple-count-changed", "c", []string{"9-10"}, false, true})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := shortTempDir(t)
			devs := twoGPUDevices(t, dir)
			gres := func(typ1 string, files1 []string) string { return twoGPUGres(host, devs, typ1, files1) }
			was := []string{"nvidia2", "nvidia3"}
			if tc.multiple {
				gres = func(typ1 string, caps1 []string) string { return twoGPUGresMultiple(t, host, devs, typ1, caps1) }
				was = []string{"5-6", "7-8"}
			}
			nodeLine := func(typ1 string, n1 int) string {
				return fmt.Sprintf("NodeName=%s Gres=gpu:a:2,gpu:%s:%d", host, typ1, n1)
			}
			p := freePorts(t)
			conf := writeConfigs(t, dir, gres("b", was), slurmConf(dir, host, nodeLine("b", 2), hw, p))
			c := startClusterIn(t, dir, host, conf)
			c.waitNode(func(n nodeState) bool { return n.state == "IDLE" }, "IDLE")
			job := c.startLoopJob("gpu:a:1")
			before := c.jobState(job)
			idx := c.jobIndicesOf(before)
			// GPU 1 changes with the job running and the node in
			// service: no job waits here, so no drain is needed to keep
			// one off GPU 1 (TestPerGPUKeepOff shows where it is).
			c.writeConfs(gres(tc.newType, tc.files), slurmConf(dir, host, nodeLine(tc.newType, len(tc.files)), hw, p))
			want := strings.TrimPrefix(nodeLine(tc.newType, len(tc.files)), "NodeName="+host+" Gres=")
			c.allowed = append(c.allowed, logLine{"slurm", regexp.MustCompile(`.`)})
			if tc.reconfigure {
				if c.reconfigureGPU(job, idx, want) {
					c.startsOnGPU1(tc.newType, len(tc.files))
				}
				return
			}
			n := c.restartFor(want)
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

// twoGPUDevices makes the character devices of the per-GPU tests'
// node under dir/dev: nvidia0-1 are GPU 0's MIG devices, nvidia2-3 GPU
// 1's. It returns that dir.
func twoGPUDevices(t *testing.T, dir string) string {
	t.Helper()
	devs := filepath.Join(dir, "dev")
	if err := os.MkdirAll(devs, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if err := syscall.Mknod(filepath.Join(devs, fmt.Sprintf("nvidia%d", i)), syscall.S_IFCHR|0o666, int(mkdev(195, uint32(i)))); err != nil {
			t.Fatal(err)
		}
	}
	return devs
}

// twoGPUGres is the node's gres.conf: GPU 0's two records of type a,
// and GPU 1's of type typ1, one a file of files1.
func twoGPUGres(host, devs, typ1 string, files1 []string) string {
	var b strings.Builder
	for _, f := range []string{"nvidia0", "nvidia1"} {
		fmt.Fprintf(&b, "NodeName=%s Name=gpu Type=a File=%s/%s\n", host, devs, f)
	}
	for _, f := range files1 {
		fmt.Fprintf(&b, "NodeName=%s Name=gpu Type=%s File=%s/%s\n", host, typ1, devs, f)
	}
	return b.String()
}

// twoGPUGresMultiple is twoGPUGres as gen writes MIG devices from 21.08
// on: each record MultipleFiles= of its GPU's file (nvidia0 or nvidia1)
// and its GI and CI caps (devs/caps/capN, made here as needed). GPU 0's
// records are type a (caps 1-2, 3-4); GPU 1's type typ1, one a "GI-CI"
// pair of caps1.
func twoGPUGresMultiple(t *testing.T, host, devs, typ1 string, caps1 []string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(devs, "caps"), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	record := func(typ, gpu, pair string) {
		gi, ci, _ := strings.Cut(pair, "-")
		files := []string{filepath.Join(devs, gpu)}
		for _, minor := range []string{gi, ci} {
			path := filepath.Join(devs, "caps", "cap"+minor)
			var m uint32
			fmt.Sscan(minor, &m)
			// nvidia-caps' major is the driver's choice; any serves here, where
			// task/none makes no device cgroup of it.
			if err := syscall.Mknod(path, syscall.S_IFCHR|0o444, int(mkdev(237, m))); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			files = append(files, path)
		}
		fmt.Fprintf(&b, "NodeName=%s Name=gpu Type=%s MultipleFiles=%s\n", host, typ, strings.Join(files, ","))
	}
	for _, pair := range []string{"1-2", "3-4"} {
		record("a", "nvidia0", pair)
	}
	for _, pair := range caps1 {
		record(typ1, "nvidia1", pair)
	}
	return b.String()
}

// startsOnGPU1 checks that a job for the new type starts at once, on the
// changed GPU's records (indices 2 on), beside whatever still runs, and
// returns its id.
func (c *cluster) startsOnGPU1(newType string, n int) string {
	c.t.Helper()
	next := c.startLoopJob("gpu:" + newType + ":1")
	got := c.jobIndicesOf(c.jobState(next))
	if len(got) != 1 || got[0] < 2 || got[0] >= 2+n {
		c.t.Errorf("a job for gpu:%s:1 after the change got IDX %v, want one of GPU 1's (2-%d)\n%s", newType, got, 1+n, c.jobState(next))
	}
	return next
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

// writeConfs writes the cluster's gres.conf and slurm.conf anew.
func (c *cluster) writeConfs(gres, slurm string) {
	c.t.Helper()
	for name, data := range map[string]string{"gres.conf": gres, "slurm.conf": slurm} {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(data), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
}

// restartFor restarts slurmctld, then slurmd, and waits until the new
// slurmd has registered Gres=want, told by its start time. Gres= and the
// state alone do not tell it: a slurmctld that recovered a busy node
// shows it MIXED with slurm.conf's new Gres= before slurmd registers,
// and a step asked for then is deferred ("Requested nodes are busy";
// seen on 22.05.8 and 20.11.4 under load) and not retried within a minute.
func (c *cluster) restartFor(want string) nodeState {
	c.t.Helper()
	before := c.waitNode(func(nodeState) bool { return true }, "shown").slurmdStart
	if t, err := time.ParseInLocation(slurmconf.TimeLayout, before, time.Local); err == nil {
		// A slurmd started within the same second would show the same time.
		time.Sleep(time.Until(t.Add(1100 * time.Millisecond)))
	}
	c.restart("slurmctld", "-D", "-i")
	c.waitSlurmctld()
	c.restart("slurmd", "-D")
	return c.waitNode(func(n nodeState) bool {
		return n.gres == want && n.slurmdStart != before && n.slurmdStart != "None" &&
			!strings.Contains(n.state, "UNKNOWN") && !strings.Contains(n.state, "NOT_RESPONDING")
	}, "to register Gres="+want+" from a slurmd started after "+before)
}

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

// startLoopJob submits a batch job asking for gres (and sbatch's
// options) that runs until the test ends, and returns its id once it runs. Its script also ends when
// the cluster's dir is gone: it outlives a killed slurmd
// (proctrack/linuxproc), and a requeued job runs it again.
func (c *cluster) startLoopJob(gres string, options ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := `touch started.$SLURM_JOB_ID; while [ -e slurm.conf ]; do sleep 0.1; done`
	args := append([]string{"--parsable", "-N1", "-n1", "--mem=1", "--gres=" + gres, "-o", "/dev/null", "--chdir", c.dir}, options...)
	out, err := c.command(ctx, "sbatch", append(args, "--wrap", script)...).CombinedOutput()
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
			devs := twoGPUDevices(t, dir)
			gres := func(typ1 string, files1 []string) string { return twoGPUGres(host, devs, typ1, files1) }
			// Two jobs of 1 MB each fit beside each other.
			nodeConf := func(typ1 string, n1 int) string {
				return fmt.Sprintf("%s RealMemory=2 Gres=gpu:a:2,gpu:%s:%d", hardware(t), typ1, n1)
			}
			p := freePorts(t)
			// TreeWidth=65533: 22.05's dynamic nodes need it (its slurm.conf(5)).
			lines := append(baseConf(dir, host, p), "MaxNodeCount=4", "TreeWidth=65533",
				"PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
			conf := writeConfigs(t, dir, gres("b", []string{"nvidia2", "nvidia3"}), strings.Join(lines, "\n")+"\n")
			c := startClusterArgs(t, dir, host, conf, "-D", "-Z", "--conf", nodeConf("b", 2))
			c.allowed = append(c.allowed, logLine{"slurm", regexp.MustCompile(`.`)})
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

// TestPerGPUKeepOff asks real Slurm how to keep jobs off a GPU while it
// changes (step 2 of the per-GPU sequence in docs/rebalance.md), with a
// job for GPU 1's old type pending. GPU 1 changes from b:2 to c:2 (node
// total unchanged), slurmctld and then slurmd restarted, while a job runs
// on GPU 0. Two ways:
//   - placeholder: a job holding every device of GPU 1's type (gpu:b:2,
//     a type only GPU 1 has). Up to 22.05 it runs on, on the changed
//     devices, until cancelled, and the old type's job never runs. From
//     24.11 slurmctld kills it as it starts with the new slurm.conf, and
//     then starts the old type's job, before slurmd registers the new
//     records, with no GPU at all: a job that asked for one runs without.
//   - drain: the node drained first (running jobs run on), GPU 1 checked
//     free, the change made, the node resumed once it registers the new
//     records. On every release the old type's job never runs, and a job
//     for the new type then starts on GPU 1.
func TestPerGPUKeepOff(t *testing.T) {
	requireCluster(t)
	Require(t, "sbatch", "scancel")
	host := shortHostname(t)
	hw := hardware(t) + " RealMemory=3"
	for _, way := range []string{"placeholder", "drain"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			dir := shortTempDir(t)
			devs := twoGPUDevices(t, dir)
			p := freePorts(t)
			nodeLine := func(typ1 string) string { return fmt.Sprintf("NodeName=%s Gres=gpu:a:2,gpu:%s:2", host, typ1) }
			files := []string{"nvidia2", "nvidia3"}
			conf := writeConfigs(t, dir, twoGPUGres(host, devs, "b", files), slurmConf(dir, host, nodeLine("b"), hw, p))
			c := startClusterIn(t, dir, host, conf)
			c.waitNode(func(n nodeState) bool { return n.state == "IDLE" }, "IDLE")
			job := c.startLoopJob("gpu:a:1")
			idx := c.jobIndicesOf(c.jobState(job))
			var holder string
			if way == "placeholder" {
				// --no-requeue: killed by the change, it must not wait
				// again for a type that is gone.
				holder = c.startLoopJob("gpu:b:2", "--no-requeue")
			} else {
				if out, err := c.command(context.Background(), "scontrol", "update", "NodeName="+host, "State=DRAIN", "Reason=slurm-mig: GPU 1 to c:2").CombinedOutput(); err != nil {
					t.Fatalf("scontrol update State=DRAIN: %v\n%s", err, out)
				}
				c.waitNode(func(n nodeState) bool { return strings.Contains(n.state, "DRAIN") }, "drained")
			}
			// A job for GPU 1's old type, pending; it writes the GPUs it
			// got if it ever starts.
			waiting := c.sbatch("--mem=1", "--gres=gpu:b:1", "--chdir", dir, "--wrap", `echo "$SLURM_JOB_GPUS" > started.$SLURM_JOB_ID; while [ -e slurm.conf ]; do sleep 0.1; done`)
			c.waitFor("job "+waiting+" to wait", func() (bool, string) {
				l := c.jobState(waiting)
				return field(l, "JobState") == "PENDING" && field(l, "Reason") != "None", l
			})
			if way == "drain" && len(c.jobIndicesOf(c.jobState(job))) != 1 {
				t.Fatalf("the drain moved job %s: %s", job, c.jobState(job))
			}

			c.writeConfs(twoGPUGres(host, devs, "c", files), slurmConf(dir, host, nodeLine("c"), hw, p))
			killed := way == "placeholder" && !release.Before(typeGoneKillsSince)
			if killed {
				c.expectLog("slurmctld", regexp.MustCompile(`error: _find_invalid_job_gres_on_node: Killing job `+holder+`: gres/gpu type b not found on node `+host+`$`))
				c.expectLog("slurmctld", regexp.MustCompile(`error: Aborting JobId=`+holder+` due to use of invalid GRES configuration`))
				c.expectLog("slurmd", regexp.MustCompile(`error: \*\*\* JOB `+holder+` ON `+host+` CANCELLED AT \S+ DUE TO NODE FAILURE`))
			} else if holder != "" {
				c.allowed = append(c.allowed, logLine{"slurmd", regexp.MustCompile(`error: \*\*\* JOB ` + holder + ` ON ` + host + ` CANCELLED AT \S+ \*\*\*$`)})
			}
			n := c.restartFor("gpu:a:2,gpu:c:2")
			if killed {
				c.waitFor("the placeholder killed", func() (bool, string) {
					h := c.jobState(holder)
					return field(h, "JobState") == "NODE_FAIL", h
				})
			}
			// Give the scheduler a pass or two with the new records.
			time.Sleep(2 * time.Second)
			w := c.jobState(waiting)
			t.Logf("after the change: node State=%s Gres=%s Reason=%s; job for gpu:b:1 %s %s %s (Reason=%s)",
				n.state, n.gres, n.reason, waiting, field(w, "JobState"), idxRe.FindString(w), field(w, "Reason"))
			switch {
			case way == "drain":
				if !strings.Contains(n.state, "DRAIN") {
					t.Errorf("after the change the node is %s; want still drained", n.state)
				}
				if out, err := c.command(context.Background(), "scontrol", "update", "NodeName="+host, "State=RESUME").CombinedOutput(); err != nil {
					t.Fatalf("scontrol update State=RESUME: %v\n%s", err, out)
				}
			case killed:
				// The old type's job started on GPU 1 in the window.
				c.waitFor("job "+waiting+" for the old type to start", func() (bool, string) {
					_, err := os.Stat(filepath.Join(dir, "started."+waiting))
					return err == nil, c.jobState(waiting)
				})
				// It runs with no GPU at all: slurmctld scheduled it
				// when the node still had type b, and gave it none.
				w := c.jobState(waiting)
				if gpus := readFile(t, filepath.Join(dir, "started."+waiting)); gpus != "" || field(w, "JobState") != "RUNNING" || idxRe.MatchString(w) {
					t.Errorf("the job for gpu:b:1 is %s with SLURM_JOB_GPUS=%q; want RUNNING with no GPU, as seen on 24.11.5 and 26.05.5\n%s", field(w, "JobState"), gpus, w)
				}
				t.Logf("the placeholder does not keep jobs off GPU 1: the job for the old type b runs with no GPU (SLURM_JOB_GPUS empty, no GRES shown)")
			default:
				h := c.jobState(holder)
				if field(h, "JobState") != "RUNNING" || fmt.Sprint(c.jobIndicesOf(h)) != "[2 3]" {
					t.Errorf("after the change the placeholder is %s on IDX %v; want RUNNING on GPU 1's [2 3]\n%s", field(h, "JobState"), c.jobIndicesOf(h), h)
				}
				if out, err := c.command(context.Background(), "scancel", holder).CombinedOutput(); err != nil {
					t.Fatalf("scancel %s: %v\n%s", holder, err, out)
				}
			}
			if !killed {
				c.startsOnGPU1("c", 2)
				// The job for the old type never ran: it waits for a type
				// the node no longer has.
				if w := c.jobState(waiting); field(w, "JobState") != "PENDING" {
					t.Errorf("the job for gpu:b:1 is %s; want PENDING, never run\n%s", field(w, "JobState"), w)
				}
			}
			if after := c.jobState(job); field(after, "JobState") != "RUNNING" || fmt.Sprint(c.jobIndicesOf(after)) != fmt.Sprint(idx) {
				t.Errorf("job %s on GPU 0 is %s, IDX %v; want RUNNING on IDX %v", job, field(after, "JobState"), c.jobIndicesOf(after), idx)
			}
		})
	}
}

// typeGoneKillsSince is the first release of the matrix seen to kill, as
// slurmctld starts, a running job whose GRES type the node's Gres= no
// longer has (24.11.5; 22.05.8 and 20.11.4 keep it on the same indices).
var typeGoneKillsSince = slurmconf.Version{Major: 24, Minor: 11, Micro: -1}
