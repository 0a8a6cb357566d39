package slurmtest

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// otherGres is a GRES of no plugin, counted from slurm.conf alone
// (gres.conf(5): a GRES slurm.conf fully describes needs no gres.conf
// line), so gen and merge, which write gpu lines only, need not keep one.
const otherGres = "bandwidth:4"

// TestRepartitionOtherGres: gpu01's slurm.conf line carries another GRES
// beside its MIG gpus. The script and the playbook compare only the gpu
// items of slurmctld's Gres= with the plan: each must resume gpu01 with
// the new layout's gpu counts and the other GRES kept, in slurm.conf and
// in slurmctld, and leave gpu02 as it was.
func TestRepartitionOtherGres(t *testing.T) {
	start := func(t *testing.T, ansible bool) *repartition { return startRepartitionGres(t, ansible, otherGres) }
	bothDriversOn(t, start, func(t *testing.T, r *repartition, ansible bool) {
		wantB := strings.TrimSpace(runSlurmMig(t, "node", "--root", r.devDir, "--from", r.b, "--node-name", "gpu01"))
		st := r.waitNodeNamed("gpu01", registered, "to register")
		if _, others := splitGres(st.gres); !slices.Equal(others, []string{otherGres}) {
			t.Fatalf("before the run, gpu01 has Gres=%s, want %s beside its gpus\n%s", st.gres, otherGres, r.daemonLogs())
		}
		confs := r.slurmConfs()
		before02 := r.waitNodeNamed("gpu02", registered, "to register")
		line02 := nodeConfLine(t, confs[0], "gpu02")

		var d driver = scriptDriver
		if ansible {
			d = ansibleDriver
		}
		c := d(r, t)
		out, err := c.CombinedOutput()
		t.Logf("%s:\n%s", c.Path, out)
		if err != nil {
			t.Fatalf("%v\n%s", err, r.daemonLogs())
		}

		was := st.gres
		st = r.waitNodeNamed("gpu01", func(n nodeState) bool { return n.state == "IDLE" }, "IDLE")
		t.Logf("gpu01: Gres=%s, then %s Gres=%s", was, st.state, st.gres)
		gpus, others := splitGres(st.gres)
		if !maps.Equal(nodeLineCounts(t, "NodeName=gpu01 Gres="+gpus), nodeLineCounts(t, wantB)) || !slices.Equal(others, []string{otherGres}) {
			t.Errorf("gpu01: Gres=%s, want B's %s and %s", st.gres, wantB, otherGres)
		}
		for _, conf := range confs {
			line := nodeConfLine(t, conf, "gpu01")
			gpus, others := splitGres(field(line, "Gres"))
			if !maps.Equal(nodeLineCounts(t, "NodeName=gpu01 Gres="+gpus), nodeLineCounts(t, wantB)) || !slices.Equal(others, []string{otherGres}) {
				t.Errorf("%s: %s, want B's %s and %s", conf, line, wantB, otherGres)
			}
			if got := nodeConfLine(t, conf, "gpu02"); got != line02 {
				t.Errorf("%s: gpu02's line changed: %s, was %s", conf, got, line02)
			}
		}
		after02 := r.waitNodeNamed("gpu02", registered, "to register")
		if after02.state != "IDLE" || after02.gres != before02.gres {
			t.Errorf("gpu02 changed: %s Gres=%s, was %s Gres=%s", after02.state, after02.gres, before02.state, before02.gres)
		}
		// A job asks for both GRES of gpu01's new line.
		if out, err := r.command(context.Background(), "srun", "-w", "gpu01", "-N1", "-n1", "--gres=gpu:h100_3g.40gb:1,bandwidth:1", "true").CombinedOutput(); err != nil {
			t.Errorf("srun -w gpu01 --gres=gpu:h100_3g.40gb:1,bandwidth:1: %v\n%s", err, out)
		}
	})
}

// slurmConfs are the cluster's slurm.conf files that hold gpu01's line:
// the controller's first, then each node's copy (classic) or what gpu01's
// slurmd fetched (configless).
func (r *repartition) slurmConfs() []string {
	confs := []string{filepath.Join(r.dir, "slurm.conf")}
	if r.configless {
		return append(confs, filepath.Join(r.dir, "spool-gpu01", "conf-cache", "slurm.conf"))
	}
	return append(confs, r.nodeConf["gpu01"], r.nodeConf["gpu02"])
}

// nodeConfLine is node's NodeName= line in the slurm.conf at path.
func nodeConfLine(t *testing.T, path, node string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "NodeName="+node+" ") {
			return line
		}
	}
	t.Fatalf("%s has no line for %s", path, node)
	return ""
}

// splitGres splits a Gres= list into its gpu items, joined again, and the
// others, without scontrol's socket affinity "(S:0)".
func splitGres(gres string) (gpus string, others []string) {
	var g []string
	for _, item := range strings.Split(regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(gres, ""), ",") {
		if item == "gpu" || strings.HasPrefix(item, "gpu:") {
			g = append(g, item)
		} else if item != "" {
			others = append(others, item)
		}
	}
	return strings.Join(g, ","), others
}
