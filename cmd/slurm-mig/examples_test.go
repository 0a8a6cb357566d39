package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	hooks "github.com/NVIDIA/mig-parted/api/hooks/v1"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// The automation examples in scripts/ are run here, command for command,
// against a fake node: /etc/slurm becomes a temp dir, NVML a fake with two
// MIG devices, and the real mig-minors sits under --root.

const slurmMigPath = "/usr/local/bin/slurm-mig"

// exampleCommands pulls the slurm-mig command lines out of each example.
func exampleCommands(t *testing.T) map[string][][]string {
	t.Helper()
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(fixture.Root(t), "scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	out := map[string][][]string{}

	// mig-parted: command: "<abs path>" then args: [JSON list].
	hooks := read("mig-parted/hooks.yaml")
	re := regexp.MustCompile(`command: "([^"]+)"\s+args: (\[.*\])`)
	for _, m := range re.FindAllStringSubmatch(hooks, -1) {
		if !filepath.IsAbs(m[1]) {
			t.Errorf("mig-parted hook command %q is not absolute (hooks run with no PATH)", m[1])
		}
		if m[1] != slurmMigPath {
			continue
		}
		var args []string
		if err := json.Unmarshal([]byte(m[2]), &args); err != nil {
			t.Fatalf("mig-parted args %s: %v", m[2], err)
		}
		out["mig-parted"] = append(out["mig-parted"], args)
	}

	// systemd: ExecStart=<abs path> args...
	for _, line := range strings.Split(read("systemd/slurm-mig-gres.service"), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			f := strings.Fields(rest)
			if f[0] != slurmMigPath {
				t.Errorf("ExecStart runs %q, want %s", f[0], slurmMigPath)
			}
			out["systemd"] = append(out["systemd"], f[1:])
		}
	}

	// Ansible: argv: [a, b, c], the command module's list (no shell).
	for _, m := range regexp.MustCompile(`argv: \[(.*)\]`).FindAllStringSubmatch(read("ansible/slurm-mig.yml"), -1) {
		f := strings.Split(m[1], ", ")
		if f[0] != slurmMigPath {
			t.Errorf("Ansible argv runs %q, want %s", f[0], slurmMigPath)
		}
		out["ansible"] = append(out["ansible"], f[1:])
	}
	for _, name := range []string{"mig-parted", "systemd", "ansible"} {
		if len(out[name]) == 0 {
			t.Fatalf("found no slurm-mig command in the %s example", name)
		}
	}
	return out
}

func TestAutomationExamples(t *testing.T) {
	minors := fixture.Read(t, fixture.RealMigMinors)
	fake := exampleNode()

	for example, commands := range exampleCommands(t) {
		t.Run(example, func(t *testing.T) {
			tmp := t.TempDir()
			root := filepath.Join(tmp, "root")
			etc := filepath.Join(tmp, "etc-slurm")
			mustWrite(t, filepath.Join(root, "proc/driver/nvidia-caps/mig-minors"), string(minors))
			mustWrite(t, filepath.Join(etc, "slurm.conf"), "ClusterName=c\nNodeName=n1 Gres=gpu:h100_1g.10gb:2\n")
			for _, args := range commands {
				args = append([]string{"--root", root}, args...)
				for i, a := range args {
					args[i] = strings.ReplaceAll(a, "/etc/slurm", etc)
				}
				for round := 0; round < 2; round++ {
					var stdout, stderr bytes.Buffer
					code := run(args, &env{stdout: &stdout, stderr: &stderr,
						newNVML:  func() nvml.Interface { lib, _ := nvmlfake.New(fake); return lib },
						hostname: func() (string, error) { return "n1.cluster", nil }})
					if code != exitOK {
						t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
					}
					if strings.Contains(strings.Join(args, " "), "--json") {
						var res struct{ Changed *bool }
						if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
							t.Fatalf("%v: --json printed %q: %v", args, stdout.String(), err)
						}
						if args[2] == "gen" && (res.Changed == nil || *res.Changed != (round == 0)) {
							t.Errorf("%v round %d: changed = %v", args, round, res.Changed)
						}
					}
				}
			}
			got, err := os.ReadFile(filepath.Join(etc, "gres.conf"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(got), "Type=h100_1g.10gb MultipleFiles=/dev/nvidia0,"); n != 2 {
				t.Errorf("gres.conf has %d MIG lines, want 2:\n%s", n, got)
			}
		})
	}
}

// exampleNode is the fake node of the examples: an H100 with two 1g.10gb
// MIG devices.
func exampleNode() *nvmlfake.Fixture {
	return &nvmlfake.Fixture{DriverVersion: "580.159.04", GPUs: []nvmlfake.GPU{{
		Minor: 0, UUID: "GPU-00000001-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:00:06.0", MemoryMiB: 81559, MigMode: "enabled",
		MigDevices: []nvmlfake.MigDevice{
			{HandleIndex: 0, GI: 7, CI: 0, UUID: "MIG-00000001-0000-4000-8000-000000000000", Profile: "1g.10gb"},
			{HandleIndex: 1, GI: 8, CI: 0, UUID: "MIG-00000002-0000-4000-8000-000000000000", Profile: "1g.10gb"},
		}}}}
}

// TestAnsibleDiffFailsOnlyOnDrain runs the Ansible example's diff task
// against slurm.conf files that declare the node's devices, fewer, more,
// or not the node at all, and evaluates the task's failed_when with
// Jinja2, as Ansible does: it fails on the drain case (more declared than
// the node has) and on trouble, never on a node that has more than
// declared.
func TestAnsibleDiffFailsOnlyOnDrain(t *testing.T) {
	yml, err := os.ReadFile(filepath.Join(fixture.Root(t), "scripts/ansible/slurm-mig.yml"))
	if err != nil {
		t.Fatal(err)
	}
	failedWhen := foldedValue(t, string(yml), "failed_when")
	var diffArgs []string
	for _, args := range exampleCommands(t)["ansible"] {
		if args[0] == "diff" {
			diffArgs = args
		}
	}
	if diffArgs == nil {
		t.Fatal("the Ansible example runs no diff")
	}
	requireJinja(t)

	for _, tc := range []struct {
		name, slurmConf string
		rc              int
		failed          bool
	}{
		{"same", "NodeName=n1 Gres=gpu:h100_1g.10gb:2", 0, false},
		{"node has more than declared", "NodeName=n1 Gres=gpu:h100_1g.10gb:1", 1, false},
		{"declared more than the node has", "NodeName=n1 Gres=gpu:h100_1g.10gb:3", 1, true},
		{"declared a type the node lacks", "NodeName=n1 Gres=gpu:h100_1g.10gb:2,gpu:h100:1", 1, true},
		{"node not in slurm.conf", "NodeName=n2 Gres=gpu:h100:1", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			root, etc := filepath.Join(tmp, "root"), filepath.Join(tmp, "etc-slurm")
			mustWrite(t, filepath.Join(root, "proc/driver/nvidia-caps/mig-minors"), string(fixture.Read(t, fixture.RealMigMinors)))
			mustWrite(t, filepath.Join(etc, "slurm.conf"), "ClusterName=c\n"+tc.slurmConf+"\n")
			args := []string{"--root", root}
			for _, a := range diffArgs {
				args = append(args, strings.ReplaceAll(a, "/etc/slurm", etc))
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &env{stdout: &stdout, stderr: &stderr,
				newNVML:  func() nvml.Interface { lib, _ := nvmlfake.New(exampleNode()); return lib },
				hostname: func() (string, error) { return "n1.cluster", nil }})
			if code != tc.rc {
				t.Fatalf("%v: exit %d, want %d; stderr %s", args, code, tc.rc, stderr.String())
			}
			if got := evalJinja(t, failedWhen, code, stdout.String()); got != tc.failed {
				t.Errorf("failed_when = %v, want %v (rc %d, stdout %s)", got, tc.failed, code, stdout.String())
			}
		})
	}
}

// foldedValue is the value of a YAML key written as a folded block
// ("key: >-" and more-indented lines), its lines joined by spaces.
func foldedValue(t *testing.T, yml, key string) string {
	t.Helper()
	lines := strings.Split(yml, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != key+": >-" {
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		var parts []string
		for _, next := range lines[i+1:] {
			if strings.TrimSpace(next) == "" || len(next)-len(strings.TrimLeft(next, " ")) <= indent {
				break
			}
			parts = append(parts, strings.TrimSpace(next))
		}
		return strings.Join(parts, " ")
	}
	t.Fatalf("no %q folded block in the Ansible example", key)
	return ""
}

// requireJinja checks for python3 with Jinja2, Ansible's template engine:
// under CI the test fails without it, elsewhere it is skipped, saying so.
func requireJinja(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("python3", "-c", "import jinja2").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 with Jinja2 is needed to evaluate the Ansible example: %v %s", err, out)
		}
		t.Skipf("python3 with Jinja2 is not installed (%v); the Ansible conditional is not evaluated", err)
	}
}

// evalJinja evaluates an Ansible conditional as Ansible does, in a Jinja2
// if-block, with the registered result of the diff task and Ansible's
// from_json filter.
func evalJinja(t *testing.T, cond string, rc int, stdout string) bool {
	t.Helper()
	const script = `import json, sys, jinja2
d = json.load(sys.stdin)
env = jinja2.Environment(undefined=jinja2.StrictUndefined)
env.filters["from_json"] = json.loads
tmpl = env.from_string("{% if " + d["cond"] + " %}True{% else %}False{% endif %}")
print(tmpl.render(slurm_mig_diff={"rc": d["rc"], "stdout": d["stdout"]}))`
	in, _ := json.Marshal(map[string]any{"cond": cond, "rc": rc, "stdout": stdout})
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("evaluating %q: %v\n%s", cond, err, out)
	}
	return strings.TrimSpace(string(out)) == "True"
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTaskPrologExample checks the TaskProlog example's wiring; its
// behaviour, chained after a site prolog, is in testdata/script/taskprolog.txtar.
func TestTaskPrologExample(t *testing.T) {
	script, err := os.ReadFile("../../scripts/taskprolog/taskprolog.sh")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("../../scripts/taskprolog/slurm.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "\nexec "+slurmMigPath+" env\n") {
		t.Errorf("taskprolog.sh does not end in `exec %s env` (Slurm runs it with a bare PATH)", slurmMigPath)
	}
	m := regexp.MustCompile(`(?m)^TaskProlog=(\S+)$`).FindStringSubmatch(string(conf))
	if m == nil || !strings.Contains(string(script), "Install as "+m[1]+" ") {
		t.Errorf("slurm.conf's TaskProlog= %v is not where taskprolog.sh says to install it", m)
	}
}

// TestJobmapExample checks the wiring of the Prolog and Epilog examples:
// both run jobmap on two directories, one per exporter's format, the
// Epilog with --remove, each installed where slurm.conf's Prolog= and
// Epilog= globs find it; their behaviour is in
// testdata/script/jobmap_example.txtar, and in a real cluster in
// internal/slurmtest (TestJobmap).
func TestJobmapExample(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile("../../scripts/jobmap/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	prolog, epilog, conf := read("prolog.sh"), read("epilog.sh"), read("slurm.conf")
	const dcgm, gpustat = "/run/slurm-mig/jobmap-dcgm", "/run/gpustat"
	dcgmRun := slurmMigPath + " jobmap --format dcgm --dir " + dcgm
	statsRun := slurmMigPath + " jobmap --format jobstats --dir " + gpustat
	if !strings.Contains(prolog, "\n"+dcgmRun+" || exit\n") || !strings.HasSuffix(prolog, "\nexec "+statsRun+"\n") {
		t.Errorf("prolog.sh does not run `%s || exit` and end in `exec %s` (Slurm runs it with a bare PATH)", dcgmRun, statsRun)
	}
	if !strings.Contains(epilog, "\n"+dcgmRun+" --remove\n") || !strings.Contains(epilog, "\n"+statsRun+" --remove || exit\n") {
		t.Errorf("epilog.sh does not run `%s --remove` and `%s --remove`", dcgmRun, statsRun)
	}
	for script, key := range map[string]string{prolog: "Prolog", epilog: "Epilog"} {
		m := regexp.MustCompile(`(?m)^` + key + `=(\S+)/\*$`).FindStringSubmatch(conf)
		if m == nil || !strings.Contains(script, "Install as "+m[1]+"/slurm-mig-jobmap.sh ") {
			t.Errorf("slurm.conf's %s= %v is not where the script says to install it", key, m)
		}
	}
	if !strings.Contains(conf, "--hpc-job-mapping-dir "+dcgm+"\n") {
		t.Errorf("slurm.conf does not point dcgm-exporter at %s", dcgm)
	}
}

// The mig-parted hook, read and run by mig-parted's own hooks package
// (apply-exit, with no PATH), restarts slurmd only where slurmctld holds
// the node's counts already (diff --running exits 0): a slurmd restarted
// with counts slurmctld does not hold is drained (docs/repartition.md).
// slurm-mig and systemctl are stand-ins that record how they were run.
func TestMigPartedHookRestartsOnlyOnSameCounts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixture.Root(t), "scripts", "mig-parted", "hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		diffExit int
		restart  bool
	}{{0, true}, {1, false}, {2, false}} {
		dir := t.TempDir()
		log := filepath.Join(dir, "log")
		fakeMig := filepath.Join(dir, "slurm-mig")
		fakeCtl := filepath.Join(dir, "systemctl")
		mustWrite(t, fakeMig, fmt.Sprintf("#!/bin/sh\necho \"slurm-mig $*\" >>%s\n[ \"$1\" = diff ] && exit %d\nexit 0\n", log, tc.diffExit))
		mustWrite(t, fakeCtl, fmt.Sprintf("#!/bin/sh\necho \"systemctl $*\" >>%s\n", log))
		for _, f := range []string{fakeMig, fakeCtl} {
			if err := os.Chmod(f, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		yaml := strings.NewReplacer(slurmMigPath, fakeMig, "/bin/systemctl", fakeCtl, `"/etc/slurm"`, `"`+dir+`"`).Replace(string(data))
		var spec hooks.Spec
		if err := k8syaml.UnmarshalStrict([]byte(yaml), &spec); err != nil {
			t.Fatalf("hooks.yaml as mig-parted reads it: %v", err)
		}
		if err := spec.Hooks.Run("apply-exit", hooks.EnvsMap{}, false); err != nil {
			t.Errorf("diff exit %d: apply-exit hooks failed: %v", tc.diffExit, err)
		}
		got, _ := os.ReadFile(log)
		want := "slurm-mig gen -o /etc/slurm/gres.conf --backup\nslurm-mig diff --running\n"
		if tc.restart {
			want += "systemctl try-restart slurmd.service\n"
		}
		if string(got) != want {
			t.Errorf("diff exit %d: the hooks ran\n%s\nwant\n%s", tc.diffExit, got, want)
		}
	}
}

// TestRebalanceUnit runs the controller's systemd unit's ExecStart, as
// systemd would pass it to sh ($$ and %% undone), with squeue, scontrol
// and slurm-mig standing in: squeue and scontrol are asked what
// rebalance reads, and slurm-mig gets the unit's flags, which the real
// command then takes (an empty queue: a run with nothing to do).
func TestRebalanceUnit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixture.Root(t), "scripts/systemd/slurm-mig-rebalance.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(string(data), "\\\n", "")
	m := regexp.MustCompile(`(?m)^ExecStart=/bin/sh -ec '(.*)'$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatalf("no ExecStart=/bin/sh -ec '...' in the unit:\n%s", unit)
	}
	// systemd itself expands $VAR and ${VAR} in ExecStart; the unit
	// leaves every variable to sh, as $$VAR.
	if bare := regexp.MustCompile(`(^|[^$])\$[A-Za-z_{]`).FindString(strings.ReplaceAll(m[1], "$$", "")); bare != "" {
		t.Errorf("ExecStart has %q, which systemd would expand before sh sees it: write $$", bare)
	}
	script := strings.NewReplacer("$$", "$", "%%", "%").Replace(m[1])
	dir := t.TempDir()
	bin, runDir, state := filepath.Join(dir, "bin"), filepath.Join(dir, "run"), filepath.Join(dir, "state")
	for _, d := range []string{bin, runDir, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stub := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := func(name string) string { return filepath.Join(dir, name+".args") }
	stub("squeue", fmt.Sprintf("printf '%%s\\n' \"$@\" >%s\necho \"$SLURM_TIME_FORMAT\" >%s\necho '2001 2026-11-24T09:00:00 1 gres:gpu:h100_1g.10gb:1'\n", args("squeue"), args("squeue-time")))
	stub("scontrol", fmt.Sprintf("printf '%%s\\n' \"$@\" >%s\necho 'NodeName=gpu01 State=IDLE Gres=gpu:h100:1 GresUsed=gpu:h100:0(IDX:N/A)'\n", args("scontrol")))
	stub("slurm-mig", fmt.Sprintf("printf '%%s\\n' \"$@\" >%s\n", args("slurm-mig")))
	script = strings.ReplaceAll(script, slurmMigPath, filepath.Join(bin, "slurm-mig"))
	change := `ssh -o BatchMode=yes root@"$NODE" NODE="$NODE" SELECT="$SELECT" /usr/share/doc/slurm-mig/examples/repartition/repartition.sh`
	cmd := exec.Command("/bin/sh", "-ec", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin", "RUNTIME_DIRECTORY="+runDir, "STATE_DIRECTORY="+state,
		"MIG_CONFIG=/etc/nvidia-mig-manager/config.yaml", "CHANGE_COMMAND="+change, "REBALANCE_FLAGS=--hardware gpu[01-02]=/snap.json --max-nodes 2",
		"SLURM_TIME_FORMAT=relative") // as an admin's environment file may set it
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the unit's ExecStart: %v\n%s", err, out)
	}
	lines := func(name string) []string {
		data, err := os.ReadFile(args(name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
	if got, want := "squeue "+strings.Join(lines("squeue")[:3], " ")+" '"+strings.TrimPrefix(lines("squeue")[3], "--format=")+"'", strings.Replace(rebalance.QueueFormat, "--format='", "'", 1); got != want {
		t.Errorf("the unit runs %s, rebalance reads %s", got, want)
	}
	if got := lines("squeue-time"); !slices.Equal(got, []string{"standard"}) {
		t.Errorf("the unit runs squeue with SLURM_TIME_FORMAT=%q, want standard: rebalance reads its times", got)
	}
	if got := "scontrol " + strings.Join(lines("scontrol"), " "); got != rebalance.NodesFormat {
		t.Errorf("the unit runs %s, rebalance reads %s", got, rebalance.NodesFormat)
	}
	want := []string{"rebalance", "--apply", "--queue", "queue.txt", "--nodes", "nodes.txt", "--mig-config", "/etc/nvidia-mig-manager/config.yaml",
		"--journal", state, "--change-command", change, "--hardware", "gpu[01-02]=/snap.json", "--max-nodes", "2"}
	got := lines("slurm-mig")
	if !slices.Equal(got, want) {
		t.Fatalf("slurm-mig got\n%q\nwant\n%q", got, want)
	}
	// With HISTORY set, the run reads sacct's last day, as --history
	// reads it, and decides by the policy.
	stub("sacct", fmt.Sprintf("printf '%%s\\n' \"$@\" >%s\necho \"$SLURM_TIME_FORMAT\" >%s\n", args("sacct"), args("sacct-time")))
	cmd = exec.Command("/bin/sh", "-ec", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin", "RUNTIME_DIRECTORY="+runDir, "STATE_DIRECTORY="+state,
		"MIG_CONFIG=/etc/nvidia-mig-manager/config.yaml", "CHANGE_COMMAND="+change, "REBALANCE_FLAGS=--hardware gpu[01-02]=/snap.json --max-nodes 2",
		"SLURM_TIME_FORMAT=relative", "HISTORY=yes")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the unit's ExecStart with HISTORY=yes: %v\n%s", err, out)
	}
	if got := "sacct " + strings.Join(lines("sacct"), " "); got != rebalance.HistoryFormat {
		t.Errorf("the unit runs %s, rebalance reads %s", got, rebalance.HistoryFormat)
	}
	if got := lines("sacct-time"); !slices.Equal(got, []string{"standard"}) {
		t.Errorf("the unit runs sacct with SLURM_TIME_FORMAT=%q, want standard", got)
	}
	if got := lines("slurm-mig"); !slices.Equal(got, append(slices.Clip(want), "--history", "history.txt")) {
		t.Errorf("with HISTORY=yes, slurm-mig got\n%q\nwant %q and --history history.txt", got, want)
	}
	// The real command takes those flags: nothing pending, nothing to do.
	files := map[string]string{"queue.txt": "", "snap.json": "", "mig.yaml": ""}
	ar, err := txtar.ParseFile(fixture.Path(t, "script/rebalance.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		switch f.Name {
		case "gpu01.json":
			files["snap.json"] = string(f.Data)
		case "mig.yaml":
			files["mig.yaml"] = string(f.Data)
		case "nodes.txt":
			files["nodes.txt"] = string(f.Data)
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(runDir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range got {
		got[i] = strings.NewReplacer("/snap.json", filepath.Join(runDir, "snap.json"), "/etc/nvidia-mig-manager/config.yaml", filepath.Join(runDir, "mig.yaml")).Replace(a)
	}
	var out, errs bytes.Buffer
	t.Chdir(runDir)
	if code := run(got, &env{stdout: &out, stderr: &errs, newNVML: testNVML, hostname: testHostname}); code != 0 || !strings.Contains(out.String(), "done 0, rolled back 0, abandoned 0, failed 0, waiting 0, skipped 0") {
		t.Errorf("slurm-mig %s: exit %d\n%s%s", strings.Join(got, " "), code, out.String(), errs.String())
	}
}

// TestSystemdVerifiesUnits has systemd's own reader of unit files,
// systemd-analyze verify, read each unit of scripts/systemd: a setting it
// does not know, a bad value or quoting in ExecStart, a timer it cannot
// schedule. The binary the units name is not installed here; /bin/true
// stands in for it, so that verify's check of the path passes.
func TestSystemdVerifiesUnits(t *testing.T) {
	analyze := testtools.Require(t, "systemd", "systemd-analyze")
	units, err := filepath.Glob(filepath.Join(fixture.Root(t), "scripts/systemd/*"))
	if err != nil || len(units) == 0 {
		t.Fatalf("no units in scripts/systemd (%v)", err)
	}
	dir := t.TempDir()
	args := []string{"verify", "--man=no"}
	for _, u := range units {
		data, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, filepath.Base(u))
		if err := os.WriteFile(to, bytes.ReplaceAll(data, []byte("/usr/local/bin/slurm-mig"), []byte("/bin/true")), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, to)
	}
	out, err := exec.Command(analyze, args...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
