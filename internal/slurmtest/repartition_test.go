package slurmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// The repartition tests move node gpu01 of a two-node cluster from layout
// A (an H100 as seven 1g.10gb) to layout B (NVIDIA's all-balanced: one
// 3g.40gb, one 2g.20gb, two 1g.10gb), while gpu02 keeps A and runs a job.
// B has fewer devices than A, so a slurmd that registers B while
// slurmctld still holds A's counts drains the node ("gres/gpu count
// reported lower than configured"), and B has types A has not, so a
// slurmd that still offers A must not register while slurmctld holds B's
// counts either: slurmd is stopped from the drain until slurmctld has
// them (docs/repartition.md).
//
// The layout switch stands in for mig-parted: the node's snapshot is
// replaced by B's, and the device files of both layouts exist from the
// start (the caps of the ids mig-parted would get).

const repartitionMigConfig = `version: v1
mig-configs:
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
  all-balanced:
    - device-filter: ["0x233010DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
`

// TestRepartition runs scripts/repartition/repartition.sh on gpu01, in a
// classic cluster (each node its own gres.conf and copy of slurm.conf,
// `node --update`) and a configless one (`merge` of the nodes' gen
// outputs, served by slurmctld), and checks what the sequence promises:
// the node is never INVAL nor drained for its counts, it ends IDLE with
// B's counts (what plan said before the switch), a job asking for a type
// only B has runs there and gets its MIG UUID from the TaskProlog, and a
// job on gpu02 runs through the whole repartition untouched.
func TestRepartition(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	for _, configless := range []bool{false, true} {
		name := "classic"
		if configless {
			name = "configless"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if configless {
				Require(t, "munged")
			}
			r := startRepartition(t, configless)
			r.run(t, scriptDriver)
		})
	}
}

// TestRepartitionAnsible is TestRepartition with the playbook,
// scripts/repartition/repartition.yml, run by ansible-playbook (Debian's
// ansible-core) on a configless cluster, for which it is written.
func TestRepartitionAnsible(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	Require(t, "munged")
	testtools.Require(t, "ansible-core", "ansible-playbook")
	r := startRepartition(t, true)
	r.run(t, ansibleDriver)
}

// TestRepartitionReconfigureOnly runs the script with slurmctld left
// running, so that only the script's `scontrol reconfigure` gives it the
// new counts. From 23.11, where a reconfigure starts slurmctld afresh,
// that is enough, and the test checks all that TestRepartition does.
// Before, slurmctld keeps gpu01's old count ("Attempt to change gres/gpu
// Count on node gpu01 from 7 to 4 invalid with File configuration") and
// refuses the node's registration.
func TestRepartitionReconfigureOnly(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	if !release.Before(reconfigureRestartsSince) {
		r := startRepartition(t, false)
		r.ctldRestart = "true"
		r.run(t, scriptDriver)
		return
	}
	t.Run("registration-refused-before-"+reconfigureRestartsSince.String(), func(t *testing.T) {
		r := startRepartition(t, false)
		r.ctldRestart = "true"
		refused := "error: _slurm_rpc_node_registration node=gpu01: Invalid argument"
		r.expectLog("slurmctld", regexp.MustCompile(`error: Attempt to change gres/gpu Count on node gpu01 from 7 to 4 invalid with File configuration`))
		r.expectLog("slurmctld", regexp.MustCompile(regexp.QuoteMeta(refused)))
		// 22.05 also sets the node INVAL, and says why. 20.11 does not:
		// the node stays drained, as the admin left it, and the script,
		// which reads the state, may resume it. In one run 20.11 said no
		// more; in another it logged a drain for the count ("state to
		// DRAIN") of the node already drained.
		r.allowed = append(r.allowed, logLine{"slurmctld", regexp.MustCompile(`error: Setting node gpu01 state to (INVAL|DRAIN) with reason:gres/gpu count reported lower than configured \(4 < 7\)`)})
		cmd := scriptDriver(r, t)
		out, err := cmd.CombinedOutput()
		r.waitFor("slurmctld to refuse gpu01's registration", func() (bool, string) {
			data, _ := os.ReadFile(filepath.Join(r.dir, "slurmctld.log"))
			return strings.Contains(string(data), refused), string(out)
		})
		st := r.waitNodeNamed("gpu01", registered, "to register")
		t.Logf("reconfigure only: the script: %v; gpu01 is %s, Reason=%s\n%s", err, st.state, st.reason, out)
		// Where the state shows it, the script must stop there.
		if strings.Contains(st.state, "INVAL") && (err == nil || !strings.Contains(string(out), "repartition: gpu01 registered INVAL") || strings.Contains(string(out), "resumed")) {
			t.Errorf("gpu01 is %s, yet the script did not stop at it: %v\n%s", st.state, err, out)
		}
	})
}

// TestRepartitionNaiveOrderDrains is the order sites report draining
// nodes with: mig-parted's hook writes gres.conf and restarts slurmd
// before slurm.conf has the new counts. slurmd registers B against A's
// seven devices and slurmctld drains the node for it.
func TestRepartitionNaiveOrderDrains(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	r := startRepartition(t, false)
	r.switchLayout(t)
	r.gen(t, "gpu01")
	r.stopSlurmd(t, "gpu01")
	r.startSlurmd(t, "gpu01")
	// slurmd keeps only the types its slurm.conf line names: of B it
	// reports the two 1g.10gb, against A's seven.
	reason := "gres/gpu count reported lower than configured (2 < 7)"
	r.expectLog("slurmctld", regexp.MustCompile(`error: .*`+regexp.QuoteMeta(reason)))
	r.expectLog("slurmctld", regexp.MustCompile(`error: _slurm_rpc_node_registration node=gpu01: Invalid argument`))
	st := r.waitNodeNamed("gpu01", func(n nodeState) bool { return drained(n) }, "to be drained")
	if !strings.HasPrefix(st.reason, reason) {
		t.Fatalf("gpu01 is %s with Reason=%s, want the drain for %s\n%s", st.state, st.reason, reason, r.logs())
	}
	t.Logf("naive order: gpu01 is %s, Reason=%s", st.state, st.reason)
	staleDrains.Add(1)
}

// TestRepartitionEarlySlurmConfRefused is the other wrong order:
// slurmctld reads B's counts (slurm.conf changed, slurmctld restarted and
// reconfigured) while gpu01's slurmd, drained but running, still offers
// A. slurmd reads the new slurm.conf at the reconfigure, registers A's
// devices against B's counts, and slurmctld refuses the registration:
// the 1g.10gb it keeps are fewer than B's four devices, and it has no
// 3g.40gb or 2g.20gb at all.
func TestRepartitionEarlySlurmConfRefused(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	r := startRepartition(t, false)
	refused := "error: _slurm_rpc_node_registration node=gpu01: Invalid argument"
	r.expectLog("slurmctld", regexp.MustCompile(regexp.QuoteMeta(refused)))
	// What slurmctld says of it differs by release (22.05: INVAL, "(2 <
	// 4)"); the refusal above is what they share. Either node may
	// register between the restart and the reconfigure, as in
	// TestRepartition, with the slurm.conf its slurmd read at start (a
	// CI run on 20.11.4 saw gpu01 do so).
	r.allowed = append(r.allowed,
		logLine{"slurmctld", regexp.MustCompile(`error: Setting node gpu01 state to (INVAL|DRAIN) with reason:gres/gpu count reported lower than configured \(\d+ < 4\)`)},
		logLine{"slurmctld", regexp.MustCompile(`error: Node gpu0[12] appears to have a different slurm.conf than the slurmctld`)})
	must(t, r.command(context.Background(), "scontrol", "update", "NodeName=gpu01", "State=DRAIN", "Reason=repartition").Run())
	conf := filepath.Join(r.dir, "slurm.conf")
	runSlurmMig(t, "node", "--root", r.devDir, "--from", r.b, "--node-name", "gpu01", "--update", conf, "--no-state")
	for _, copy := range r.nodeConf {
		copyFile(t, conf, copy)
	}
	if out, err := r.command(context.Background(), "sh", "-c", r.slurmctldRestart()).CombinedOutput(); err != nil {
		t.Fatalf("restarting slurmctld: %v\n%s", err, out)
	}
	r.waitSlurmctld()
	must(t, r.command(context.Background(), "scontrol", "reconfigure").Run())
	r.waitFor("slurmctld to refuse gpu01's registration", func() (bool, string) {
		data, _ := os.ReadFile(filepath.Join(r.dir, "slurmctld.log"))
		return strings.Contains(string(data), refused), r.daemonLogs()
	})
	st := r.waitNodeNamed("gpu01", registered, "to register")
	t.Logf("slurm.conf first: gpu01 is %s, Reason=%s", st.state, st.reason)
}

// repartition is the two-node cluster of the repartition tests.
type repartition struct {
	*cluster
	configless bool
	ctlPort    int
	munge      string
	devDir     string // --root of every slurm-mig run: the device files and mig-minors
	b          string // layout B's snapshot
	migConfig  string
	wrapper    string            // slurm-mig that moves gen -o's /dev/ paths under devDir
	nodeConf   map[string]string // classic: each node's slurm.conf
	// ctldRestart is what the script runs to restart slurmctld: the
	// restart, or "true" to leave it to the script's reconfigure.
	ctldRestart string
}

// snapshotPath is the snapshot standing in for node's NVML.
func (r *repartition) snapshotPath(node string) string { return filepath.Join(r.dir, node+".json") }

// gresPath is where gen -o writes node's gres.conf: its own (classic) or
// its fragment for merge (configless).
func (r *repartition) gresPath(node string) string {
	if r.configless {
		return filepath.Join(r.dir, "frags", node+".conf")
	}
	return filepath.Join(filepath.Dir(r.nodeConf[node]), "gres.conf")
}

func (r *repartition) statePath(node string) string {
	return filepath.Join(r.dir, "state-"+node+".json")
}

// h100Layouts writes the snapshots of layouts A and B of the real H100
// (whose profile table plan needs) to dir.
func h100Layouts(t *testing.T, dir string) (a, b string) {
	t.Helper()
	node, err := snapshot.Load(fixture.Path(t, "real/h100-snapshot-v2/snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, devs []model.MigDevice) string {
		g := &node.GPUs[0]
		g.MigEnabled, g.MigPending, g.MigDevices = true, true, devs
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := snapshot.Write(f, node); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mig := func(gi int, profile string, slices int) model.MigDevice {
		return model.MigDevice{GPUInstanceID: gi, UUID: fmt.Sprintf("MIG-0a1b2c3d-4e5f-5a6b-8c7d-%012x", gi), Profile: profile, GISlices: slices}
	}
	var sevens []model.MigDevice
	for gi := 7; gi <= 13; gi++ {
		sevens = append(sevens, mig(gi, "1g.10gb", 1))
	}
	a = write("a.json", sevens)
	// New GI ids, as mig-parted gets them: B's devices are other devices,
	// with other caps and UUIDs, even where the type is A's.
	balanced := []model.MigDevice{mig(2, "3g.40gb", 4), mig(5, "2g.20gb", 2), mig(1, "1g.10gb", 1), mig(14, "1g.10gb", 1)}
	b = write("b.json", balanced)
	return a, b
}

// startRepartition starts the cluster: gpu01 and gpu02 with layout A
// (the nodes of inB with layout B), gen -o on each, slurm.conf with each
// node's own line, the TaskProlog running slurm-mig env (21.08 on:
// before, Slurm gives tasks device numbers, which env does not read),
// both slurmd registered IDLE.
func startRepartition(t *testing.T, served bool, inB ...string) *repartition {
	t.Helper()
	return startRepartitionGres(t, served, "", inB...)
}

// startRepartitionGres is startRepartition with otherGres (name:count, a
// GRES slurm.conf alone describes) beside the gpu items of gpu01's Gres=,
// its name added to GresTypes=.
func startRepartitionGres(t *testing.T, served bool, otherGres string, inB ...string) *repartition {
	t.Helper()
	host := shortHostname(t)
	dir := shortTempDir(t)
	r := &repartition{cluster: &cluster{t: t, dir: dir, host: host}, configless: served, devDir: filepath.Join(dir, "root"), nodeConf: map[string]string{}}
	r.ctldRestart = r.slurmctldRestart()
	a, b := h100Layouts(t, dir)
	r.b = b
	for _, snap := range []string{a, b} {
		l := snapshotLayout(t, filepath.Base(snap), snap, fixture.Path(t, "real/h100-snapshot-v2/root"))
		makeDevices(t, r.devDir, l.node)
	}
	copyMigMinors(t, fixture.Path(t, "real/h100-snapshot-v2/root"), r.devDir)
	r.migConfig = filepath.Join(dir, "mig.yaml")
	must(t, os.WriteFile(r.migConfig, []byte(repartitionMigConfig), 0o644))
	r.wrapper = filepath.Join(dir, "slurm-mig")
	// gen writes the node's /dev/ paths, to -o or stdout; this machine's
	// device files are under devDir.
	wrapper := fmt.Sprintf(`#!/bin/sh
out=
prev=
for a; do [ "$prev" = -o ] && out=$a; prev=$a; done
if [ "$1" != gen ]; then exec %[1]s "$@"; fi
if [ -n "$out" ]; then %[1]s "$@" && sed -i 's#/dev/#%[2]s/dev/#g' "$out"; exit; fi
%[1]s "$@" >%[3]s/gen.out || exit
sed 's#/dev/#%[2]s/dev/#g' %[3]s/gen.out
`, slurmMig, r.devDir, dir)
	must(t, os.WriteFile(r.wrapper, []byte(wrapper), 0o755))

	nums := freeTCPPorts(t, 4)
	r.ctlPort = nums[0]
	lines := baseConf(dir, host, ports{slurmctld: nums[0], slurmd: nums[1]})
	set := map[string]string{"SlurmdSpoolDir": dir + "/spool-%n", "SlurmdPidFile": dir + "/slurmd-%n.pid", "SlurmdLogFile": dir + "/slurmd-%n.log"}
	if served {
		r.munge = filepath.Join(dir, "munge")
		set["AuthType"], set["CredType"] = "auth/munge", "cred/munge"
		lines = append(lines, "AuthInfo=socket="+r.munge+"/munge.socket.2", "SlurmctldParameters=enable_configless")
	}
	if otherGres != "" {
		name, _, _ := strings.Cut(otherGres, ":")
		set["GresTypes"] = "gpu," + name
	}
	for i, line := range lines {
		key, _, _ := strings.Cut(line, "=")
		if v, ok := set[key]; ok {
			lines[i] = key + "=" + v
		}
	}
	if !release.Before(gresIndexEnvSince) {
		prolog := filepath.Join(dir, "taskprolog")
		// env reads the slurm.conf and gres.conf the node's slurmd
		// read: its own copy (classic), or what it fetched (configless).
		conf := dir + `/conf-"$SLURMD_NODENAME"/slurm.conf`
		if served {
			conf = dir + `/spool-"$SLURMD_NODENAME"/conf-cache/slurm.conf`
		}
		script := fmt.Sprintf("#!/bin/sh\nexec %s --root %s env --slurm-conf %s --state %s/state-\"$SLURMD_NODENAME\".json\n", nodeCommand(slurmMig), r.devDir, conf, dir)
		must(t, os.WriteFile(prolog, []byte(script), 0o755))
		lines = append(lines, "TaskProlog="+prolog)
	}
	hw := hardware(t)
	for i, node := range []string{"gpu01", "gpu02"} {
		if slices.Contains(inB, node) {
			copyFile(t, b, r.snapshotPath(node))
		} else {
			copyFile(t, a, r.snapshotPath(node))
		}
		line := strings.TrimSpace(runSlurmMig(t, r.slurmMigArgs(node, "node")...))
		if node == "gpu01" && otherGres != "" {
			words := strings.Fields(line)
			for i, w := range words {
				if strings.HasPrefix(w, "Gres=") {
					words[i] = w + "," + otherGres
				}
			}
			line = strings.Join(words, " ")
		}
		lines = append(lines, fmt.Sprintf("%s NodeAddr=127.0.0.1 Port=%d %s", line, nums[2+i], hw))
	}
	lines = append(lines, "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
	conf := strings.Join(lines, "\n") + "\n"
	if served {
		must(t, os.MkdirAll(filepath.Join(dir, "frags"), 0o755))
	}
	for _, node := range []string{"gpu01", "gpu02"} {
		must(t, os.MkdirAll(filepath.Join(dir, "spool-"+node), 0o755))
	}
	if !served {
		for _, node := range []string{"gpu01", "gpu02"} {
			nodeDir := filepath.Join(dir, "conf-"+node)
			must(t, os.MkdirAll(nodeDir, 0o755))
			r.nodeConf[node] = filepath.Join(nodeDir, "slurm.conf")
			must(t, os.WriteFile(r.nodeConf[node], []byte(conf), 0o644))
			writeReleaseFiles(t, nodeDir)
		}
	}
	for _, node := range []string{"gpu01", "gpu02"} {
		r.gen(t, node)
	}
	gresConf := ""
	if served {
		gresConf = runSlurmMig(t, "merge", filepath.Join(dir, "frags"))
	}
	path := writeConfigs(t, dir, gresConf, conf)
	r.env = slurmEnv(path)
	t.Cleanup(r.checkLogs)
	t.Cleanup(r.checkSlurmdLogs)
	// slurmctld restarts while the test polls it every 100 ms (watch)
	// and the script or playbook polls it too: a poll cut off by the
	// restart, or slowed on a busy machine, times out on slurmctld's side
	// (seen once, on 22.05 under a load of 10 on 2 cores). It says
	// nothing of the config.
	// The answer to such a poll may time out the same way (seen once, on
	// 22.05, with ansible-playbook polling too).
	r.allowed = append(r.allowed, logLine{"slurmctld", regexp.MustCompile(`error: slurm_receive_msg \[127\.0\.0\.1:\d+\]: Socket timed out on send/recv operation$`)},
		logLine{"slurmctld", regexp.MustCompile(`error: slurm_msg_sendto: address:port=127\.0\.0\.1:\d+ msg_type=\d+: Socket timed out on send/recv operation$`)})
	if served {
		(&configless{cluster: r.cluster, munge: r.munge}).startMunged()
		// A poll (the test's watch, the script's) that slurmctld
		// verified at munge's compiled-in socket, not AuthInfo's, and
		// refused: seen once, in CI on 22.05.8 with the package's other
		// clusters running, while the script restarted slurmctld and
		// reconfigured; the script went on and the node ended as
		// planned. Most likely a request met slurmctld reloading its
		// config (not traced). It says nothing of the config.
		r.allowed = append(r.allowed,
			logLine{"slurmctld", regexp.MustCompile(`error: If munged is up, restart with --num-threads=10$`)},
			logLine{"slurmctld", regexp.MustCompile(`error: Munge decode failed: Failed to access "/run/munge/munge\.socket\.2": No such file or directory \(Did you start munged\?\)$`)},
			logLine{"slurmctld", regexp.MustCompile(`error: slurm_unpack_received_msg: \[\[localhost\]:\d+\] (auth_g_verify: REQUEST_NODE_INFO has authentication error: Unspecified error|Protocol authentication error)$`)},
			logLine{"slurmctld", regexp.MustCompile(`error: slurm_receive_msg \[127\.0\.0\.1:\d+\]: Unspecified error$`)})
	}
	r.startSlurmctld(t)
	for _, node := range []string{"gpu01", "gpu02"} {
		r.startSlurmd(t, node)
	}
	for _, node := range []string{"gpu01", "gpu02"} {
		if st := r.waitNodeNamed(node, registered, "to register"); st.state != "IDLE" {
			t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", node, st.state, st.reason, r.logs())
		}
	}
	return r
}

// slurmMigArgs are the flags that make slurm-mig read node's layout.
func (r *repartition) slurmMigArgs(node, command string) []string {
	return []string{command, "--root", r.devDir, "--from", r.snapshotPath(node), "--node-name", node}
}

// gen runs gen -o for node, with its device state, as the mig-parted
// hook does.
func (r *repartition) gen(t *testing.T, node string) {
	t.Helper()
	args := append(r.slurmMigArgs(node, "gen"), "--no-cores", "--slurm-version", release.String(), "--state", r.statePath(node), "-o", r.gresPath(node))
	cmd := exec.Command(r.wrapper, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("slurm-mig %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// switchLayout is mig-parted applying B on gpu01.
func (r *repartition) switchLayout(t *testing.T) {
	t.Helper()
	copyFile(t, r.b, r.snapshotPath("gpu01"))
}

// slurmdCommand is the shell command that starts node's slurmd as a
// daemon (it writes its pid file): from its own copy of slurm.conf, or
// configless from slurmctld, in a mount namespace where the cluster's
// munge socket dir is /run/munge (see startSlurmd of configless).
func (r *repartition) slurmdCommand(node string) string {
	if !r.configless {
		return fmt.Sprintf("SLURM_CONF=%s slurmd -N %s", r.nodeConf[node], node)
	}
	inner := `mount -t tmpfs slurmtest /run && mkdir /run/munge && mount --bind "$0" /run/munge && unset SLURM_CONF && exec slurmd -N "$1" --conf-server "$2"`
	return fmt.Sprintf("unshare -m sh -c '%s' %s %s 127.0.0.1:%d", inner, r.munge, node, r.ctlPort)
}

func (r *repartition) pidFile(node string) string {
	return filepath.Join(r.dir, "slurmd-"+node+".pid")
}

// The daemons run as daemons (no -D), not as children of the test as
// other clusters' do: the repartition script stops and starts them, as
// systemctl would, through their pid files.

// slurmctldCommand starts slurmctld; -i as in the other clusters.
const slurmctldCommand = "slurmctld -i"

// stopCommand is the shell command that stops the daemon of pidFile and
// waits until it is gone.
func stopCommand(pidFile string) string {
	return fmt.Sprintf("p=$(cat %s) && kill $p && while kill -0 $p 2>/dev/null; do sleep 0.1; done", pidFile)
}

// startSlurmctld starts slurmctld and waits until it answers.
func (r *repartition) startSlurmctld(t *testing.T) {
	t.Helper()
	r.startDaemon(t, "slurmctld", slurmctldCommand, filepath.Join(r.dir, "slurmctld.pid"))
	r.waitSlurmctld()
}

// startSlurmd starts node's slurmd.
func (r *repartition) startSlurmd(t *testing.T, node string) {
	t.Helper()
	r.startDaemon(t, "slurmd "+node, r.slurmdCommand(node), r.pidFile(node))
}

// startDaemon runs the shell command that starts a daemon and waits for
// its pid file; t's end stops it, and whichever daemon the pid file then
// names (one the script started again).
func (r *repartition) startDaemon(t *testing.T, name, command, pidFile string) {
	t.Helper()
	cmd := r.command(context.Background(), "sh", "-c", command)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting %s: %v\n%s", name, err, out)
	}
	var pid int
	r.waitFor(name+"'s pid file", func() (bool, string) {
		pid = readPid(pidFile)
		return pid > 0, pidFile
	})
	t.Cleanup(func() {
		stopPid(readPid(pidFile))
		stopPid(pid)
	})
}

// stopSlurmd stops node's slurmd and waits until it is gone.
func (r *repartition) stopSlurmd(t *testing.T, node string) {
	t.Helper()
	pid := readPid(r.pidFile(node))
	if pid <= 0 {
		t.Fatalf("%s names no slurmd", r.pidFile(node))
	}
	stopPid(pid)
}

// readPid is the pid in a daemon's pid file, 0 when there is none.
func readPid(pidFile string) int {
	data, err := os.ReadFile(pidFile)
	var pid int
	if err != nil {
		return 0
	}
	if _, err := fmt.Sscan(string(data), &pid); err != nil {
		return 0
	}
	return pid
}

// stopPid sends SIGTERM to a daemon the test started and waits up to 10 s
// for it to go, then SIGKILLs it.
func stopPid(pid int) {
	if pid <= 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 200; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// daemonLogs is the tail of each daemon's log file: these daemons write
// nothing to the test's .out files.
func (r *repartition) daemonLogs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(r.dir, "slurm*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s (tail)\n%s\n", filepath.Base(f), strings.Join(lines[max(0, len(lines)-25):], "\n"))
	}
	return b.String()
}

// checkSlurmdLogs fails the test for every error: or fatal: line of the
// slurmd logs (slurmd-<node>.log), as checkLogs does for slurmctld's.
func (r *repartition) checkSlurmdLogs() {
	files, _ := filepath.Glob(filepath.Join(r.dir, "slurmd-*.log"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			r.t.Error(err)
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if (strings.Contains(line, "error: ") || strings.Contains(line, "fatal: ")) && !knownNoise("slurmd.log", line) {
				r.t.Errorf("%s: %s", filepath.Base(f), line)
			}
		}
	}
}

// watch polls gpu01's state until stop is called, and returns every
// state it saw that is INVAL, or drained for anything but the
// repartition's own reason.
func (r *repartition) watch(ownReason string) (stop func() []string) {
	var mu sync.Mutex
	var bad []string
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			out, err := r.command(context.Background(), "scontrol", "show", "node", "-o", "gpu01").CombinedOutput()
			line := strings.TrimSpace(string(out))
			_, reason, _ := strings.Cut(line, " Reason=")
			state := field(line, "State")
			if err == nil && (strings.Contains(state, "INVAL") || drained(nodeState{state: state}) && !strings.HasPrefix(reason, ownReason) || strings.Contains(reason, "count reported lower")) {
				mu.Lock()
				bad = append(bad, line)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return bad
	}
}

// sbatchWaiting submits a job on node that holds the GPUs of gres
// (--gres=) until the file release exists, and returns its id once it
// runs.
func (r *repartition) sbatchWaiting(t *testing.T, node, gres, release string) string {
	t.Helper()
	out, err := r.command(context.Background(), "sbatch", "--parsable", "-w", node, "-N1", "-n1", "--gres="+gres, "-o", filepath.Join(r.dir, "job-"+node+".out"),
		"--wrap", fmt.Sprintf("while [ ! -e %s ]; do sleep 0.2; done; echo done", release)).CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch on %s: %v\n%s", node, err, out)
	}
	id := strings.TrimSpace(string(out))
	r.waitJob(id, "RUNNING")
	return id
}

// jobDetail is `scontrol -d show job -o`: with the job's devices on its
// node, as GRES=gpu:<type>:1(IDX:<n>).
func (r *repartition) jobDetail(t *testing.T, id string) string {
	t.Helper()
	out, err := r.command(context.Background(), "scontrol", "-d", "show", "job", "-o", id).CombinedOutput()
	if err != nil {
		t.Fatalf("scontrol -d show job %s: %v\n%s", id, err, out)
	}
	return strings.TrimSpace(string(out))
}

// waitJob waits until job id is in state (squeue, then sacct-free:
// scontrol show job keeps a finished job for MinJobAge).
func (r *repartition) waitJob(id, state string) string {
	r.t.Helper()
	return r.waitJobWithin(30*time.Second, id, state)
}

// waitJobWithin is waitJob for up to patience.
func (r *repartition) waitJobWithin(patience time.Duration, id, state string) string {
	r.t.Helper()
	var line string
	r.waitWithin(patience, "job "+id+" "+state, func() (bool, string) {
		out, _ := r.command(context.Background(), "scontrol", "show", "job", "-o", id).CombinedOutput()
		line = strings.TrimSpace(string(out))
		return field(line, "JobState") == state, line
	})
	return line
}

// A driver is what repartitions gpu01 to all-balanced: the script or the
// playbook, as a command to start.
type driver func(r *repartition, t *testing.T) *exec.Cmd

// scriptDriver runs scripts/repartition/repartition.sh, its variables
// set for this cluster.
func scriptDriver(r *repartition, t *testing.T) *exec.Cmd {
	t.Helper()
	script := filepath.Join(fixture.Root(t), "scripts/repartition/repartition.sh")
	env := append(append([]string(nil), r.env...),
		"NODE=gpu01", "MIG_CONFIG="+r.migConfig, "SELECT=all-balanced",
		"SLURM_MIG="+r.wrapper, "SCONTROL="+r.lookPath(t, "scontrol"), "SQUEUE="+r.lookPath(t, "squeue"),
		"SLURM_MIG_FLAGS="+strings.Join(r.slurmMigFlags(), " "),
		"GEN_FLAGS="+strings.Join(r.genFlags(), " "),
		// What slurm-mig writes beyond its -o stays in the test's dirs.
		jobenv.StatePathEnv+"="+r.statePath("gpu01"), "SLURM_MIG_CLAIMS="+os.Getenv("SLURM_MIG_CLAIMS"),
		"GRES_CONF="+r.gresPath("gpu01"),
		"APPLY="+r.applyCommand(),
		"SLURMD_STOP="+stopCommand(r.pidFile("gpu01")),
		"SLURMD_START="+r.slurmdCommand("gpu01"),
		"SLURMCTLD_RESTART="+r.ctldRestart,
		"TIMEOUT=30",
		"LOCK="+filepath.Join(r.dir, "repartition.lock"),
	)
	if r.configless {
		env = append(env, "FRAGMENTS="+filepath.Join(r.dir, "frags"), "CLUSTER_GRES_CONF="+filepath.Join(r.dir, "gres.conf"))
	} else {
		env = append(env, "SLURM_CONF_COPIES="+r.nodeConf["gpu01"]+" "+r.nodeConf["gpu02"])
	}
	cmd := exec.Command(script)
	cmd.Env, cmd.Dir = env, r.dir
	return cmd
}

// ansibleDriver runs scripts/repartition/repartition.yml with Debian's
// ansible-playbook on this machine, gpu01 and the controller both local,
// its variables set for this cluster.
func ansibleDriver(r *repartition, t *testing.T) *exec.Cmd {
	t.Helper()
	playbook := filepath.Join(fixture.Root(t), "scripts/repartition/repartition.yml")
	sh := func(command string) []string { return []string{"/bin/sh", "-c", command} }
	vars := map[string]any{
		"slurm_mig": r.wrapper, "scontrol": r.lookPath(t, "scontrol"), "squeue": r.lookPath(t, "squeue"),
		"mig_config": r.migConfig, "mig_config_name": "all-balanced",
		"slurm_conf": filepath.Join(r.dir, "slurm.conf"), "gres_conf": filepath.Join(r.dir, "gres.conf"), "fleet_dir": filepath.Join(r.dir, "frags"),
		"slurm_mig_flags": r.slurmMigFlags(), "gen_flags": []string{"--no-cores", "--slurm-version", release.String()},
		"state_flags": []string{"--state", r.statePath("gpu01")}, "work_dir": r.dir,
		"mig_parted_apply": sh(r.applyCommand()), "slurmd_stop": sh(stopCommand(r.pidFile("gpu01"))),
		"slurmd_start": sh(r.slurmdCommand("gpu01")), "slurmctld_restart": sh(r.slurmctldRestart()),
		"poll_seconds": 1, "timeout_seconds": 30,
		"flock": r.lookPath(t, "flock"), "lock": filepath.Join(r.dir, "repartition.lock"),
	}
	data, err := json.Marshal(vars)
	must(t, err)
	varsFile, inventory := filepath.Join(r.dir, "vars.json"), filepath.Join(r.dir, "inventory")
	must(t, os.WriteFile(varsFile, data, 0o644))
	must(t, os.WriteFile(inventory, []byte("[gpu_nodes]\ngpu01\n[slurm_controller]\nctl\n[all:vars]\nansible_connection=local\nansible_python_interpreter=/usr/bin/python3\n"), 0o644))
	cmd := exec.Command(r.lookPath(t, "ansible-playbook"), "-i", inventory, "-e", "@"+varsFile, playbook)
	// Ansible keeps its own files under HOME (~/.ansible) and its temp
	// dirs: both in the test's dir.
	ansibleDir := filepath.Join(r.dir, "ansible")
	cmd.Env = append(append([]string(nil), r.env...), "HOME="+ansibleDir, "ANSIBLE_HOME="+ansibleDir,
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(ansibleDir, "tmp"), "ANSIBLE_REMOTE_TEMP="+filepath.Join(ansibleDir, "tmp"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0",
		jobenv.StatePathEnv+"="+r.statePath("gpu01"), "SLURM_MIG_CLAIMS="+os.Getenv("SLURM_MIG_CLAIMS"))
	cmd.Dir = r.dir
	return cmd
}

// The commands that stand in for mig-parted and systemctl.
func (r *repartition) applyCommand() string { return "cp " + r.b + " " + r.snapshotPath("gpu01") }
func (r *repartition) slurmctldRestart() string {
	return stopCommand(filepath.Join(r.dir, "slurmctld.pid")) + " && " + slurmctldCommand
}

// slurmMigFlags make slurm-mig read gpu01's layout from its snapshot;
// genFlags are gen's for this release, with gpu01's device state.
func (r *repartition) slurmMigFlags() []string {
	return []string{"--root", r.devDir, "--from", r.snapshotPath("gpu01")}
}
func (r *repartition) genFlags() []string {
	return []string{"--no-cores", "--slurm-version", release.String(), "--state", r.statePath("gpu01")}
}

func (r *repartition) lookPath(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// run submits the jobs, starts the driver and checks what the
// repartition promises.
func (r *repartition) run(t *testing.T, start driver) {
	r.t = t
	// gpu01 runs a job the drain must wait for; gpu02 one that must see
	// nothing of the repartition.
	rel01, rel02 := filepath.Join(r.dir, "release-gpu01"), filepath.Join(r.dir, "release-gpu02")
	job01 := r.sbatchWaiting(t, "gpu01", "gpu:h100_1g.10gb:1", rel01)
	job02 := r.sbatchWaiting(t, "gpu02", "gpu:h100_1g.10gb:1", rel02)
	before02 := r.jobDetail(t, job02)

	planned := strings.TrimSpace(runSlurmMig(t, "plan", "--root", r.devDir, "--from", r.snapshotPath("gpu01"), "--node-name", "gpu01", "--mig-config", r.migConfig, "--select", "all-balanced"))
	wantB := strings.TrimSpace(runSlurmMig(t, "node", "--root", r.devDir, "--from", r.b, "--node-name", "gpu01"))
	// plan orders the types as the config lists them, node as NVML
	// lists the devices, which mig-parted's GI ids decide: the counts
	// must agree, the order need not.
	if !maps.Equal(nodeLineCounts(t, planned), nodeLineCounts(t, wantB)) {
		t.Fatalf("plan printed %s, layout B is %s", planned, wantB)
	}

	// slurmctld restarts with the new slurm.conf before the reconfigure
	// that makes gpu02's slurmd read it: gpu02 may register in between.
	r.allowed = append(r.allowed, logLine{"slurmctld", regexp.MustCompile(`error: Node gpu02 appears to have a different slurm.conf than the slurmctld`)})
	reason := "slurm-mig repartition to all-balanced"
	stop := r.watch(reason)
	cmd := start(r, t)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	// The drain waits for gpu01's job: the node is DRAINING until it ends.
	r.waitNodeNamed("gpu01", func(n nodeState) bool { return strings.Contains(n.state, "DRAIN") }, "to be draining")
	time.Sleep(time.Second)
	if st := r.waitNodeNamed("gpu01", registered, "draining"); strings.Contains(st.state, "DRAINED") || field(r.waitJob(job01, "RUNNING"), "JobState") != "RUNNING" {
		t.Errorf("gpu01 is %s before its job ended", st.state)
	}
	must(t, os.WriteFile(rel01, nil, 0o644))
	r.waitJob(job01, "COMPLETED")
	// The script does the rest and pid cleanup of the new slurmd is the
	// test's: the script's slurmd writes the same pid file.
	err := cmd.Wait()
	t.Logf("%s:\n%s", cmd.Path, out.String())
	if err != nil {
		t.Fatalf("%s: %v\n%s\n%s", cmd.Path, err, out.String(), r.daemonLogs())
	}
	if bad := stop(); len(bad) > 0 {
		t.Errorf("gpu01 went INVAL or drained for its counts:\n%s", strings.Join(bad, "\n"))
	}
	st := r.waitNodeNamed("gpu01", func(n nodeState) bool { return n.state == "IDLE" }, "IDLE")
	if got := nodeLineCounts(t, "NodeName=gpu01 Gres="+st.gres); !maps.Equal(got, nodeLineCounts(t, wantB)) {
		t.Errorf("gpu01: Gres=%s, want B's %s", st.gres, wantB)
	}
	if data, err := os.ReadFile(filepath.Join(r.dir, "slurmctld.log")); err != nil || strings.Contains(string(data), "reported lower than configured") {
		t.Errorf("slurmctld.log (%v) says a count was lower than configured", err)
	}
	r.checkNewType(t)

	// gpu02's job ran through it all: the same job, started once, still
	// running, and it ends as it would have.
	after02 := r.jobDetail(t, job02)
	if field(after02, "JobState") != "RUNNING" || field(before02, "StartTime") != field(after02, "StartTime") || field(after02, "NodeList") != "gpu02" ||
		field(after02, "Restarts") != "0" || field(after02, "GRES") == "" || field(before02, "GRES") != field(after02, "GRES") {
		t.Errorf("gpu02's job changed:\nbefore %s\nafter  %s", before02, after02)
	}
	must(t, os.WriteFile(rel02, nil, 0o644))
	if line := r.waitJob(job02, "COMPLETED"); field(line, "ExitCode") != "0:0" {
		t.Errorf("gpu02's job: %s", line)
	}
}

// checkNewType runs a job asking for B's 3g.40gb on gpu01. From 21.08 it
// must get that device's MIG UUID from the TaskProlog; before, Slurm
// gives tasks device numbers (docs/slurm-versions.md), and the step must
// still get the 3g.40gb's CI cap.
func (r *repartition) checkNewType(t *testing.T) {
	b, err := snapshot.Load(r.b)
	if err != nil {
		t.Fatal(err)
	}
	uuid := ""
	for _, m := range b.GPUs[0].MigDevices {
		if m.Profile == "3g.40gb" {
			uuid = m.UUID
		}
	}
	out, err := r.srun("gpu:h100_3g.40gb:1", "-w", "gpu01")
	got := strings.TrimSpace(out)
	if release.Before(gresIndexEnvSince) {
		t.Run("step-gpus-are-device-numbers-before-"+gresIndexEnvSince.String(), func(t *testing.T) {
			// GI 2's CI 0 on GPU 0: its cap minor, from mig-minors.
			if err != nil || got == "" || strings.HasPrefix(got, "MIG-") {
				t.Errorf("srun --gres=gpu:h100_3g.40gb:1: %v, CUDA_VISIBLE_DEVICES=%q", err, got)
			}
		})
		return
	}
	if err != nil || got != uuid {
		t.Errorf("srun -w gpu01 --gres=gpu:h100_3g.40gb:1: %v, CUDA_VISIBLE_DEVICES=%q, want %s\n%s", err, got, uuid, r.logs())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	must(t, err)
	must(t, os.WriteFile(to, data, 0o644))
}

// TestRepartitionWaitsForAnAnswer: neither the script nor the playbook
// changes anything on a squeue that says nothing true of the node's jobs.
// A squeue that fails (slurmctld not answering) prints nothing, and a
// profile's SQUEUE_PARTITION hides the jobs of other partitions; the
// script once took either for "no jobs" and changed the layout under a
// running job. Now each waits, and at its timeout leaves the node
// drained, slurmd running and the layout as it was.
func TestRepartitionWaitsForAnAnswer(t *testing.T) {
	bothDrivers(t, func(t *testing.T, r *repartition, ansible bool) {
		layout := readFile(t, r.snapshotPath("gpu01"))
		job := r.sbatchWaiting(t, "gpu01", "gpu:h100_1g.10gb:1", filepath.Join(r.dir, "release-gpu01"))
		failing := filepath.Join(r.dir, "squeue-fails")
		must(t, os.WriteFile(failing, []byte("#!/bin/sh\necho 'slurm_load_jobs error: Socket timed out on send/recv operation' >&2\nexit 1\n"), 0o755))
		for _, c := range []struct {
			name, squeue, env string
		}{
			{"squeue fails", failing, ""},
			{"SQUEUE_PARTITION=other", "", "SQUEUE_PARTITION=other"},
		} {
			var cmd *exec.Cmd
			var gaveUp, wentOn string
			if ansible {
				cmd = ansibleDriver(r, t)
				cmd.Args = append(cmd.Args, "-e", "timeout_seconds=3")
				if c.squeue != "" {
					cmd.Args = append(cmd.Args, "-e", "squeue="+c.squeue)
				}
				gaveUp, wentOn = "FAILED - RETRYING: [gpu01 -> ctl]: Wait for the node's jobs to end", "TASK [Stop slurmd]"
			} else {
				cmd = scriptDriver(r, t)
				cmd.Env = append(cmd.Env, "TIMEOUT=3")
				if c.squeue != "" {
					cmd.Env = append(cmd.Env, "SQUEUE="+c.squeue)
				}
				gaveUp, wentOn = "gave up after 3s waiting for: no_jobs", "drained, no jobs"
			}
			if c.env != "" {
				cmd.Env = append(cmd.Env, c.env)
			}
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), gaveUp) || strings.Contains(string(out), wentOn) {
				t.Errorf("%s: went past the wait for gpu01's job %s: %v\n%s", c.name, job, err, out)
			}
			if got := readFile(t, r.snapshotPath("gpu01")); got != layout {
				t.Errorf("%s: gpu01's layout changed under job %s", c.name, job)
			}
			st := r.waitNodeNamed("gpu01", func(nodeState) bool { return true }, "shown")
			if !strings.Contains(st.state, "DRAIN") || !strings.HasPrefix(st.reason, "slurm-mig repartition to all-balanced") {
				t.Errorf("%s: gpu01 is %s (Reason=%s), want drained for the repartition", c.name, st.state, st.reason)
			}
			if line := r.waitJob(job, "RUNNING"); !strings.Contains(line, "NodeList=gpu01") {
				t.Errorf("%s: job %s: %s", c.name, job, line)
			}
		}
	})
}

// TestRepartitionKeepsAnotherDrain: a drain for a reason not the
// sequence's is kept, and the node left drained with its new layout:
// someone's drain as mig-parted applies the layout, one from before the
// run (the script's own drain does not overwrite it), and the
// controller's failed reason, which begins with the sequence's. Before,
// the last step resumed the node in each case.
func TestRepartitionKeepsAnotherDrain(t *testing.T) {
	bothDrivers(t, func(t *testing.T, r *repartition, ansible bool) {
		wantB := strings.TrimSpace(runSlurmMig(t, "node", "--root", r.devDir, "--from", r.b, "--node-name", "gpu01"))
		failed := "slurm-mig repartition to all-balanced failed: see the journal"
		for _, c := range []struct{ name, before, during string }{
			{"drained as mig-parted applies", "", "bad fan"},
			{"drained before", "bad fan", ""},
			{"failed as mig-parted applies", "", failed},
		} {
			if c.before != "" {
				must(t, r.command(context.Background(), "scontrol", "update", "NodeName=gpu01", "State=DRAIN", "Reason="+c.before).Run())
			}
			apply := r.applyCommand()
			if c.during != "" {
				apply += ` && "$0" update NodeName=gpu01 State=DRAIN Reason="` + c.during + `"`
			}
			var cmd *exec.Cmd
			if ansible {
				cmd = ansibleDriver(r, t)
				vars, err := json.Marshal(map[string]any{"mig_parted_apply": []string{"/bin/sh", "-c", apply, r.lookPath(t, "scontrol")}})
				must(t, err)
				cmd.Args = append(cmd.Args, "-e", string(vars))
			} else {
				cmd = scriptDriver(r, t)
				cmd.Env = append(cmd.Env, `APPLY=`+strings.Replace(apply, `"$0"`, `"$SCONTROL"`, 1))
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s\n%s", c.name, err, out, r.daemonLogs())
			}
			want := c.before + c.during
			st := r.waitNodeNamed("gpu01", registered, "to register")
			if !strings.Contains(st.state, "DRAIN") || !strings.HasPrefix(st.reason, want+" [") {
				t.Errorf("%s: gpu01 is %s (Reason=%s), want drained for %q\n%s", c.name, st.state, st.reason, want, out)
			}
			if got := nodeLineCounts(t, "NodeName=gpu01 Gres="+st.gres); !maps.Equal(got, nodeLineCounts(t, wantB)) {
				t.Errorf("%s: gpu01: Gres=%s, want B's %s", c.name, st.gres, wantB)
			}
			must(t, r.command(context.Background(), "scontrol", "update", "NodeName=gpu01", "State=RESUME").Run())
		}
	})
}

// TestRepartitionHeldStaysDrained: something holds the GPU (a job's process
// that did not die) on a run whose counts need no change, as a rollback's:
// the script and the playbook stop there, gpu01 drained and mig-parted not
// run, never resumed with its GPU held.
func TestRepartitionHeldStaysDrained(t *testing.T) {
	bothDrivers(t, func(t *testing.T, r *repartition, ansible bool) {
		const held = `echo "pid 4242 (python3) has /dev/nvidia0 open"; exit 1`
		applied := filepath.Join(r.dir, "applied")
		apply := "touch " + applied // the layout is all-1g.10gb already
		var cmd *exec.Cmd
		if ansible {
			cmd = ansibleDriver(r, t)
			vars, err := json.Marshal(map[string]any{"mig_config_name": "all-1g.10gb",
				"holders": []string{"/bin/sh", "-c", held}, "mig_parted_apply": []string{"/bin/sh", "-c", apply}})
			must(t, err)
			cmd.Args = append(cmd.Args, "-e", string(vars))
		} else {
			cmd = scriptDriver(r, t)
			cmd.Env = append(cmd.Env, "SELECT=all-1g.10gb", "HOLDERS="+held, "APPLY="+apply)
		}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "pid 4242 (python3)") {
			t.Fatalf("%v, want a failure naming the holder\n%s", err, out)
		}
		if _, err := os.Stat(applied); err == nil {
			t.Errorf("mig-parted ran on a GPU something holds\n%s", out)
		}
		st := r.waitNodeNamed("gpu01", func(nodeState) bool { return true }, "")
		if !strings.Contains(st.state, "DRAIN") || !strings.HasPrefix(st.reason, "slurm-mig repartition to all-1g.10gb") {
			t.Errorf("gpu01 is %s (Reason=%s), want drained for the repartition\n%s", st.state, st.reason, out)
		}
	})
}

// TestRepartitionOneRunAtATime: while another run holds the node's lock
// (one the controller gave up on, going on there), a run waits for it;
// past TIMEOUT it does nothing, the node not even drained. Once the lock
// is free, the run goes through.
func TestRepartitionOneRunAtATime(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	r := startRepartition(t, false)
	cmd := scriptDriver(r, t)
	var lock string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "LOCK="); ok {
			lock = v
		}
	}
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o600)
	must(t, err)
	defer f.Close()
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	cmd.Env = append(cmd.Env, "TIMEOUT=2")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another run on this node still holds "+lock+" after 2s: nothing done") {
		t.Fatalf("a run while another holds the lock: %v\n%s", err, out)
	}
	if st := r.waitNodeNamed("gpu01", registered, "shown"); st.state != "IDLE" {
		t.Errorf("gpu01 is %s (Reason=%s) after a run that waited for the lock, want IDLE, untouched", st.state, st.reason)
	}
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	if out, err := scriptDriver(r, t).CombinedOutput(); err != nil {
		t.Fatalf("with the lock free: %v\n%s\n%s", err, out, r.daemonLogs())
	}
	wantB := strings.TrimSpace(runSlurmMig(t, "node", "--root", r.devDir, "--from", r.b, "--node-name", "gpu01"))
	st := r.waitNodeNamed("gpu01", func(n nodeState) bool { return n.state == "IDLE" }, "IDLE")
	if got := nodeLineCounts(t, "NodeName=gpu01 Gres="+st.gres); !maps.Equal(got, nodeLineCounts(t, wantB)) {
		t.Errorf("gpu01: Gres=%s, want B's %s", st.gres, wantB)
	}
}

// bothDrivers runs test on the script's cluster (classic) and the
// playbook's (configless, for which it is written), each its own
// cluster, in parallel.
func bothDrivers(t *testing.T, test func(t *testing.T, r *repartition, ansible bool)) {
	bothDriversOn(t, func(t *testing.T, ansible bool) *repartition { return startRepartition(t, ansible) }, test)
}

// bothDriversOn is bothDrivers on the clusters start makes.
func bothDriversOn(t *testing.T, start func(t *testing.T, ansible bool) *repartition, test func(t *testing.T, r *repartition, ansible bool)) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	for name, ansible := range map[string]bool{"script": false, "ansible": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if ansible {
				Require(t, "munged")
				testtools.Require(t, "ansible-core", "ansible-playbook")
			}
			test(t, start(t, ansible), ansible)
		})
	}
}

// TestRepartitionAnsibleWaitsForTheLock: the playbook's mig-parted takes
// the node's lock, repartition.sh's, so that it waits for a run the
// controller killed, whose remote task may still go on, or for the
// script. It does not apply while the lock is held, and goes on once it
// is free.
func TestRepartitionAnsibleWaitsForTheLock(t *testing.T) {
	t.Parallel() // each its own cluster: own ports, own dir
	requireCluster(t)
	Require(t, "munged")
	testtools.Require(t, "ansible-core", "ansible-playbook")
	r := startRepartition(t, true)
	f, err := os.OpenFile(filepath.Join(r.dir, "repartition.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	must(t, err)
	defer f.Close()
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	cmd := ansibleDriver(r, t)
	cmd.Env = append(cmd.Env, "PYTHONUNBUFFERED=1")
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = cmd.Stdout
	must(t, cmd.Start())
	var out strings.Builder
	reached, done := make(chan bool, 1), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		said := false
		for {
			n, err := stdout.Read(buf)
			out.Write(buf[:n])
			if !said && strings.Contains(out.String(), "TASK [Apply the MIG layout]") {
				said = true
				reached <- true
			}
			if err != nil {
				if !said {
					reached <- false
				}
				return
			}
		}
	}()
	if !<-reached {
		<-done
		cmd.Wait()
		t.Fatalf("the playbook ended before its apply:\n%s", out.String())
	}
	// Long enough for a stand-in that copies a file.
	time.Sleep(3 * time.Second)
	held, err := os.ReadFile(r.snapshotPath("gpu01"))
	must(t, err)
	b, err := os.ReadFile(r.b)
	must(t, err)
	if string(held) == string(b) {
		t.Errorf("the layout was applied while another run held the lock")
	}
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	<-done // the pipe read to its end before Wait closes it
	if err := cmd.Wait(); err != nil {
		t.Fatalf("with the lock free: %v\n%s\n%s", err, out.String(), r.daemonLogs())
	}
	wantB := strings.TrimSpace(runSlurmMig(t, "node", "--root", r.devDir, "--from", r.b, "--node-name", "gpu01"))
	st := r.waitNodeNamed("gpu01", func(n nodeState) bool { return n.state == "IDLE" }, "IDLE")
	if got := nodeLineCounts(t, "NodeName=gpu01 Gres="+st.gres); !maps.Equal(got, nodeLineCounts(t, wantB)) {
		t.Errorf("gpu01: Gres=%s, want B's %s", st.gres, wantB)
	}
}
