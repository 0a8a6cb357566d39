package slurmtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/gresgen"
)

// TestClusterRunsEveryLayout starts slurmctld and slurmd on loopback for
// every layout in every form, with the generated gres.conf and the `node`
// line in slurm.conf. The node must reach IDLE with exactly the generated
// Gres=, take a job asking for one GPU of each of its types (and see it in
// CUDA_VISIBLE_DEVICES), and refuse one asking for one more than it has.
func TestClusterRunsEveryLayout(t *testing.T) {
	requireCluster(t)
	host := shortHostname(t)
	hw := hardware(t)
	for _, l := range loadLayouts(t, host) {
		devDir := t.TempDir()
		makeDevices(t, devDir, l.node)
		for _, f := range forms() {
			name := l.name + "/" + f.String()
			if refused := refusal(t, l, f, host); refused != nil {
				// No cluster: slurmd would die as slurmd -G does
				// (TestSlurmdReadsEveryLayout), and slurm-mig must not
				// write the config for this release.
				t.Run(name+"/"+refusedName(refused), func(t *testing.T) {
					checkSlurmMigRefuses(t, l, f, host, refused)
				})
				continue
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel() // clusters share nothing: own ports, own dir
				gres, nodeLine := render(t, l, f, host)
				c := startCluster(t, host, forThisMachine(gres, devDir), nodeLine, hw)
				node := c.waitNode(registered, "to register")
				if node.state != "IDLE" {
					t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", host, node.state, node.reason, c.logs())
				}
				if want := strings.TrimPrefix(nodeLine, "NodeName="+host+" Gres="); node.gres != want {
					t.Errorf("scontrol show node: Gres=%s\nwant Gres=%s (the node line)", node.gres, want)
				}
				for _, tc := range gresList(t, nodeLine) {
					c.srunGets(fmt.Sprintf("gpu:%s:1", tc.typ))
					c.srunRefused(fmt.Sprintf("gpu:%s:%d", tc.typ, tc.count+1))
				}
				if code, out := c.diffRunning(l, f); code != 0 {
					t.Errorf("slurm-mig diff --running: exit %d, want 0 (same)\n%s", code, out)
				}
				if !t.Failed() {
					clusterScenarios.Add(1)
				}
			})
		}
	}
}

// TestClusterDrainsOnStaleSlurmConf is the failure the tool exists to
// prevent: slurm.conf declares one MIG device more than gres.conf offers,
// as after a repartition without regenerating the counts. slurmctld must
// set the node INVAL or DRAIN, saying the count is lower than configured.
func TestClusterDrainsOnStaleSlurmConf(t *testing.T) {
	requireCluster(t)
	host := shortHostname(t)
	l := demoLayout(t)
	devDir := t.TempDir()
	makeDevices(t, devDir, l.node)
	f := form{"model", string(gresgen.FileStyleFor(release)), false} // what the release reads
	gres, nodeLine := render(t, l, f, host)

	// One more of the first MIG device's type than gres.conf has.
	migType := ""
	for _, line := range strings.Split(gres, "\n") {
		if strings.Contains(line, "/dev/nvidia-caps/") {
			_, rest, _ := strings.Cut(line, " Type=")
			migType, _, _ = strings.Cut(rest, " ")
			break
		}
	}
	if migType == "" {
		t.Fatalf("the demo node's gres.conf has no MIG device:\n%s", gres)
	}
	var items []string
	total := 0
	for _, tc := range gresList(t, nodeLine) {
		total += tc.count
		if tc.typ == migType {
			tc.count++
		}
		items = append(items, fmt.Sprintf("gpu:%s:%d", tc.typ, tc.count))
	}
	stale := "NodeName=" + host + " Gres=" + strings.Join(items, ",")

	c := startCluster(t, host, forThisMachine(gres, devDir), stale, hardware(t))
	reason := fmt.Sprintf("gres/gpu count reported lower than configured (%d < %d)", total, total+1)
	// What slurmctld logs as error: for the drain is what this test wants.
	c.expectLog("slurmctld", regexp.MustCompile(`error: .*`+regexp.QuoteMeta(reason)))
	c.expectLog("slurmctld", regexp.MustCompile(`error: _slurm_rpc_node_registration node=`+regexp.QuoteMeta(host)+`: Invalid argument`))
	node := c.waitNode(registered, "to register")
	if !drained(node) || !strings.HasPrefix(node.reason, reason) {
		t.Fatalf("node %s is %s (Reason=%s), want INVAL or DRAIN with Reason=%s\n%s", host, node.state, node.reason, reason, c.logs())
	}
	// slurmctld now shows the Gres= the node reported, so diff --running
	// must tell the drain from the node's state and reason.
	code, out := c.diffRunning(l, f)
	if code != 1 || !strings.Contains(out, reason) {
		t.Errorf("slurm-mig diff --running: exit %d, want 1 and %q in\n%s", code, reason, out)
	}
	staleDrains.Add(1)
}

// diffRunning runs slurm-mig diff --running for layout l against this
// cluster's slurmctld (scontrol finds it through SLURM_CONF) and returns
// its exit code and output.
func (c *cluster) diffRunning(l layout, f form) (int, string) {
	args := append([]string{"--root", l.root, "diff", "--running", "--from", l.snapshot, "--node-name", c.host}, f.flags("diff")...)
	cmd := exec.Command(slurmMig, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	}
	if err != nil {
		c.t.Fatalf("%s: %v", cmd, err)
	}
	return 0, string(out)
}

// requireCluster skips (or in CI fails) t unless it can run a cluster.
func requireCluster(t *testing.T) {
	t.Helper()
	Require(t, "slurmctld", "slurmd", "scontrol", "srun")
	RequireRoot(t)
}

// A cluster is slurmctld and slurmd for one node, on loopback, with all
// their files under one temp dir.
type cluster struct {
	t    *testing.T
	dir  string
	host string
	env  []string
	// daemons, to tell a daemon that died from one that is slow
	daemons []*daemon
	// expected are error: lines the test wants a daemon to log; each
	// must be there, and is no failure.
	expected []logLine
	// allowed are error: lines a daemon may log, or not, without failing
	// the test.
	allowed []logLine
}

// logLine is a line a daemon (log name prefix) logs.
type logLine struct {
	daemon string
	line   *regexp.Regexp
}

// expectLog says that the daemon must log an error: line matching re.
func (c *cluster) expectLog(daemon string, re *regexp.Regexp) {
	c.expected = append(c.expected, logLine{daemon, re})
}

// startCluster writes gres.conf and a slurm.conf with nodeLine on free
// ports, starts slurmctld, waits until it answers, then starts slurmd.
// Both are stopped when t ends.
func startCluster(t *testing.T, host, gresConf, nodeLine, hw string) *cluster {
	t.Helper()
	dir := shortTempDir(t)
	return startClusterIn(t, dir, host, writeConfigs(t, dir, gresConf, slurmConf(dir, host, nodeLine, hw, freePorts(t))))
}

// startClusterIn starts the cluster of the configs already written in
// dir (conf is its slurm.conf), for tests that add to them. dir must be
// short: shortTempDir.
func startClusterIn(t *testing.T, dir, host, conf string) *cluster {
	t.Helper()
	return startClusterArgs(t, dir, host, conf, "-D")
}

// startClusterArgs is startClusterIn with slurmd's arguments (a dynamic
// node's -Z --conf).
func startClusterArgs(t *testing.T, dir, host, conf string, slurmdArgs ...string) *cluster {
	t.Helper()
	if data, err := os.ReadFile(conf); err != nil || !strings.Contains(string(data), "\nSlurmctldPort=") || !strings.Contains(string(data), "\nSlurmdPort=") {
		// Without them the daemons take Slurm's default ports, the host's.
		t.Fatalf("%s names no SlurmctldPort= and SlurmdPort= of freeTCPPorts (%v)", conf, err)
	}
	c := &cluster{t: t, dir: dir, host: host, env: slurmEnv(conf)}
	t.Cleanup(c.checkLogs) // after the daemons' cleanups have stopped them
	c.start("slurmctld", "-D", "-i")
	c.waitSlurmctld()
	c.start("slurmd", slurmdArgs...)
	return c
}

// waitSlurmctld waits until slurmctld answers scontrol ping.
func (c *cluster) waitSlurmctld() {
	c.t.Helper()
	c.waitFor("slurmctld to answer", func() (bool, string) {
		out, err := c.command(context.Background(), "scontrol", "ping").CombinedOutput()
		return err == nil && strings.Contains(string(out), "is UP"), string(out)
	})
}

// shortTempDir is a temporary directory with a short name: slurmd makes
// each job step's Unix socket in SlurmdSpoolDir, and a socket's path has
// at most 108 bytes. t.TempDir's names the test, which can take 90 of
// them, and the step fails ("Unix socket path ... is too long").
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killSteps(dir)
		os.RemoveAll(dir)
	})
	return dir
}

// killSteps kills the slurmstepd processes of the cluster in dir (their
// SLURM_CONF, slurmd's, or their working directory is there). Stopping slurmd does not reach them: a
// step whose job ended as slurmd stopped would retry its completion for
// good, and reach a later test's daemons on the same port.
func killSteps(dir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.HasPrefix(cmdline, []byte("slurmstepd")) {
			continue
		}
		// A step of a release's chroot has no SLURM_CONF; its working
		// directory is the cluster's, seen through the chroot's mounts.
		environ, _ := os.ReadFile(filepath.Join(p, "environ"))
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if !bytes.Contains(append([]byte{0}, environ...), []byte("\x00SLURM_CONF="+dir+"/")) &&
			!strings.HasSuffix(cwd, "/"+filepath.Base(dir)) && !strings.Contains(cwd, "/"+filepath.Base(dir)+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// nodeState is what `scontrol show node -o` says of the node.
type nodeState struct {
	state  string // IDLE, UNKNOWN+DRAIN+INVALID_REG, ...
	gres   string
	reason string // why it is drained or invalid
	// slurmdStart is when the slurmd slurmctld last heard register
	// started (SlurmdStartTime, to the second; "None" before any).
	slurmdStart string
}

// registered says slurmctld has judged the node's registration: it is
// IDLE, or drained or invalid.
func registered(n nodeState) bool { return n.state == "IDLE" || drained(n) }

func drained(n nodeState) bool {
	return strings.Contains(n.state, "DRAIN") || strings.Contains(n.state, "INVAL")
}

// waitNode polls the node's state until ok accepts it, and returns it.
func (c *cluster) waitNode(ok func(nodeState) bool, want string) nodeState {
	c.t.Helper()
	return c.waitNodeNamed(c.host, ok, want)
}

// waitNodeNamed is waitNode for the node called name.
func (c *cluster) waitNodeNamed(name string, ok func(nodeState) bool, want string) nodeState {
	c.t.Helper()
	var n nodeState
	c.waitFor("node "+name+" "+want, func() (bool, string) {
		out, err := c.command(context.Background(), "scontrol", "show", "node", "-o", name).CombinedOutput()
		if err != nil {
			return false, string(out)
		}
		line := strings.TrimSpace(string(out))
		_, reason, _ := strings.Cut(line, " Reason=") // the last field, spaces and all
		n = nodeState{state: field(line, "State"), gres: field(line, "Gres"), reason: reason, slurmdStart: field(line, "SlurmdStartTime")}
		return ok(n), line
	})
	return n
}

// field is the value of key=value in a line of `scontrol show -o`.
func field(line, key string) string {
	i := strings.Index(" "+line, " "+key+"=")
	if i < 0 {
		return ""
	}
	v := line[i+len(key)+1:]
	v, _, _ = strings.Cut(v, " ")
	return v
}

// srunGets runs a job asking for gres, which must start and see a GPU in
// CUDA_VISIBLE_DEVICES.
func (c *cluster) srunGets(gres string) {
	c.t.Helper()
	out, err := c.srun(gres)
	if err != nil || strings.TrimSpace(out) == "" {
		c.t.Errorf("srun --gres=%s printenv CUDA_VISIBLE_DEVICES: %v\n%s", gres, err, out)
	}
}

// srunRefused runs a job asking for more than the node has, which Slurm
// must refuse at once.
func (c *cluster) srunRefused(gres string) {
	c.t.Helper()
	out, err := c.srun(gres)
	if err == nil || !strings.Contains(out, "Requested node configuration is not available") {
		c.t.Errorf("srun --gres=%s: %v\n%s\nwant it refused: Requested node configuration is not available", gres, err, out)
	}
}

// srun runs one task asking for gres. --immediate and a deadline keep a
// job that cannot start from waiting.
func (c *cluster) srun(gres string, options ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"--immediate=10", "-N1", "-n1", "--gres=" + gres}, options...)
	cmd := c.command(ctx, "srun", append(args, "printenv", "CUDA_VISIBLE_DEVICES")...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env
	cmd.Dir = c.dir
	return cmd
}

// waitFor polls cond every 50 ms for up to 30 s. It fails t, with the
// daemons' logs, when the time is up or a daemon has died.
func (c *cluster) waitFor(what string, cond func() (ok bool, status string)) {
	c.t.Helper()
	c.waitWithin(30*time.Second, what, cond)
}

// waitWithin is waitFor for up to patience.
func (c *cluster) waitWithin(patience time.Duration, what string, cond func() (ok bool, status string)) {
	c.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		ok, status := cond()
		if ok {
			return
		}
		for _, d := range c.daemons {
			if d.exited() {
				c.t.Fatalf("waiting for %s: %s exited (%v)\nlast status: %s\n%s", what, d.name, d.cmd.ProcessState, status, c.logs())
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting for %s: gave up after %s\nlast status: %s\n%s", what, patience, status, c.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logs returns the tail of what each daemon printed: all it logs, and
// also what it says before it opens its log file.
func (c *cluster) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.dir, "*.out"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		lines = lines[max(0, len(lines)-20):]
		fmt.Fprintf(&b, "--- %s (tail)\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
	}
	return b.String()
}

// checkLogs fails the test for every error: or fatal: line the daemons
// logged, but for the few that say nothing of the config (knownNoise):
// slurmd reports some mistakes in gres.conf only that way (24.11 drops
// the *_env flags of an unknown Flags= word, a bad AutoDetect= value is an
// error: line, and both go on with exit 0).
func (c *cluster) checkLogs() {
	c.t.Helper()
	seen := make([]bool, len(c.expected))
	for _, name := range []string{"slurmctld.log", "slurmctld.out", "slurmd.log", "slurmd.out"} {
		data, err := os.ReadFile(filepath.Join(c.dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			c.t.Error(err)
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, "error: ") && !strings.Contains(line, "fatal: ") || knownNoise(name, line) || c.isAllowed(name, line) {
				continue
			}
			wanted := false
			for i, e := range c.expected {
				if strings.HasPrefix(name, e.daemon) && e.line.MatchString(line) {
					wanted, seen[i] = true, true
				}
			}
			if !wanted {
				c.t.Errorf("%s: %s", name, line)
			}
		}
	}
	for i, e := range c.expected {
		if !seen[i] {
			c.t.Errorf("%s logged no line matching %s\n%s", e.daemon, e.line, c.logs())
		}
	}
}

// isAllowed says whether the line of the log called name is one the
// test allows: error: only, never fatal:.
func (c *cluster) isAllowed(name, line string) bool {
	for _, a := range c.allowed {
		if strings.HasPrefix(name, a.daemon) && a.line.MatchString(line) && !strings.Contains(line, "fatal: ") {
			return true
		}
	}
	return false
}

// noise are the error: lines that come from this machine and the
// packages, not from the config, and which daemon (log name prefix)
// logs them.
var noise = []logLine{
	// A first start, with no state saved yet.
	{"slurmctld", regexp.MustCompile(`error: (Could not open \w+ state file .*: No such file or directory|NOTE: Trying backup state save file\. \w+ may be lost!?)`)},
	// A client (srun done, or refused) that hung up before the answer, and
	// messages still on their way when the test stops slurmctld. 26.05
	// words a peer that closed with nothing sent "Zero Bytes were
	// transmitted or received" (once, in a batch job's cluster whose
	// tasks all ran as wanted).
	{"slurmctld", regexp.MustCompile(`error: (slurm_msg_sendto|slurm_send_node_msg|slurm_receive_msgs): .*(Unexpected missing socket error|Connection reset by peer|Message send failure|Zero Bytes were transmitted or received)`)},
	{"slurmctld", regexp.MustCompile(`error: agent_fini: left \d+ agent threads active`)},
	// A step whose srun had its tasks' exit and ended the job before
	// slurmstepd marked the step ending: the job's end then kills a step
	// that is done, and slurmstepd logs it as error: "not really errors,
	// but we want messages displayed by default" (slurmstepd/req.c). Seen
	// once on a 2-core CI machine with 22.05.8, after an srun the test had
	// already found right. A step cut short for a reason says why (DUE TO
	// ...), and that still fails the test.
	{"slurmd", regexp.MustCompile(`\[\d+\.\d+\] error: \*\*\* STEP \d+\.\d+ ON \S+ CANCELLED AT \S+ \*\*\*$`)},
	// A machine busy with other work (2 shared cores).
	{"slurmctld", regexp.MustCompile(`error: High latency for 1000 calls to gettimeofday\(\)`)},
	// Debian's 20.11 and 22.05 daemons load mpi/pmix even with
	// MpiDefault=none, and look for libpmix.so, which only libpmix-dev
	// installs.
	{"slurm", regexp.MustCompile(`error: .*(mpi/pmix|pmi/pmix|PMIx)`)},
}

// TestKnownNoiseIsNarrow pins the noise on the line CI's slurmd logged (the
// first case) and on lines written after it that differ in one part: a
// reason, a whole job, the other daemon, fatal:. Those must still fail.
func TestKnownNoiseIsNarrow(t *testing.T) {
	for _, tc := range []struct {
		log, line string
		noise     bool
	}{
		{"slurmd.log", "[2026-11-23T15:56:51.573] [1.0] error: *** STEP 1.0 ON vm CANCELLED AT 2026-11-23T15:56:51 ***", true},
		{"slurmd.log", "[2026-11-23T15:56:51.573] [1.0] error: *** STEP 1.0 ON vm CANCELLED AT 2026-11-23T15:56:51 DUE TO TIME LIMIT ***", false},
		{"slurmd.log", "[2026-11-23T15:56:51.573] [1] error: *** JOB 1 ON vm CANCELLED AT 2026-11-23T15:56:51 ***", false},
		{"slurmctld.log", "[2026-11-23T15:56:51.573] [1.0] error: *** STEP 1.0 ON vm CANCELLED AT 2026-11-23T15:56:51 ***", false},
		{"slurmctld.log", "[2026-11-20T10:01:02.003] error: slurm_receive_msgs: [[vm]:40123] failed: Zero Bytes were transmitted or received", true},
		{"slurmd.log", "[2026-11-20T10:01:02.003] fatal: Invalid GRES record for gpu", false},
	} {
		if got := knownNoise(tc.log, tc.line); got != tc.noise {
			t.Errorf("knownNoise(%s, %q) = %v, want %v", tc.log, tc.line, got, tc.noise)
		}
	}
}

func knownNoise(logName, line string) bool {
	if strings.Contains(line, "fatal: ") {
		return false
	}
	for _, n := range noise {
		if strings.HasPrefix(logName, n.daemon) && n.line.MatchString(line) {
			return true
		}
	}
	return false
}

// start runs a daemon in the foreground (-D) as a child of the test, in
// a process group of its own, stopped when the test ends.
func (c *cluster) start(name string, args ...string) {
	c.t.Helper()
	c.startCmd(name, c.command(context.Background(), name, args...))
}

// startCmd starts cmd as the daemon called name, its output in name.out.
func (c *cluster) startCmd(name string, cmd *exec.Cmd) {
	c.t.Helper()
	out, err := os.Create(filepath.Join(c.dir, name+".out"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// Its own group, so that stopping it reaches the helpers it forks
	// (slurmctld's slurmscriptd); and SIGTERM should the test binary die
	// without running its cleanups (a -timeout panic).
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, syscall.SIGTERM
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(d.done)
	}()
	c.daemons = append(c.daemons, d)
	c.t.Cleanup(d.stop)
}

// A daemon is a Slurm daemon the test started.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited and been reaped
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// stop sends the daemon SIGTERM and waits for it to exit, SIGKILLing its
// group after 10 s; then SIGKILLs whatever of its group is left.
func (d *daemon) stop() {
	pid := d.cmd.Process.Pid
	if !d.exited() {
		syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-d.done
		}
	}
	syscall.Kill(-pid, syscall.SIGKILL) // ESRCH when the group is gone: fine
}

// ports are the cluster's private TCP ports.
type ports struct{ slurmctld, slurmd int }

// freePorts picks two free ports for the daemons (see freeTCPPorts).
func freePorts(t *testing.T) ports {
	t.Helper()
	nums := freeTCPPorts(t, 2)
	return ports{slurmctld: nums[0], slurmd: nums[1]}
}

// freeTCPPorts picks n free ports for daemons and reserves them until t
// ends, after the daemons' cleanups have stopped them.
//
// The ports lie below the kernel's ephemeral range (32768 and up on
// Linux): a port there, free when picked, is soon the source port of some
// srun's or scontrol's outgoing connection (tests of several clusters run
// at once), and the daemon then fails with "Address already in use". They
// lie above Slurm's default ports (6817 slurmctld, 6818 slurmd, 6819
// slurmdbd), where the host's own Slurm, or a client without a port in
// its slurm.conf, would reach a test daemon.
//
// A free port is not enough: between the check that it is free and the
// daemon's bind, and for as long as the daemon lives, another test process
// picking ports the same way could take it too. Test binaries of other
// packages, of another checkout, or of another release's run (make
// test-slurm-versions runs the clients in a chroot, under a TMPDIR of
// their own) then give one cluster's client another's daemon ("protocol
// version ... not supported", "invalid request msg type"). So each port
// picked is reserved for the whole machine by binding a Linux abstract
// Unix socket named after it (portReservation): the name is shared by
// every process of this network namespace, chroots included, whatever
// their TMPDIR; it writes no file; and the kernel frees it when the holder
// closes it or dies, so a killed test leaves no stale reservation.
func freeTCPPorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var nums []int
	handedOut.Lock()
	defer handedOut.Unlock()
	for try := 0; len(nums) < n; try++ {
		if try == 1000 {
			t.Fatalf("no %d free TCP ports in 12000-31999", n)
		}
		port := 12000 + rand.IntN(20000)
		if handedOut.ports[port] {
			continue
		}
		held, err := net.Listen("unix", portReservation(port))
		if err != nil {
			continue // another test process holds it
		}
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port)) // the daemons listen on every address
		if err != nil {
			held.Close()
			continue
		}
		t.Cleanup(func() { held.Close() })
		ls = append(ls, l)
		handedOut.ports[port] = true
		nums = append(nums, port)
	}
	for _, l := range ls {
		l.Close()
	}
	return nums
}

// portReservation is the abstract Unix socket name (the leading @) that
// reserves a TCP port for a test cluster (freeTCPPorts).
func portReservation(port int) string {
	return fmt.Sprintf("@slurm-mig-slurmtest-port-%d", port)
}

// handedOut are the ports freeTCPPorts gave out in this run, never given
// twice: a cluster stopped may leave connections to its ports behind.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// slurmConf is the slurm.conf of a one-node cluster on loopback: no munge
// (auth/none, cred/none), everything as root, no cgroups, every state,
// spool, pid and log file under dir. nodeLine is completed with the
// node's address and hardware (hw). Zero ports are left out (slurmd -G
// needs none).
func slurmConf(dir, host, nodeLine, hw string, p ports) string {
	lines := append(baseConf(dir, host, p),
		nodeLine+" NodeAddr=127.0.0.1 "+hw,
		"PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
	)
	return strings.Join(lines, "\n") + "\n"
}

// baseConf is what every test cluster's slurm.conf says before its nodes.
func baseConf(dir, host string, p ports) []string {
	lines := []string{
		"ClusterName=slurmtest",
		"SlurmctldHost=" + host + "(127.0.0.1)",
		"SlurmUser=root",
		"SlurmdUser=root",
		"ProctrackType=proctrack/linuxproc",
		"TaskPlugin=task/none",
		"SelectType=select/cons_tres",
		"GresTypes=gpu",
		"MpiDefault=none",
		"PlugStackConfig=" + dir + "/plugstack.conf",
		"StateSaveLocation=" + dir + "/state",
		"SlurmdSpoolDir=" + dir + "/spool",
		"SlurmctldPidFile=" + dir + "/slurmctld.pid",
		"SlurmdPidFile=" + dir + "/slurmd.pid",
		"SlurmctldLogFile=" + dir + "/slurmctld.log",
		"SlurmdLogFile=" + dir + "/slurmd.log",
		"MailProg=/bin/true", // slurmctld of 20.11 logs an error: for a missing /bin/mail
	}
	lines = append(lines, releaseSlurmConf()...)
	if p.slurmctld != 0 {
		lines = append(lines, fmt.Sprintf("SlurmctldPort=%d", p.slurmctld), fmt.Sprintf("SlurmdPort=%d", p.slurmd))
	}
	return lines
}

// writeConfigs writes slurm.conf, gres.conf beside it (where Slurm looks)
// and an empty plugstack.conf, makes the state and spool dirs, and
// returns the slurm.conf path.
func writeConfigs(t *testing.T, dir, gresConf, slurmConf string) string {
	t.Helper()
	for _, sub := range []string{"state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"slurm.conf": slurmConf, "gres.conf": gresConf, "plugstack.conf": ""}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeReleaseFiles(t, dir)
	return filepath.Join(dir, "slurm.conf")
}

// slurmEnv is the environment of every Slurm command: ours, less any
// SLURM_* (a test run inside a Slurm job must not reach that job's
// cluster), with SLURM_CONF naming conf.
func slurmEnv(conf string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLURM_") {
			env = append(env, kv)
		}
	}
	return append(env, "SLURM_CONF="+conf)
}

// hardwareWords are the CPU layout words of the first line of `slurmd -C`.
func hardwareWords(out string) string {
	first, _, _ := strings.Cut(out, "\n")
	var keep []string
	for _, word := range strings.Fields(first) {
		key, _, _ := strings.Cut(word, "=")
		switch key {
		case "CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore":
			keep = append(keep, word)
		}
	}
	return strings.Join(keep, " ")
}

var machine struct {
	once sync.Once
	conf string
	err  error
}

// hardware is this machine's CPU layout as `slurmd -C` reports it
// ("CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1"),
// for the node line: slurmd registers a node that has less as INVAL.
// RealMemory is left at its default (1 MB), which any machine has.
func hardware(t *testing.T) string {
	t.Helper()
	machine.once.Do(func() {
		cmd := exec.Command("slurmd", "-C")
		cmd.Env = slurmEnv(os.DevNull)
		out, err := cmd.Output()
		if err != nil {
			machine.err = fmt.Errorf("slurmd -C: %v", err)
			return
		}
		machine.conf = hardwareWords(string(out))
	})
	if machine.err != nil {
		t.Fatal(machine.err)
	}
	return machine.conf
}

// The ports freeTCPPorts hands out are reserved for the whole machine
// until the test ends: another process picking ports cannot take them
// (binding the same abstract name fails there as here), they are none
// of Slurm's default ports, and the reservation ends with the test.
func TestFreeTCPPortsAreReservedMachineWide(t *testing.T) {
	var nums []int
	t.Run("hold", func(t *testing.T) {
		nums = freeTCPPorts(t, 3)
		for _, p := range nums {
			if p < 12000 || p > 31999 {
				t.Errorf("port %d: outside 12000-31999", p)
			}
			if l, err := net.Listen("unix", portReservation(p)); err == nil {
				l.Close()
				t.Errorf("port %d: its reservation %s could be taken again while held", p, portReservation(p))
			}
		}
	})
	for _, p := range nums {
		l, err := net.Listen("unix", portReservation(p))
		if err != nil {
			t.Errorf("port %d: still reserved after its test ended: %v", p, err)
			continue
		}
		l.Close()
	}
}
