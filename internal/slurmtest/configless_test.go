package slurmtest

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestConfiglessFleet runs a configless cluster on loopback from the files
// `slurm-mig merge` writes: gen on each node of a fleet of three layouts
// (the demo node twice, a synthetic A100 node and a captured H200 node),
// merge of their outputs, and slurmctld with SlurmctldParameters=
// enable_configless serving that gres.conf and a slurm.conf whose node
// lines are those of merge --node-lines. One slurmd a node (slurmd -N, all
// on this machine, each on its own port and spool dir) fetches the files
// with --conf-server and must register IDLE with exactly its own Gres=,
// as `slurm-mig node` prints it; `slurmd -N <node> -G` on the files it
// fetched must show exactly the node's devices; and a job asking for all
// of a node's first type runs there, one more is refused.
//
// Before it has its config, slurmd can speak only auth/munge to fetch it
// (Slurm 22.05 has no auth/none for the fetch), at munge's compiled-in
// socket /run/munge/munge.socket.2. So the cluster uses a munged of its
// own, with a key and socket in a temp dir, and each slurmd runs in a
// mount namespace of its own where that socket dir is /run/munge: nothing
// of the host's /run is touched.
func TestConfiglessFleet(t *testing.T) {
	requireCluster(t)
	Require(t, "munged")
	host := shortHostname(t)
	hw := hardware(t)

	nodes := []struct {
		name string
		l    layout
	}{
		{"gpu01", demoLayout(t)},
		{"gpu02", demoLayout(t)},
		{"gpu03", synthLayout(t)},
		{"gpu04", capturedLayouts(t)[0]},
	}
	devDir := t.TempDir() // one /dev for all: a device file's path fixes its minor
	frags := t.TempDir()
	for _, n := range nodes {
		makeDevices(t, devDir, n.l.node)
		runSlurmMig(t, "--root", n.l.root, "gen", "--from", n.l.snapshot, "--node-name", n.name, "--slurm-version", release.String(), "-o", filepath.Join(frags, n.name+".conf"))
	}
	gres := runSlurmMig(t, "merge", frags)
	if !strings.Contains(gres, "# 4 nodes, 3 layouts") || !strings.Contains(gres, "\nNodeName=gpu[01-02] ") {
		t.Fatalf("merge did not group the two demo nodes:\n%s", gres)
	}
	nodeLines := strings.Split(strings.TrimSpace(runSlurmMig(t, "merge", "--node-lines", frags)), "\n")

	c := startConfigless(t, host, forThisMachine(gres, devDir), nodeLines, hw, len(nodes))
	for _, n := range nodes {
		c.startSlurmd(n.name)
	}
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			c.t = t
			nodeLine := strings.TrimSuffix(runSlurmMig(t, "--root", n.l.root, "node", "--from", n.l.snapshot, "--node-name", n.name), "\n")
			st := c.waitNodeNamed(n.name, registered, "to register")
			if st.state != "IDLE" {
				t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", n.name, st.state, st.reason, c.logs())
			}
			if want := strings.TrimPrefix(nodeLine, "NodeName="+n.name+" Gres="); st.gres != want {
				t.Errorf("scontrol show node %s: Gres=%s\nwant Gres=%s (slurm-mig node)", n.name, st.gres, want)
			}
			// What the node fetched from slurmctld is the merged file.
			cached := filepath.Join(c.dir, "spool-"+n.name, "conf-cache")
			if data, err := os.ReadFile(filepath.Join(cached, "gres.conf")); err != nil || string(data) != forThisMachine(gres, devDir) {
				t.Errorf("%s's conf-cache/gres.conf is not the merged file (%v):\n%s", n.name, err, data)
			}
			got := slurmdRecords(t, filepath.Join(cached, "slurm.conf"), "-N", n.name)
			checkSlurmdRecords(t, got, n.l, form{"model", string(gresgen.FileStyleFor(release)), false}, n.name, devDir, nodeLine)

			first := gresList(t, nodeLine)[0]
			if out, err := c.srun(fmt.Sprintf("gpu:%s:%d", first.typ, first.count), "-w", n.name); err != nil || strings.TrimSpace(out) == "" {
				t.Errorf("srun -w %s --gres=gpu:%s:%d: %v\n%s", n.name, first.typ, first.count, err, out)
			}
			if out, err := c.srun(fmt.Sprintf("gpu:%s:%d", first.typ, first.count+1), "-w", n.name); err == nil || !strings.Contains(out, "Requested node configuration is not available") {
				t.Errorf("srun -w %s --gres=gpu:%s:%d: %v\n%s\nwant it refused", n.name, first.typ, first.count+1, err, out)
			}
			if !t.Failed() {
				configlessNodes.Add(1)
			}
		})
	}
}

// synthLayout is a node of two A100s of three 1g.10gb devices each, as
// internal/testkit/synth makes it, with its cap minors in the snapshot.
func synthLayout(t *testing.T) layout {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snapshot.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Write(f, synth.Snapshot(2, 3)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return snapshotLayout(t, "synth/2x3", path, t.TempDir())
}

// configless is a cluster whose slurmd daemons get their config from
// slurmctld.
type configless struct {
	*cluster
	munge   string // the dir of munged's socket
	ctlPort int
}

// startConfigless writes gres.conf and a slurm.conf with nodeLines (each
// given this machine's hardware, 127.0.0.1 and a port a node), starts
// munged and slurmctld, and waits until slurmctld answers.
func startConfigless(t *testing.T, host, gresConf string, nodeLines []string, hw string, nodes int) *configless {
	t.Helper()
	dir := t.TempDir()
	nums := freeTCPPorts(t, 2+nodes)
	lines := baseConf(dir, host, ports{slurmctld: nums[0], slurmd: nums[1]})
	munge := filepath.Join(dir, "munge")
	set := map[string]string{
		"AuthType": "auth/munge", "CredType": "cred/munge",
		// %n: each slurmd's node name, so that they share no file.
		"SlurmdSpoolDir": dir + "/spool-%n", "SlurmdPidFile": dir + "/slurmd-%n.pid", "SlurmdLogFile": dir + "/slurmd-%n.log",
	}
	for i, line := range lines {
		key, _, _ := strings.Cut(line, "=")
		if v, ok := set[key]; ok {
			lines[i] = key + "=" + v
		}
	}
	lines = append(lines, "AuthInfo=socket="+munge+"/munge.socket.2", "SlurmctldParameters=enable_configless")
	port := 2
	for _, nl := range nodeLines {
		hosts, _, _ := strings.Cut(strings.TrimPrefix(nl, "NodeName="), " ")
		names, err := slurmconf.ExpandHostlist(hosts)
		if err != nil {
			t.Fatal(err)
		}
		n := len(names)
		var ps []string
		for _, p := range nums[port : port+n] {
			ps = append(ps, fmt.Sprint(p))
		}
		port += n
		lines = append(lines, fmt.Sprintf("%s NodeAddr=127.0.0.1 Port=[%s] %s", nl, strings.Join(ps, ","), hw))
	}
	if port != len(nums) {
		t.Fatalf("the node lines name %d nodes, want %d:\n%s", port-2, nodes, strings.Join(nodeLines, "\n"))
	}
	lines = append(lines, "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
	conf := writeConfigs(t, dir, gresConf, strings.Join(lines, "\n")+"\n")

	c := &configless{cluster: &cluster{t: t, dir: dir, host: host, env: slurmEnv(conf)}, munge: munge, ctlPort: nums[0]}
	c.startMunged()
	c.start("slurmctld", "-D", "-i")
	c.waitSlurmctld()
	return c
}

// startMunged runs a munged of the cluster's own, with a fresh key.
func (c *configless) startMunged() {
	c.t.Helper()
	if err := os.MkdirAll(c.munge, 0o700); err != nil {
		c.t.Fatal(err)
	}
	key := make([]byte, 1024)
	rand.Read(key)
	keyFile := filepath.Join(c.dir, "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command("munged", "--foreground", "--force", "--socket="+c.munge+"/munge.socket.2", "--key-file="+keyFile,
		"--pid-file="+c.dir+"/munged.pid", "--log-file="+c.dir+"/munged.log", "--seed-file="+c.dir+"/munged.seed")
	c.startCmd("munged", cmd)
	c.waitFor("munged's socket", func() (bool, string) {
		_, err := os.Stat(filepath.Join(c.munge, "munge.socket.2"))
		return err == nil, fmt.Sprint(err)
	})
}

// startSlurmd starts slurmd for node, fetching its config from slurmctld,
// in a mount namespace where the cluster's munge socket dir is /run/munge.
func (c *configless) startSlurmd(node string) {
	c.t.Helper()
	script := `mount -t tmpfs slurmtest /run && mkdir /run/munge && mount --bind "$0" /run/munge && exec "$@"`
	cmd := exec.Command("sh", "-c", script, c.munge, "slurmd", "-D", "-N", node, "--conf-server", fmt.Sprintf("127.0.0.1:%d", c.ctlPort))
	cmd.Dir = c.dir
	for _, kv := range c.env {
		if !strings.HasPrefix(kv, "SLURM_CONF=") { // it would win over --conf-server
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	c.startCmd("slurmd-"+node, cmd)
}
