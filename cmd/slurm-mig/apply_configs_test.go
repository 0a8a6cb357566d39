package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyWayBackOutsideConfigs: the docs' own command line
// lists the MIG layouts nodes may take (--configs
// all-1g.10gb,all-3g.40gb,all-balanced), and a fleet starts as whole GPUs
// (all-disabled, a config of the same file). The dry run proposes gpu01 ->
// all-1g.10gb (exit 1), but --apply skipped it, every run, saying "its
// layout now is no config of the file: no way back" -- false: all-disabled
// is in the file; rebalance only looked among --configs for the way back.
// The run exited 0 and the jobs waited for ever. The way back is now any
// config of the file with the node's counts.
func TestApplyWayBackOutsideConfigs(t *testing.T) {
	r := newApplyRig(t, "gpu01")
	code, stdout, stderr := r.run(r.args("--configs", "all-1g.10gb,all-3g.40gb"))
	if !strings.Contains(r.calls(), "change NODE=gpu01 SELECT=all-1g.10gb") || r.get("gpu01", "gres") != "gpu:h100_1g.10gb:7" {
		t.Errorf("--configs all-1g.10gb,all-3g.40gb on a whole-GPU node (all-disabled is in %s): exit %d, gpu01 not changed\nstdout:\n%sstderr:\n%s",
			filepath.Base(r.migConfig), code, stdout, stderr)
	}
	if strings.Contains(stdout, "no config of the file") {
		t.Errorf("the skip says the node's layout is no config of the file, but all-disabled is one: %s", stdout)
	}
}
