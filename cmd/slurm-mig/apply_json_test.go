package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestApplyJSONOutcomeListsAreLists: the docs say --json ends with
// {"outcome": {"done", "rolled_back", "abandoned", "failed", "waiting",
// "skipped"}}, node lists; the proposal's own --json writes an empty list
// as [] ("unserved": []). The outcome wrote null for each empty one, so
// an admin's `jq -r '.outcome.failed[]'` in a monitoring check failed
// with "Cannot iterate over null" on every healthy run.
func TestApplyJSONOutcomeListsAreLists(t *testing.T) {
	r := newApplyRig(t, "gpu01")
	code, stdout, stderr := r.run(r.args("--json"))
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var last struct {
		Outcome map[string]json.RawMessage `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Outcome == nil {
		t.Fatalf("exit %d: last line %q is no outcome: %v\n%s", code, lines[len(lines)-1], err, stderr)
	}
	for _, k := range []string{"done", "rolled_back", "abandoned", "failed", "waiting", "skipped"} {
		if v := strings.TrimSpace(string(last.Outcome[k])); !strings.HasPrefix(v, "[") {
			t.Errorf("outcome %q is %s, want a list ([] when none)", k, v)
		}
	}
}
