package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// TestEmptyValueRefused: a flag that names a file or directory refuses an
// empty name, as -o does: it is a script's unset variable (--from
// "$SNAPSHOT"), and taken for the flag's absence it would read NVML, the
// default gres.conf or state, or files under the current directory
// instead of what the script meant. So do the flags whose absence means
// a default (--node-name "$NODE" would name the node after this host).
// The refusal comes when parsing, before anything is read or written.
func TestEmptyValueRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--root", "", "list", "--from", "snap.json"}, "--root"},
		{[]string{"--root=", "gen", "--from", "snap.json"}, "--root"},
		{[]string{"gen", "--from", ""}, "--from"},
		{[]string{"gen", "--from="}, "--from"},
		{[]string{"node", "--from", ""}, "--from"},
		{[]string{"diff", "--from", ""}, "--from"},
		{[]string{"list", "--from", ""}, "--from"},
		{[]string{"state", "--from", ""}, "--from"},
		{[]string{"free", "--from", ""}, "--from"},
		{[]string{"exec", "--from", "", "--", "true"}, "--from"},
		{[]string{"env", "--from", ""}, "--from"},
		{[]string{"node", "--update", ""}, "--update"},
		{[]string{"diff", "--gres-conf", ""}, "--gres-conf"},
		{[]string{"diff", "--slurm-conf", ""}, "--slurm-conf"},
		{[]string{"diff", "--state", ""}, "--state"},
		{[]string{"gen", "--state", ""}, "--state"},
		{[]string{"node", "--state", ""}, "--state"},
		{[]string{"state", "--state", ""}, "--state"},
		{[]string{"env", "--state", ""}, "--state"},
		{[]string{"env", "--slurm-conf", ""}, "--slurm-conf"},
		{[]string{"env", "--gres-conf", ""}, "--gres-conf"},
		{[]string{"free", "--claims", ""}, "--claims"},
		{[]string{"gen", "--node-name", ""}, "--node-name"},
		{[]string{"node", "--node-name="}, "--node-name"},
		{[]string{"diff", "--node-name", ""}, "--node-name"},
		{[]string{"state", "--node-name", ""}, "--node-name"},
		{[]string{"gen", "--slurm-version", ""}, "--slurm-version"},
		{[]string{"gen", "--flags", ""}, "--flags"},
		{[]string{"free", "--profile", ""}, "--profile"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &env{stdout: &stdout, stderr: &stderr,
			newNVML:  func() nvml.Interface { return nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")) },
			hostname: func() (string, error) { return "n1", nil }})
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if want := "slurm-mig: " + tc.flag + ": the value is empty (an unset variable in a script?)"; code != exitError || len(lines) != 1 || !strings.HasPrefix(lines[0], want) || stdout.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line %s...", tc.args, code, stdout.String(), stderr.String(), want)
		}
	}
}
