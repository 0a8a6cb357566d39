package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// scripts/repartition/repartition.sh run against stand-ins, without
// Slurm: scontrol keeps gpu01's State=, Reason=, Gres= and
// SlurmdStartTime= in files and prints them as 24.11's scontrol show
// node -o does; squeue filters a job list as Slurm's squeue -t does
// (src/squeue/print.c, _filter_job: a base state matches a job whose
// whole state is that state, a flag state one that carries it); slurm-mig
// plans all-balanced and, like node --update, keeps every other GRES of
// slurm.conf's line; the daemons' commands write files.
type stubNode struct {
	t   *testing.T
	dir string
	env []string
}

const stubScontrol = `#!/bin/sh
S=@S@
echo "scontrol $*" >> $S/log
case $1 in
show)
  n=$(cat $S/show_fail 2>/dev/null || echo 0)
  if [ "$n" -gt 0 ]; then echo $((n-1)) > $S/show_fail; echo "slurm_load_node error: Socket timed out on send/recv operation" >&2; exit 1; fi
  r=$(cat $S/reason)
  printf 'NodeName=gpu01 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.50 AvailableFeatures=(null) ActiveFeatures=(null) Gres=%s NodeAddr=gpu01 NodeHostName=gpu01 Version=24.11.5 OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)  RealMemory=1 AllocMem=0 FreeMem=1000 Sockets=1 Boards=1 State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  BootTime=2026-11-23T12:12:17 SlurmdStartTime=%s LastBusyTime=Unknown ResumeAfterTime=None CfgTRES=cpu=2,mem=1M,billing=2 AllocTRES= CurrentWatts=0 AveWatts=0%s\n' "$(cat $S/gres)" "$(cat $S/state)" "$(cat $S/start)" "${r:+ Reason=$r}"
  ;;
update)
  shift; st= rs=
  for a; do case $a in State=*) st=${a#State=};; Reason=*) rs=${a#Reason=};; esac; done
  case $st in
  DRAIN) case $(cat $S/state) in *DRAIN*) ;; *) echo IDLE+DRAIN > $S/state;; esac; echo "$rs [root@2026-11-23T13:20:09]" > $S/reason;;
  RESUME) echo IDLE > $S/state; : > $S/reason;;
  esac ;;
ping)
  # Slurm 20.11's scontrol ping says DOWN and exits 0 (_ping_slurmctld
  # sets no exit_code); 22.05 on exit 1.
  if [ "$(date +%s)" -lt "$(cat $S/ctld_up 2>/dev/null || echo 0)" ]; then
    echo "Slurmctld(primary) at ctl is DOWN"; exit $(cat $S/ping_down_rc 2>/dev/null || echo 1)
  fi
  echo "Slurmctld(primary) at ctl is UP" ;;
reconfigure)
  if [ "$(date +%s)" -lt "$(cat $S/ctld_up 2>/dev/null || echo 0)" ]; then
    echo "slurm_reconfigure error: Unable to contact slurm controller (connect failure)" >&2; exit 1
  fi ;;
esac
`

const stubSqueue = `#!/bin/sh
S=@S@
echo "squeue $*" >> $S/log
states=
while [ $# -gt 0 ]; do case $1 in -t) states=$2; shift;; esac; shift; done
[ -e $S/jobs ] || exit 0
while read -r id st; do
  old=$IFS; IFS=,; for want in $states; do
    case $want in
    COMPLETING|CONFIGURING|RESIZING|SIGNALING|STAGE_OUT) case +$st+ in *+$want+*) echo $id; break;; esac;;
    *) [ "$st" = "$want" ] && { echo $id; break; };;
    esac
  done; IFS=$old
done < $S/jobs
`

const stubSlurmMig = `#!/bin/sh
S=@S@
echo "slurm-mig $*" >> $S/log
case $1 in
plan) echo "NodeName=gpu01 Gres=gpu:h100_3g.40gb:1,gpu:h100_2g.20gb:1,gpu:h100_1g.10gb:2" ;;
node)
  upd=; while [ $# -gt 0 ]; do case $1 in --update) upd=$2; shift;; esac; shift; done
  if [ -n "$upd" ]; then
    echo "$(cat $S/layout)$(cat $S/extra)" > $S/conf_gres
    echo "NodeName=gpu01 CPUs=2 Gres=$(cat $S/conf_gres) State=UNKNOWN" > "$upd"
  else echo "NodeName=gpu01 Gres=$(cat $S/layout)"; fi ;;
esac
`

func newStubNode(t *testing.T) *stubNode {
	t.Helper()
	s := &stubNode{t: t, dir: t.TempDir()}
	for name, text := range map[string]string{"scontrol": stubScontrol, "squeue": stubSqueue, "slurm-mig": stubSlurmMig} {
		s.write(name, strings.ReplaceAll(text, "@S@", s.dir), 0o755)
	}
	for name, text := range map[string]string{
		"state": "IDLE", "reason": "", "extra": "", "layout": "gpu:h100_1g.10gb:7",
		"start": "2026-11-23T12:20:00", "gres": "gpu:h100_1g.10gb:7(S:0)", "conf_gres": "gpu:h100_1g.10gb:7",
		"slurm.conf": "NodeName=gpu01 CPUs=2 Gres=gpu:h100_1g.10gb:7 State=UNKNOWN", "log": "", "slurmd": "running",
	} {
		s.write(name, text+"\n", 0o644)
	}
	d := s.dir
	s.env = []string{"PATH=" + os.Getenv("PATH"), "NODE=gpu01", "MIG_CONFIG=" + d + "/config.yaml", "SELECT=all-balanced",
		"SLURM_MIG=" + d + "/slurm-mig", "SCONTROL=" + d + "/scontrol", "SQUEUE=" + d + "/squeue",
		"SLURM_CONF=" + d + "/slurm.conf", "GRES_CONF=" + d + "/gres.conf", "LOCK=" + d + "/lock", "TIMEOUT=3",
		"APPLY=echo gpu:h100_1g.10gb:2,gpu:h100_2g.20gb:1,gpu:h100_3g.40gb:1 > " + d + "/layout",
		"SLURMD_STOP=echo stopped > " + d + "/slurmd", "HOLDERS=true",
		"SLURMD_START=echo running > " + d + "/slurmd; date -u +%Y-%m-%dT%H:%M:%S > " + d + "/start",
		"SLURMCTLD_RESTART=sed 's/\\(gpu:[^,]*\\)/\\1(S:0)/g' " + d + "/conf_gres > " + d + "/gres",
	}
	return s
}

func (s *stubNode) write(name, text string, mode os.FileMode) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte(text), mode); err != nil {
		s.t.Fatal(err)
	}
}

func (s *stubNode) read(name string) string {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// run runs the script (or script, a copy of it) with the stubs' variables
// and env after them.
func (s *stubNode) run(script string, env ...string) (string, error) {
	s.t.Helper()
	if script == "" {
		script = filepath.Join(fixture.Root(s.t), "scripts/repartition/repartition.sh")
	}
	cmd := exec.Command(script)
	cmd.Env, cmd.Dir = append(append([]string(nil), s.env...), env...), s.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s *stubNode) node() string {
	return fmt.Sprintf("State=%s Reason=%q slurmd %s", s.read("state"), s.read("reason"), s.read("slurmd"))
}

// The stand-ins as they are: the change is made and the node resumed.
func TestRepartitionStubsBaseline(t *testing.T) {
	s := newStubNode(t)
	out, err := s.run("")
	if err != nil || s.read("state") != "IDLE" || s.read("slurmd") != "running" {
		t.Fatalf("%v: %s\n%s", err, s.node(), out)
	}
}

// slurm-mig node --update keeps every other GRES of the node's line (nic,
// shard, mps, ...), so slurmctld's Gres= holds them beside the gpu items
// plan gives: the script compares the gpu items only, as the controller does.
func TestRepartitionOtherGresIsResumed(t *testing.T) {
	s := newStubNode(t)
	s.write("extra", ",nic:1\n", 0o644)
	s.write("gres", "gpu:h100_1g.10gb:7(S:0),nic:1\n", 0o644)
	s.write("conf_gres", "gpu:h100_1g.10gb:7,nic:1\n", 0o644)
	out, err := s.run("")
	if err != nil || s.read("state") != "IDLE" {
		t.Fatalf("a node with Gres=...,nic:1 changed as planned is not resumed: %v: %s\n%s", err, s.node(), out)
	}
}

// A scontrol show node that fails before the drain (slurmctld busy) stops
// the script: it is not read as a node not drained, whose admin's drain the
// script would overwrite and at the end lift.
func TestRepartitionShowFailureKeepsAnotherDrain(t *testing.T) {
	s := newStubNode(t)
	s.write("state", "IDLE+DRAIN\n", 0o644)
	s.write("reason", "bad fan [admin@2026-11-23T09:00:00]\n", 0o644)
	s.write("show_fail", "1\n", 0o644)
	out, _ := s.run("")
	if !strings.HasPrefix(s.read("reason"), "bad fan") || !strings.Contains(s.read("state"), "DRAIN") {
		t.Fatalf("the admin's drain is lost after one failed scontrol show: %s\n%s", s.node(), out)
	}
}

// A copy of slurm.conf that cannot be written (an NFS export down, a typo)
// stops the script with the node drained, slurmd stopped: no slurmd starts
// on an old slurm.conf.
func TestRepartitionCopyFailureStops(t *testing.T) {
	s := newStubNode(t)
	out, err := s.run("", "SLURM_CONF_COPIES="+filepath.Join(s.dir, "no-such-dir", "slurm.conf"))
	if err == nil || s.read("state") == "IDLE" {
		t.Fatalf("a slurm.conf copy that failed is ignored: exit %v, %s\n%s", err, s.node(), out)
	}
}

// A job whose PrologSlurmctld runs, or whose nodes boot, is RUNNING with the
// CONFIGURING flag, which squeue -t lists only when named: the script waits
// for it rather than change the layout under a job about to start.
func TestRepartitionWaitsForConfiguringJob(t *testing.T) {
	s := newStubNode(t)
	s.write("jobs", "4242 RUNNING+CONFIGURING\n", 0o644)
	out, _ := s.run("", "TIMEOUT=2")
	if s.read("slurmd") != "running" || s.read("layout") != "gpu:h100_1g.10gb:7" {
		t.Fatalf("the layout changed under job 4242 (CONFIGURING): %s, layout %s\n%s", s.node(), s.read("layout"), out)
	}
}

// Slurm 20.11's scontrol ping exits 0 with slurmctld DOWN: the script waits
// for "is UP" before the reconfigure, which a slurmctld still loading its
// state would refuse.
func TestRepartitionWaitsForSlurmctld2011(t *testing.T) {
	s := newStubNode(t)
	s.write("ping_down_rc", "0\n", 0o644)
	restart := "SLURMCTLD_RESTART=sed 's/\\(gpu:[^,]*\\)/\\1(S:0)/g' " + s.dir + "/conf_gres > " + s.dir + "/gres; echo $(($(date +%s)+3)) > " + s.dir + "/ctld_up"
	out, err := s.run("", "TIMEOUT=30", restart)
	if err != nil || s.read("state") != "IDLE" {
		t.Fatalf("the script did not wait for slurmctld: %v: %s\n%s", err, s.node(), out)
	}
}

// Without APPLY, mig-parted gets the config's path and name as one word
// each, blanks and all. The script's copy here runs a stand-in for
// /usr/bin/nvidia-mig-parted.
func TestRepartitionApplyQuotesSelect(t *testing.T) {
	s := newStubNode(t)
	data, err := os.ReadFile(filepath.Join(fixture.Root(t), "scripts/repartition/repartition.sh"))
	if err != nil {
		t.Fatal(err)
	}
	s.write("nvidia-mig-parted", "#!/bin/sh\nfor a; do echo \"<$a>\"; done > "+s.dir+"/argv\n", 0o755)
	s.write("repartition.sh", strings.ReplaceAll(string(data), "/usr/bin/nvidia-mig-parted", s.dir+"/nvidia-mig-parted"), 0o755)
	env := []string{"SELECT=all balanced", "MIG_CONFIG=" + s.dir + "/mig config.yaml"}
	for i, e := range s.env {
		if strings.HasPrefix(e, "APPLY=") {
			s.env = append(s.env[:i], s.env[i+1:]...)
			break
		}
	}
	out, _ := s.run(filepath.Join(s.dir, "repartition.sh"), env...)
	want := "<apply>\n<-f>\n<" + s.dir + "/mig config.yaml>\n<-c>\n<all balanced>"
	if got := s.read("argv"); got != want {
		t.Fatalf("mig-parted ran with\n%s\nwant\n%s\n%s", got, want, out)
	}
}

// A step that exits 75 (EX_TEMPFAIL) is not taken for flock's -E 75: the
// script does not say "nothing done" of a node it drained.
func TestRepartitionOwnFailureIsNotLockBusy(t *testing.T) {
	s := newStubNode(t)
	out, _ := s.run("", "APPLY=echo mig-parted failed >&2; exit 75")
	if strings.Contains(out, "nothing done") {
		t.Fatalf("a failure after the drain is reported as a busy lock (%s):\n%s", s.node(), out)
	}
}

// A rerun after a failure that left slurmd stopped (the controller's
// rollback) finds the node DOWN, drained for the repartition, no job on it:
// the wait for jobs is over at once, and the run goes through.
func TestRepartitionRerunOnDownNode(t *testing.T) {
	s := newStubNode(t)
	s.write("state", "DOWN+DRAIN+NOT_RESPONDING\n", 0o644)
	s.write("reason", "slurm-mig repartition to all-balanced [root@2026-11-23T13:20:09]\n", 0o644)
	s.write("slurmd", "stopped\n", 0o644)
	out, err := s.run("", "TIMEOUT=2")
	if err != nil || s.read("state") != "IDLE" || s.read("slurmd") != "running" {
		t.Fatalf("a rerun on a DOWN node: %v: %s\n%s", err, s.node(), out)
	}
}
