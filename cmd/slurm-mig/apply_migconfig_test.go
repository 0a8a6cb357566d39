package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyMigConfigIsAbsolute: the README's command line is
// `slurm-mig rebalance --apply --change-command 'ssh root@"$NODE" ...
// MIG_CONFIG="$MIG_CONFIG" .../repartition.sh' ... --mig-config
// config.yaml`. The change command was handed MIG_CONFIG=config.yaml as
// given, relative to the directory rebalance was started in on the
// controller; over ssh repartition.sh read it in root's home on the node:
// no such file (or another one), so the change and its rollback failed
// and the node stayed drained as failed. MIG_CONFIG is now absolute.
func TestApplyMigConfigIsAbsolute(t *testing.T) {
	r := newApplyRig(t, "gpu01")
	t.Chdir(r.dir)
	args := r.args()
	for i, a := range args {
		if a == r.migConfig {
			args[i] = filepath.Base(r.migConfig)
		}
	}
	r.run(args)
	var got string
	for _, l := range strings.Split(r.calls(), "\n") {
		if strings.HasPrefix(l, "change ") {
			got = l[strings.Index(l, "MIG_CONFIG=")+len("MIG_CONFIG="):]
			break
		}
	}
	if got == "" {
		t.Fatalf("the change command did not run:\n%s", r.calls())
	}
	if !filepath.IsAbs(got) {
		t.Errorf("--mig-config mig.yaml: the change command got MIG_CONFIG=%s, which ssh hands to the node as is, want %s", got, r.migConfig)
	}
}
