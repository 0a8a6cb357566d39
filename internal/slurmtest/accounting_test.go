package slurmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// a100Profiles is the GPU-instance profile table of an A100 80GB as NVML
// gives it (nvidia-smi mig -lgip): the demo node's GPUs, whose snapshot
// (schema 1) has none, get it, so that node --accounting can size them.
var a100Profiles = []model.GIProfile{
	{ID: 19, Name: "1g.10gb", Instances: 7, MemoryMiB: 9728, Slices: 1, Placements: []model.Placement{{Start: 0, Size: 1}}},
	{ID: 20, Name: "1g.10gb+me", Instances: 1, MemoryMiB: 9728, Slices: 1, Placements: []model.Placement{{Start: 0, Size: 1}}},
	{ID: 15, Name: "1g.20gb", Instances: 4, MemoryMiB: 19968, Slices: 1, Placements: []model.Placement{{Start: 0, Size: 2}}},
	{ID: 14, Name: "2g.20gb", Instances: 3, MemoryMiB: 19968, Slices: 2, Placements: []model.Placement{{Start: 0, Size: 2}}},
	{ID: 9, Name: "3g.40gb", Instances: 2, MemoryMiB: 40448, Slices: 3, Placements: []model.Placement{{Start: 0, Size: 4}},
		CIProfiles: []model.CIProfile{{ID: 0, Name: "1c.3g.40gb", Slices: 1, Instances: 3}, {ID: 1, Name: "2c.3g.40gb", Slices: 2, Instances: 1}, {ID: 2, Name: "3g.40gb", Slices: 3, Instances: 1}}},
	{ID: 5, Name: "4g.40gb", Instances: 1, MemoryMiB: 40448, Slices: 4, Placements: []model.Placement{{Start: 0, Size: 4}}},
	{ID: 0, Name: "7g.80gb", Instances: 1, MemoryMiB: 81152, Slices: 7, Placements: []model.Placement{{Start: 0, Size: 8}}},
}

// TestAccountingBillsByShare runs the demo node (a whole A100; seven
// 1g.10gb; a 3g.40gb split in 1c and 2c compute instances and a whole
// 3g.40gb; two 2g.20gb and a 1g.10gb+me) under slurmctld with slurmdbd
// and a MariaDB of the test's own, its accounting lines set by node
// --accounting --update (--gpu-weight 70: a compute slice bills 10) on
// a partition that billed CPUs only. Each type's job, held, shows the
// billing its share promises, over its CPU; a 1g.10gb job and a whole
// GPU job run; sacct's AllocTRES records their types, sshare charges their
// accounts billing times seconds; an untyped --gres=gpu:1 bills what the
// device it got bills.
func TestAccountingBillsByShare(t *testing.T) {
	requireAccounting(t)
	Require(t, "sshare")
	host := shortHostname(t)
	dir := shortTempDir(t)
	l := demoLayout(t)
	snap := filepath.Join(dir, "snapshot.json")
	writeWithProfiles(t, l.snapshot, snap)
	devDir := filepath.Join(dir, "devs")
	makeDevices(t, devDir, l.node)
	// 20.11 refuses MIG devices sharing their GPU's file: --files as
	// auto picks it for the release.
	gres := runSlurmMig(t, "--root", l.root, "gen", "--from", snap, "--node-name", host, "--no-cores", "--files", string(gresgen.FileStyleFor(release)))
	nodeLine := strings.TrimSpace(runSlurmMig(t, "--root", l.root, "node", "--from", snap, "--node-name", host))

	p := freeTCPPorts(t, 4) // slurmctld, slurmd, slurmdbd, mariadb
	conf := append(append(baseConf(dir, host, ports{p[0], p[1]}), accountingConf(p[2])...),
		// A job's last stretch of usage is charged at its end only
		// where limits are enforced (acct_policy.c calls
		// priority_g_job_end then); without, only the decay thread's
		// passes charge, each PriorityCalcPeriod, what jobs ran by then.
		"AccountingStorageEnforce=limits",
		"PriorityType=priority/multifactor",
		"PriorityCalcPeriod=1",
		nodeLine+" NodeAddr=127.0.0.1 "+hardware(t),
		"PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP # billed by CPU until now",
	)
	before := strings.Join(conf, "\n") + "\n"
	confPath := writeConfigs(t, dir, forThisMachine(gres, devDir), before)
	runSlurmMig(t, "--root", l.root, "node", "--from", snap, "--node-name", host, "--no-state",
		"--accounting", "--gpu-weight", "70", "--update", confPath)
	after, err := os.ReadFile(confPath)
	if err != nil {
		t.Fatal(err)
	}
	tres, weights := checkOnlyAccountingChanged(t, before, string(after))
	t.Logf("node --accounting --update set:\nAccountingStorageTRES=%s\nTRESBillingWeights=%s", tres, weights)
	// Forms to pin: a type neither tracked nor weighed (a100_2g.20gb
	// taken out of both), and a partition whose weights are written in
	// lower case ("gres/gpu:...", "cpu=1").
	edited := strings.Replace(string(after), ",gres/gpu:a100_2g.20gb", "", 1)
	edited = strings.Replace(edited, ",GRES/gpu:a100_2g.20gb=10", "", 1)
	edited += "PartitionName=lower Nodes=ALL MaxTime=INFINITE State=UP TRESBillingWeights=" + strings.ToLower(strings.Replace(weights, ",GRES/gpu:a100_2g.20gb=10", "", 1)) + "\n"
	if edited == string(after) {
		t.Fatalf("no a100_2g.20gb to take out of:\n%s", after)
	}
	if err := os.WriteFile(confPath, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}

	startAccounting(t, dir, host, p[2], p[3], "small", "whole", "any")
	c := startClusterIn(t, dir, host, confPath)
	c.allowed = append(c.allowed, accountingNoise...)
	if node := c.waitNode(registered, "to register"); node.state != "IDLE" {
		t.Fatalf("node %s is %s (Reason=%s), want IDLE\n%s", host, node.state, node.reason, c.logs())
	}

	// Every type's job, held: its billing is its CPUs plus its share of
	// the GPU times 70, in either partition (lower-case weights read as
	// upper-case ones). a100_2g.20gb, neither tracked nor weighed, bills
	// GRES/gpu's 10 (the smallest share), not its 20, and its TRES lack
	// the type.
	want := map[string]int{"a100": 70, "a100_1g.10gb": 10, "a100_1c.3g.40gb": 10, "a100_2c.3g.40gb": 20,
		"a100_3g.40gb": 30, "a100_2g.20gb": 20, "a100_1g.10gb+me": 10, "": 10}
	for typ, gpu := range want {
		g := "gpu:" + typ + ":1"
		if typ == "" {
			g = "gpu:1"
		}
		if typ == "a100_2g.20gb" {
			gpu = want[""]
		}
		for _, part := range []string{"debug", "lower"} {
			id := c.sbatch("--hold", "--account=any", "--partition="+part, "--gres="+g, "--wrap=true")
			cpus, billing, alloc := c.jobTRES(id, "TRES")
			if billing != cpus+gpu {
				t.Errorf("%s in %s: billing %d, want %d CPU + %d (TRES=%s)", g, part, billing, cpus, gpu, alloc)
			}
			if typed := strings.Contains(alloc, "gres/gpu:"+typ+"="); typed != (typ != "" && typ != "a100_2g.20gb") {
				t.Errorf("%s in %s: TRES=%s", g, part, alloc)
			}
			c.command(context.Background(), "scancel", id).Run()
		}
	}

	// Two jobs run, one after the other (the node's memory is one job's).
	run := map[string]string{"small": "gpu:a100_1g.10gb:1", "whole": "gpu:a100:1", "any": "gpu:1"}
	ids := map[string]string{}
	for _, acct := range []string{"small", "whole", "any"} {
		ids[acct] = c.sbatch("--account="+acct, "--gres="+run[acct], "--wrap=sleep 3")
		c.waitFor("job "+ids[acct]+" to end", func() (bool, string) {
			s := field(c.jobState(ids[acct]), "JobState")
			return s == "COMPLETED" || s == "FAILED" || s == "CANCELLED", s
		})
	}
	bills := map[string]int{}
	untyped := ""
	for acct, id := range ids {
		cpus, billing, alloc := c.jobTRES(id, "AllocTRES")
		bills[acct] = billing
		t.Logf("job %s (%s, --gres=%s): AllocTRES=%s", id, acct, run[acct], alloc)
		typ := strings.Split(run[acct], ":")[1]
		switch acct {
		case "small", "whole":
			if billing != cpus+want[typ] || !strings.Contains(alloc, "gres/gpu:"+typ+"=1") {
				t.Errorf("job %s (--gres=%s): AllocTRES %s, want billing=%d and gres/gpu:%s=1", id, run[acct], alloc, cpus+want[typ], typ)
			}
		case "any":
			// An untyped request: where Slurm records the type of the
			// device it got, it bills that exactly; else the base.
			got := regexp.MustCompile(`gres/gpu:([^=,]+)=1`).FindStringSubmatch(alloc)
			untyped = "recorded as no type, billed the base"
			if got != nil {
				untyped = "recorded as " + got[1] + ", billed its share"
			}
			if got == nil {
				if billing != cpus+want[""] {
					t.Errorf("untyped job %s: AllocTRES %s, want billing=%d (the smallest share)", id, alloc, cpus+want[""])
				}
			} else if billing != cpus+want[got[1]] {
				t.Errorf("untyped job %s on %s: AllocTRES %s, want billing=%d", id, got[1], alloc, cpus+want[got[1]])
			}
		}
	}
	// sacct reads slurmdbd: each job's AllocTRES, with its type.
	c.waitFor("sacct to have the jobs", func() (bool, string) {
		out, _ := c.command(context.Background(), "sacct", "-X", "-n", "-P", "-o", "JobID,Account,AllocTRES,ElapsedRaw", "-j", ids["small"]+","+ids["whole"]).CombinedOutput()
		return strings.Contains(string(out), "gres/gpu:a100_1g.10gb=1") && strings.Contains(string(out), "gres/gpu:a100=1"), string(out)
	})
	out, _ := c.command(context.Background(), "sacct", "-X", "-n", "-P", "-o", "JobID,Account,AllocTRES,ElapsedRaw", "-j", ids["small"]+","+ids["whole"]).CombinedOutput()
	t.Logf("sacct:\n%s", out)
	elapsed := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 4 {
			elapsed[f[1]], _ = strconv.ParseFloat(f[3], 64)
		}
	}
	checkHistory(t, c, host, ids["small"], ids["whole"])
	// sshare: each account charged billing times seconds run.
	usage := map[string]float64{}
	deadline := time.Now().Add(100 * time.Second)
	for time.Now().Before(deadline) {
		out, err := c.command(context.Background(), "sshare", "-a", "-n", "-P", "-o", "Account,User,RawUsage").CombinedOutput()
		if err != nil {
			t.Fatalf("sshare: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Split(line, "|")
			if len(f) == 3 && f[1] == "root" {
				usage[strings.TrimSpace(f[0])], _ = strconv.ParseFloat(f[2], 64)
			}
		}
		if usage["small"] > 0 && usage["whole"] > 0 {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("sshare RawUsage: small %g, whole %g; billing %d and %d; elapsed %g s and %g s", usage["small"], usage["whole"], bills["small"], bills["whole"], elapsed["small"], elapsed["whole"])
	for _, acct := range []string{"small", "whole"} {
		// RawUsage is billing times the seconds the job ran, whole
		// seconds from start to end as sacct has them.
		if w := float64(bills[acct]) * elapsed[acct]; usage[acct] == 0 || abs(usage[acct]-w) > float64(bills[acct])*1.01 {
			t.Errorf("sshare: account %s RawUsage %g, want billing %d x %g s = %g", acct, usage[acct], bills[acct], elapsed[acct], w)
		}
	}
	clusterScenarios.Add(1)
	Announce("slurmtest: accounting (Slurm %s, slurmdbd + MariaDB): billing per job 1g.10gb %d, whole A100 %d (CPU + 70 x share); sshare RawUsage %g and %g; --gres=gpu:1 %s (billing %d)",
		release, bills["small"], bills["whole"], usage["small"], usage["whole"], untyped, bills["any"])
}

// checkHistory runs the sacct command of rebalance --history
// (rebalance.HistoryFormat) against this release's slurmdbd, and reads
// its output as the command does: every line is read, and the two jobs
// that ran are there with their types, times and node.
func checkHistory(t *testing.T, c *cluster, host, small, whole string) {
	t.Helper()
	words := strings.Fields(rebalance.HistoryFormat)
	out, err := c.command(context.Background(), words[0], words[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", rebalance.HistoryFormat, err, out)
	}
	records, err := rebalance.ParseHistory("sacct", out, time.Local)
	if err != nil {
		t.Fatalf("rebalance --history reads sacct of Slurm %s: %v\n%s", release, err, out)
	}
	got := map[string]rebalance.Record{}
	for _, r := range records {
		got[r.ID] = r
	}
	for id, typ := range map[string]string{small: "a100_1g.10gb", whole: "a100"} {
		r, ok := got[id]
		switch {
		case !ok:
			t.Errorf("sacct of Slurm %s: job %s not read\n%s", release, id, out)
		case r.Type != typ || r.Count != 1 || r.Submit.IsZero() || r.Start.Before(r.Submit) || !r.End.After(r.Start) ||
			time.Since(r.Submit) > time.Hour || fmt.Sprint(r.Nodes) != "["+host+"]" || r.State != "COMPLETED":
			t.Errorf("sacct of Slurm %s: job %s read as %+v, want %s, submitted in the last hour, ended, on %s\n%s", release, id, r, typ, host, out)
		}
	}
	t.Logf("rebalance --history read %d jobs of sacct (Slurm %s)", len(records), release)
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// writeWithProfiles writes the snapshot at from to to, each GPU given the
// A100 80GB profile table and schema 2.
func writeWithProfiles(t *testing.T, from, to string) {
	t.Helper()
	n, err := snapshot.Load(from)
	if err != nil {
		t.Fatal(err)
	}
	table := &model.ProfileTable{Profiles: a100Profiles}
	for i := range n.GPUs {
		n.GPUs[i].Profiles, n.GPUs[i].PCIDeviceID = table, "0x20B210DE" // A100-SXM4-80GB
	}
	f, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := snapshot.Write(f, n); err != nil {
		t.Fatal(err)
	}
}

// checkOnlyAccountingChanged fails t unless after is before with an
// AccountingStorageTRES line added at the end and TRESBillingWeights=
// added to the partition line, and returns their values.
func checkOnlyAccountingChanged(t *testing.T, before, after string) (tres, weights string) {
	t.Helper()
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	if len(a) != len(b)+1 {
		t.Fatalf("slurm.conf went from %d to %d lines, want one more:\n%s", len(b), len(a), after)
	}
	for i := range b {
		switch {
		case strings.HasPrefix(b[i], "PartitionName=debug "):
			const keep = "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
			rest, ok := strings.CutPrefix(a[i], keep+" TRESBillingWeights=")
			if !ok || !strings.HasSuffix(rest, " # billed by CPU until now") {
				t.Fatalf("partition line %q became %q", b[i], a[i])
			}
			weights = strings.TrimSuffix(rest, " # billed by CPU until now")
		case a[i] != b[i] && i < len(b)-1:
			t.Fatalf("line %d %q became %q", i+1, b[i], a[i])
		}
	}
	tres, ok := strings.CutPrefix(a[len(b)-1], "AccountingStorageTRES=")
	if !ok || a[len(a)-1] != "" {
		t.Fatalf("slurm.conf ends %q, want an AccountingStorageTRES= line", a[len(b)-1:])
	}
	return tres, weights
}

// requireAccounting skips the test where this Slurm has no slurmdbd of
// its own release, or the machine no MariaDB.
func requireAccounting(t *testing.T) {
	t.Helper()
	requireCluster(t)
	Require(t, "sacctmgr", "sacct")
	testtools.Require(t, "slurmdbd", "slurmdbd")
	testtools.Require(t, "mariadb-server", "mariadbd")
	testtools.Require(t, "mariadb-server", "mariadb-install-db")
	// scripts/slurm-versions.sh wraps the chroot's Slurm commands, each
	// where slurmctld's wrapper is; a slurmdbd elsewhere is this host's,
	// of another release than the chroot's slurmctld.
	dbd, _ := exec.LookPath("slurmdbd")
	ctld, _ := exec.LookPath("slurmctld")
	if filepath.Dir(dbd) != filepath.Dir(ctld) {
		t.Skipf("slurmdbd (%s) is not of this Slurm (%s, %s): slurmctld accounts gres TRES only with a slurmdbd of its own release", dbd, ctld, release)
	}
}

// accountingConf are the slurm.conf lines of a cluster that stores its
// accounting in the slurmdbd on port.
func accountingConf(port int) []string {
	return []string{
		"AccountingStorageType=accounting_storage/slurmdbd",
		"AccountingStorageHost=127.0.0.1",
		fmt.Sprintf("AccountingStoragePort=%d", port),
		"JobAcctGatherType=jobacct_gather/none",
	}
}

// accountingNoise are the error: lines of a cluster with accounting
// that say nothing of the test.
var accountingNoise = []logLine{
	// slurmdbd's advice on a MariaDB tuned for a laptop, not a site.
	{"slurmdbd", regexp.MustCompile(`Database settings not recommended values`)},
	// A first start with accounting, no federation state saved yet.
	{"slurmctld", regexp.MustCompile(`error: No fed_mgr state file .* to recover`)},
}

// startAccounting starts a MariaDB on dbPort and a slurmdbd on dbdPort
// for the cluster whose slurm.conf is in dir (written before), and adds
// the cluster, the accounts and root as their user, before slurmctld
// starts.
func startAccounting(t *testing.T, dir, host string, dbdPort, dbPort int, accounts ...string) {
	t.Helper()
	db := startMariaDB(t, dir, dbPort)
	startSlurmdbd(t, dir, host, dbdPort, dbPort, db)
	sacctmgr := func(args ...string) {
		t.Helper()
		cmd := exec.Command("sacctmgr", append([]string{"-i"}, args...)...)
		cmd.Env = slurmEnv(filepath.Join(dir, "slurm.conf"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sacctmgr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	sacctmgr("add", "cluster", "slurmtest")
	sacctmgr("add", "account", strings.Join(accounts, ","))
	sacctmgr("add", "user", "root", "account="+strings.Join(accounts, ","))
}

// startMariaDB makes a database of the test's own under dir, with
// mariadb-install-db, and serves it on 127.0.0.1:port with no
// authentication (--skip-grant-tables), as root; stopped when t ends.
// It returns the socket.
func startMariaDB(t *testing.T, dir string, port int) string {
	t.Helper()
	data, sock := filepath.Join(dir, "mysql"), filepath.Join(dir, "mysql.sock")
	install := exec.Command("mariadb-install-db", "--no-defaults", "--user=root", "--datadir="+data, "--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	cmd := exec.Command("mariadbd", "--no-defaults", "--user=root", "--datadir="+data, "--socket="+sock,
		fmt.Sprintf("--port=%d", port), "--bind-address=127.0.0.1", "--skip-grant-tables",
		"--pid-file="+filepath.Join(dir, "mysql.pid"), "--log-error="+filepath.Join(dir, "mysql.err"), "--innodb-buffer-pool-size=16M")
	startDaemon(t, dir, "mariadbd", cmd)
	waitUntil(t, "MariaDB to answer", func() (bool, string) {
		_, err := os.Stat(sock)
		data, _ := os.ReadFile(filepath.Join(dir, "mysql.err"))
		return err == nil && strings.Contains(string(data), "ready for connections"), string(data)
	})
	return sock
}

// startSlurmdbd writes slurmdbd.conf beside slurm.conf (mode 0600, as
// slurmdbd wants it) and starts slurmdbd on port, storing in the MariaDB
// on dbPort; stopped when t ends.
func startSlurmdbd(t *testing.T, dir, host string, port, dbPort int, _ string) {
	t.Helper()
	conf := strings.Join([]string{
		"AuthType=auth/none",
		"DbdHost=" + host,
		"DbdAddr=127.0.0.1",
		fmt.Sprintf("DbdPort=%d", port),
		"SlurmUser=root",
		"PidFile=" + dir + "/slurmdbd.pid",
		"LogFile=" + dir + "/slurmdbd.log",
		"StorageType=accounting_storage/mysql",
		"StorageHost=127.0.0.1",
		fmt.Sprintf("StoragePort=%d", dbPort),
		"StorageUser=root",
		"StorageLoc=slurm_acct_db",
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "slurmdbd.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("slurmdbd", "-D")
	cmd.Env = slurmEnv(filepath.Join(dir, "slurm.conf"))
	startDaemon(t, dir, "slurmdbd", cmd)
	waitUntil(t, "slurmdbd to start", func() (bool, string) {
		data, _ := os.ReadFile(filepath.Join(dir, "slurmdbd.log"))
		return strings.Contains(string(data), "started"), string(data)
	})
}

// startDaemon starts cmd in a process group of its own, its output in
// dir/name.out, and stops it when t ends (SIGTERM, then SIGKILL).
func startDaemon(t *testing.T, dir, name string, cmd *exec.Cmd) {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(d.stop)
}

// waitUntil polls cond every 100 ms for up to 60 s.
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, status := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after 60s\n%s", what, status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sbatch submits a batch job of one task and returns its id.
func (c *cluster) sbatch(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.command(ctx, "sbatch", append([]string{"--parsable", "-n1", "--output=/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("sbatch %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	return id
}

// jobTRES is a job's CPUs and billing from `scontrol show job`'s key
// (TRES, or sacct's AllocTRES once run), and the whole value.
func (c *cluster) jobTRES(id, key string) (cpus, billing int, value string) {
	c.t.Helper()
	if key == "AllocTRES" {
		out, err := c.command(context.Background(), "scontrol", "show", "job", "-o", id).CombinedOutput()
		if err != nil {
			c.t.Fatalf("scontrol show job %s: %v\n%s", id, err, out)
		}
		value = field(strings.TrimSpace(string(out)), "AllocTRES")
		if value == "" || value == "(null)" {
			value = field(strings.TrimSpace(string(out)), "TRES")
		}
	} else {
		out, err := c.command(context.Background(), "scontrol", "show", "job", "-o", id).CombinedOutput()
		if err != nil {
			c.t.Fatalf("scontrol show job %s: %v\n%s", id, err, out)
		}
		value = field(strings.TrimSpace(string(out)), key)
		if value == "" {
			// 24.11 shows a pending job's TRES as ReqTRES=, 22.05 as TRES=.
			value = field(strings.TrimSpace(string(out)), "Req"+key)
		}
	}
	for _, kv := range strings.Split(value, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "cpu":
			cpus = n
		case "billing":
			billing = n
		}
	}
	return cpus, billing, value
}
