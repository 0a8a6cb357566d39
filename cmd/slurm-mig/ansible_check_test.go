package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// These tests run the Ansible examples with the real ansible-playbook
// against localhost (ansible_connection=local), in temp dirs: /etc/slurm
// becomes a temp dir, /usr/local/bin/slurm-mig a wrapper that runs the
// binary built from this tree on the demo node (testdata/demo, an A100
// node with 14 GPUs and MIG devices, from its snapshot), and the slurmd
// and slurmctld restarts handlers that log where they ran.

// ansibleSandbox is a temp dir with etc/ (for /etc/slurm), a slurm-mig
// wrapper (for /usr/local/bin/slurm-mig) whose gen and diff read the demo
// node's snapshot, named $NODE where set, and a restarts log.
type ansibleSandbox struct {
	t                  *testing.T
	dir, etc, bin, log string
	ansible            string
}

func newAnsibleSandbox(t *testing.T) *ansibleSandbox {
	t.Helper()
	ansible := testtools.Require(t, "ansible-core", "ansible-playbook")
	bin := buildBinary(t, t.TempDir())
	dir := t.TempDir()
	s := &ansibleSandbox{t: t, dir: dir, etc: filepath.Join(dir, "etc"), bin: filepath.Join(dir, "slurm-mig"), log: filepath.Join(dir, "restarts"), ansible: ansible}
	if err := os.MkdirAll(s.etc, 0o755); err != nil {
		t.Fatal(err)
	}
	demo := fixture.Path(t, "demo")
	wrapper := fmt.Sprintf(`#!/bin/sh
export SLURM_MIG_STATE=%s/devices.json
sub=$1; shift
case $sub in
gen|diff) exec %s --root %s/root $sub --from %s/snapshot.json ${NODE:+--node-name "$NODE"} "$@" ;;
esac
exec %s $sub "$@"
`, dir, bin, demo, demo, bin)
	if err := os.WriteFile(s.bin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// localize rewrites a playbook's paths into the sandbox, and fails the
// test if one of this machine's live paths is left in a task.
func (s *ansibleSandbox) localize(yml string) string {
	out := strings.NewReplacer(slurmMigPath, s.bin, "/etc/slurm", s.etc).Replace(yml)
	for _, line := range strings.Split(out, "\n") {
		if task, _, _ := strings.Cut(line, "#"); regexp.MustCompile(`(^|[\s\[",])/(etc|run|var|usr)/`).MatchString(task) {
			s.t.Fatalf("the playbook still names a live path after the sandbox's rewrite: %s", line)
		}
	}
	return out
}

// play runs ansible-playbook with extra args and returns its output and
// whether it succeeded.
func (s *ansibleSandbox) play(inventory, playbook string, args ...string) (string, bool) {
	s.t.Helper()
	cmd := exec.Command(s.ansible, append([]string{"-i", inventory, playbook}, args...)...)
	cmd.Dir = s.dir
	home := filepath.Join(s.dir, "home")
	os.MkdirAll(home, 0o700)
	cmd.Env = append(os.Environ(), "HOME="+home, "ANSIBLE_LOCAL_TEMP="+filepath.Join(home, "tmp"), "ANSIBLE_REMOTE_TEMP="+filepath.Join(home, "rtmp"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3", "ANSIBLE_HOST_KEY_CHECKING=0",
		"SLURM_MIG_STATE="+filepath.Join(s.dir, "devices.json"))
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func (s *ansibleSandbox) restarts() string {
	data, _ := os.ReadFile(s.log)
	return string(data)
}

// demoGres is the demo node's Gres= (what gen reports for it), with
// count 1g.10gb devices in place of its 7.
func demoGres(oneG int) string {
	return fmt.Sprintf("gpu:a100:1,gpu:a100_1g.10gb:%d,gpu:a100_1c.3g.40gb:1,gpu:a100_2c.3g.40gb:1,gpu:a100_3g.40gb:1,gpu:a100_2g.20gb:2,gpu:a100_1g.10gb+me:1", oneG)
}

// nodePlay wraps scripts/ansible/slurm-mig.yml as its header says to use
// it: import_tasks in a play with a "restart slurmd" handler.
func (s *ansibleSandbox) nodePlay() string {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(fixture.Root(s.t), "scripts/ansible/slurm-mig.yml"))
	if err != nil {
		s.t.Fatal(err)
	}
	mustWrite(s.t, filepath.Join(s.dir, "tasks.yml"), s.localize(string(data)))
	play := fmt.Sprintf(`- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.import_tasks: tasks.yml
  handlers:
    - name: restart slurmd
      ansible.builtin.shell: echo slurmd >> %s
`, s.log)
	path := filepath.Join(s.dir, "play.yml")
	mustWrite(s.t, path, play)
	mustWrite(s.t, filepath.Join(s.dir, "inventory"), "gpu-demo01 ansible_connection=local\n")
	return path
}

// TestAnsibleDrainCheckBeforeWrite: slurm-mig.yml says it "fail[s]
// early when slurm.conf declares more GRES than the node has (the node
// would drain)". It did fail, but only after its first task had already
// replaced /etc/slurm/gres.conf with the layout that drains the node, and
// notified "restart slurmd". A failed task stops the host's play before
// the handlers run; and when the admin fixed slurm.conf and ran the play
// again, gen found gres.conf already as it would write it, notified
// nothing, and slurmd was never restarted: it kept running with the
// gres.conf of before, while the file on disk was another. The drain
// check now runs first (diff reads the node, not the file), so a failing
// check leaves gres.conf as it was, and a later passing run writes it
// and restarts slurmd.
func TestAnsibleDrainCheckBeforeWrite(t *testing.T) {
	s := newAnsibleSandbox(t)
	playbook := s.nodePlay()
	inventory := filepath.Join(s.dir, "inventory")
	gres := filepath.Join(s.etc, "gres.conf")

	// slurm.conf declares eight 1g.10gb devices; the node has seven.
	mustWrite(t, filepath.Join(s.etc, "slurm.conf"), "ClusterName=c\nNodeName=gpu-demo01 Gres="+demoGres(8)+"\n")
	out, ok := s.play(inventory, playbook)
	if ok {
		t.Fatalf("the play passed where slurm.conf declares more than the node has:\n%s", out)
	}
	if !strings.Contains(out, `\"drains\": true`) {
		t.Fatalf("the play failed, but not on the drain check:\n%s", out)
	}
	if _, err := os.Stat(gres); err == nil {
		data, _ := os.ReadFile(gres)
		t.Errorf("the drain check failed, yet the play had already written %s (%d lines): the node drains at slurmd's next start", gres, strings.Count(string(data), "\n"))
	}

	// The admin fixes slurm.conf and runs the play again.
	mustWrite(t, filepath.Join(s.etc, "slurm.conf"), "ClusterName=c\nNodeName=gpu-demo01 Gres="+demoGres(7)+"\n")
	out, ok = s.play(inventory, playbook)
	if !ok {
		t.Fatalf("the play failed with slurm.conf fixed:\n%s", out)
	}
	if _, err := os.Stat(gres); err != nil {
		t.Fatalf("no gres.conf after a passing run: %v", err)
	}
	if got := s.restarts(); !strings.Contains(got, "slurmd") {
		t.Errorf("gres.conf is new since slurmd last started, and two runs later slurmd was never restarted (restarts: %q); second run:\n%s", got, out)
	}
}

// TestAnsibleCheckModeRunsDrainCheck: `ansible-playbook --check` is
// how an admin previews a run. The drain check of slurm-mig.yml is a
// read-only command, but it had no `check_mode: false`, so Ansible
// skipped it in check mode: the preview was green ("skipped=2,
// failed=0") on a node whose real run fails the drain check. It now
// runs in check mode too, and the preview fails as the real run does.
func TestAnsibleCheckModeRunsDrainCheck(t *testing.T) {
	s := newAnsibleSandbox(t)
	playbook := s.nodePlay()
	inventory := filepath.Join(s.dir, "inventory")
	mustWrite(t, filepath.Join(s.etc, "slurm.conf"), "ClusterName=c\nNodeName=gpu-demo01 Gres="+demoGres(8)+"\n")
	out, ok := s.play(inventory, playbook, "--check")
	if ok {
		t.Errorf("ansible-playbook --check passed on a node whose real run fails the drain check (slurm.conf declares 8 a100_1g.10gb, the node has 7):\n%s", out)
	}
}

// fleetSandbox writes scripts/ansible/slurm-mig-fleet.yml into the
// sandbox: each GPU node's gen runs the wrapper with NODE set to its
// inventory name (the play's only addition), and the service restarts
// are logged instead.
func (s *ansibleSandbox) fleetPlay() (playbook, inventory string) {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(fixture.Root(s.t), "scripts/ansible/slurm-mig-fleet.yml"))
	if err != nil {
		s.t.Fatal(err)
	}
	yml := s.localize(string(data))
	yml = strings.ReplaceAll(yml, "  hosts: gpu_nodes\n", "  hosts: gpu_nodes\n  environment: {NODE: \"{{ inventory_hostname }}\"}\n")
	for _, svc := range []string{"slurmctld", "slurmd"} {
		from := "ansible.builtin.service:\n        name: " + svc + "\n        state: restarted"
		if !strings.Contains(yml, from) {
			s.t.Fatalf("the fleet playbook no longer restarts %s with\n%s", svc, from)
		}
		yml = strings.ReplaceAll(yml, from, fmt.Sprintf("ansible.builtin.shell: echo %s {{ inventory_hostname }} >> %s", svc, s.log))
	}
	playbook = filepath.Join(s.dir, "fleet.yml")
	mustWrite(s.t, playbook, yml)
	inventory = filepath.Join(s.dir, "inventory")
	mustWrite(s.t, inventory, "[gpu_nodes]\ngpu01 ansible_connection=local\ngpu02 ansible_connection=local\n[slurm_controller]\nctl ansible_connection=local\n")
	return playbook, inventory
}

// TestFleetCheckModeChangesNothing: on a fleet whose files are up
// to date, `ansible-playbook --check --diff slurm-mig-fleet.yml` (the
// usual preview) reported every node's fragment as changed, and its diff
// showed each one emptied: check mode skipped the gen task, so
// hostvars[node].slurm_mig_gen.stdout was "" and the copy task previewed
// writing "\n" over /etc/slurm/fleet/<node>.conf. gen without -o only
// prints, so it now runs in check mode, and the preview of an up-to-date
// fleet shows no change.
func TestFleetCheckModeChangesNothing(t *testing.T) {
	s := newAnsibleSandbox(t)
	playbook, inventory := s.fleetPlay()
	if out, ok := s.play(inventory, playbook); !ok {
		t.Fatalf("first run:\n%s", out)
	}
	if out, ok := s.play(inventory, playbook); !ok || !regexp.MustCompile(`ctl\s+: ok=\d+\s+changed=0 `).MatchString(out) {
		t.Fatalf("second run is not a no-op on the controller:\n%s", out)
	}
	os.Remove(s.log)
	out, ok := s.play(inventory, playbook, "--check", "--diff")
	if !ok {
		t.Fatalf("--check run failed:\n%s", out)
	}
	if m := regexp.MustCompile(`ctl\s+: ok=\d+\s+changed=(\d+) `).FindStringSubmatch(out); m == nil || m[1] != "0" {
		t.Errorf("--check --diff on an up-to-date fleet previews changes on the controller (%v):\n%s", m, recap(out))
	}
	if strings.Contains(out, "-NodeName=gpu01 Name=gpu") && !strings.Contains(out, "+NodeName=gpu01 Name=gpu") {
		t.Errorf("--check --diff previews gpu01's fragment losing every gres.conf line:\n%s", firstLines(out[strings.Index(out, "TASK [Keep each"):], 8))
	}
	for _, node := range []string{"gpu01", "gpu02"} {
		data, err := os.ReadFile(filepath.Join(s.etc, "fleet", node+".conf"))
		if err != nil || !strings.Contains(string(data), "NodeName="+node+" Name=gpu") {
			t.Fatalf("check mode changed %s's fragment: %v %q", node, err, data)
		}
	}
}

// recap is the PLAY RECAP of ansible-playbook's output.
func recap(out string) string {
	if i := strings.Index(out, "PLAY RECAP"); i >= 0 {
		return out[i:]
	}
	return out
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
