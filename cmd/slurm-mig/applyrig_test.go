package main

// A hostile review of rebalance --apply's glue (apply.go, rebalance.go):
// each test below failed on the code it was written against, and says
// what an admin deploying the controller sees.
//
// The rig: slurmctld is a stub scontrol on PATH that keeps each node's
// State, Gres, Reason, CPUAlloc and SlurmdStartTime in files, the change
// command a stub that sets the Gres of the config it is given and a new
// SlurmdStartTime (as repartition.sh leaves a node), and the fleet one-H100
// nodes of the real H100's profile table (testdata/script/rebalance.txtar).

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

const reviewScontrol = `#!/bin/sh
d=$REVIEW_STUB
echo "scontrol $*" >>$d/calls
node=""
for a in "$@"; do case "$a" in NodeName=*) node=${a#NodeName=} ;; esac; done
case "$*" in
*"show node"*)
  for a in "$@"; do node=$a; done
  n=$d/nodes/$node
  [ -d "$n" ] || { echo "scontrol: error: Node $node not found" >&2; exit 1; }
  reason=$(cat $n/reason); r=""; [ -n "$reason" ] && r=" Reason=$reason [root@2026-11-29T08:00:00]"
  echo "NodeName=$node Arch=x86_64 CPUAlloc=$(cat $n/cpus) CPUTot=16 State=$(cat $n/state) Gres=$(cat $n/gres) SlurmdStartTime=$(cat $n/slurmd_start) Partitions=gpu$r" ;;
*"State=DRAIN"*)
  n=$d/nodes/$node
  if [ "$(cat $n/cpus)" = 0 ]; then echo IDLE+DRAIN >$n/state; else echo MIXED+DRAIN >$n/state; fi
  for a in "$@"; do case "$a" in Reason=*) echo "${a#Reason=}" >$n/reason ;; esac; done ;;
*"State=RESUME"*)
  n=$d/nodes/$node
  if [ "$(cat $n/cpus)" = 0 ]; then echo IDLE >$n/state; else echo MIXED >$n/state; fi
  : >$n/reason ;;
*) echo "stub scontrol: $*" >&2; exit 1 ;;
esac
`

const reviewChange = `#!/bin/sh
d=$REVIEW_STUB
echo "change NODE=$NODE SELECT=$SELECT MIG_CONFIG=$MIG_CONFIG" >>$d/calls
n=$d/nodes/$NODE
sleep 1 # slurmd's start time is to the second
case "$SELECT" in
all-1g.10gb) echo gpu:h100_1g.10gb:7 >$n/gres ;;
all-3g.40gb) echo gpu:h100_3g.40gb:2 >$n/gres ;;
all-disabled) echo gpu:h100:1 >$n/gres ;;
*) echo "stub change: no layout for $SELECT" ; exit 1 ;;
esac
TZ=UTC0 date +%FT%T >$n/slurmd_start
`

type applyRig struct {
	t                    *testing.T
	dir, stub, journal   string
	migConfig, snapshot  string
	changeCmd, queueFile string
	nodes                []string
}

// newApplyRig makes the stubs and a fleet of idle one-H100 nodes, whole
// GPUs (all-disabled), and a queue of the seven 1g.10gb jobs that have
// waited longest in rebalance.txtar's queue.
func newApplyRig(t *testing.T, nodes ...string) *applyRig {
	t.Helper()
	dir := t.TempDir()
	r := &applyRig{t: t, dir: dir, stub: filepath.Join(dir, "stub"), journal: filepath.Join(dir, "journal"), nodes: nodes}
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{bin, filepath.Join(r.stub, "nodes")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"scontrol": reviewScontrol, "change": reviewChange} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.changeCmd = filepath.Join(bin, "change")
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("REVIEW_STUB", r.stub)
	ar, err := txtar.ParseFile(fixture.Path(t, "script/rebalance.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var queue []string
	for _, f := range ar.Files {
		switch f.Name {
		case "gpu01.json":
			r.snapshot = filepath.Join(dir, "h100.json")
			mustWrite(t, r.snapshot, string(f.Data))
		case "mig.yaml":
			r.migConfig = filepath.Join(dir, "mig.yaml")
			mustWrite(t, r.migConfig, string(f.Data))
		case "q.txt":
			queue = strings.Split(string(f.Data), "\n")[:7]
		}
	}
	if r.snapshot == "" || r.migConfig == "" || len(queue) != 7 {
		t.Fatal("rebalance.txtar lacks gpu01.json, mig.yaml or q.txt")
	}
	r.queueFile = filepath.Join(dir, "queue.txt")
	mustWrite(t, r.queueFile, strings.Join(queue, "\n")+"\n")
	hourAgo := time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04:05")
	for _, n := range nodes {
		r.set(n, "state", "IDLE")
		r.set(n, "gres", "gpu:h100:1")
		r.set(n, "reason", "")
		r.set(n, "cpus", "0")
		r.set(n, "slurmd_start", hourAgo)
	}
	return r
}

func (r *applyRig) set(node, key, value string) {
	mustWrite(r.t, filepath.Join(r.stub, "nodes", node, key), value+"\n")
}

func (r *applyRig) get(node, key string) string {
	data, err := os.ReadFile(filepath.Join(r.stub, "nodes", node, key))
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// calls are the stubs' calls so far, a line each.
func (r *applyRig) calls() string {
	data, _ := os.ReadFile(filepath.Join(r.stub, "calls"))
	return string(data)
}

// nodesFile writes what `scontrol --details --oneliner show node` prints
// now, as the unit's ExecStart does before each run.
func (r *applyRig) nodesFile() string {
	var b strings.Builder
	for _, n := range r.nodes {
		gres := r.get(n, "gres")
		used := gres[:strings.LastIndex(gres, ":")] + ":0(IDX:N/A)"
		reason := ""
		if why := r.get(n, "reason"); why != "" {
			reason = " Reason=" + why + " [root@2026-11-29T08:00:00]"
		}
		fmt.Fprintf(&b, "NodeName=%s Arch=x86_64 CPUAlloc=%s CPUTot=16 Gres=%s State=%s GresDrain=N/A GresUsed=%s CfgTRES=cpu=16 AllocTRES=cpu=%s%s\n",
			n, r.get(n, "cpus"), gres, r.get(n, "state"), used, r.get(n, "cpus"), reason)
	}
	path := filepath.Join(r.dir, "nodes.txt")
	mustWrite(r.t, path, b.String())
	return path
}

// args are the unit's flags for one run (nodes.txt taken now), then extra.
func (r *applyRig) args(extra ...string) []string {
	return append([]string{"rebalance", "--apply", "--queue", r.queueFile, "--nodes", r.nodesFile(),
		"--mig-config", r.migConfig, "--journal", r.journal, "--change-command", r.changeCmd,
		"--now", "2026-11-24T10:00:00", "--hardware", hostlistOf(r.nodes) + "=" + r.snapshot}, extra...)
}

func hostlistOf(nodes []string) string {
	if len(nodes) == 1 {
		return nodes[0]
	}
	return strings.Join(nodes, ",")
}

func (r *applyRig) run(args []string) (int, string, string) {
	var out, errs bytes.Buffer
	code := run(args, &env{stdout: &out, stderr: &errs, newNVML: testNVML, hostname: testHostname})
	return code, out.String(), errs.String()
}

// TestApplyWithExplainRefused: an admin who added --explain to
// REBALANCE_FLAGS (to have the journal say why jobs wait) got a
// controller that never applied anything: --apply was silently dropped,
// the run exited 0 (the unit green), and the journal was not even
// opened, so its changes in progress were never finished. The pair is
// refused: exit 2, naming both.
func TestApplyWithExplainRefused(t *testing.T) {
	r := newApplyRig(t, "gpu01")
	code, stdout, stderr := r.run(r.args("--explain"))
	changed := strings.Contains(r.calls(), "change NODE=gpu01")
	if code != 2 || changed || !strings.Contains(stderr, "--explain cannot go with --apply") {
		t.Errorf("rebalance --apply --explain: exit 0, nothing applied (gpu01 still %s, Gres=%s), no journal made: %v\nstdout:\n%sstderr:\n%s",
			r.get("gpu01", "state"), r.get("gpu01", "gres"), dirExists(r.journal), stdout, stderr)
	}
}

func dirExists(path string) string {
	if _, err := os.Stat(path); err != nil {
		return "journal absent"
	}
	return "journal present"
}
