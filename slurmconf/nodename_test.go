package slurmconf

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/testtools"
)

// Names CheckNodeName accepts and refuses; the accepted ones are also put
// to scontrol below.
var (
	goodNodeNames = []string{"gpu01", "n1", "gpu-01", "gpu_01", "node01.cluster.test", "GPU01", "a", "x(1)", "n:1", "n+1", "n/1", "123"}
	badNodeNames  = []string{"", "gpu01#x", "gpu 01", "gpu\t01", "x=y", "n1,n2", "bad host,name", "n[1-2]", "n]", `"n1"`, "n'1", `n\1`, "n1\n", "nö", "DEFAULT", "default", "n\x00"}
)

func TestCheckNodeName(t *testing.T) {
	for _, name := range goodNodeNames {
		if err := CheckNodeName(name); err != nil {
			t.Errorf("CheckNodeName(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range badNodeNames {
		err := CheckNodeName(name)
		if err == nil {
			t.Errorf("CheckNodeName(%q) = nil, want an error", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || (name != "" && !strings.Contains(msg, "node name")) {
			t.Errorf("CheckNodeName(%q) = %q: want one line naming the node name", name, msg)
		}
	}
}

// TestNodeNamesMatchScontrol asks Slurm itself: every name CheckNodeName
// accepts is one name to `scontrol show hostnames`, and the refused
// hostlist-shaped ones are not.
func TestNodeNamesMatchScontrol(t *testing.T) {
	testtools.Require(t, testtools.SlurmPackages, "scontrol")
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=x\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostnames := func(expr string) []string {
		cmd := exec.Command("scontrol", "show", "hostnames", expr)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		out, err := cmd.Output()
		if err != nil {
			return nil
		}
		return strings.Fields(string(out))
	}
	for _, name := range goodNodeNames {
		if got := hostnames(name); len(got) != 1 || got[0] != name {
			t.Errorf("scontrol show hostnames %q = %q, want just the name", name, got)
		}
	}
	for _, name := range []string{"n1,n2", "bad host,name", "n[1-2]", "gpu 01"} {
		if got := hostnames(name); len(got) == 1 && got[0] == name {
			t.Errorf("scontrol show hostnames %q = %q: Slurm reads it as one name after all", name, got)
		}
	}
}
