package testtools

import "testing"

func TestInCI(t *testing.T) {
	for value, want := range map[string]bool{"": false, "false": false, "true": true, "1": true} {
		t.Setenv("CI", value)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v, want %v", value, got, want)
		}
	}
}

func TestRequireFindsCommand(t *testing.T) {
	if path := Require(t, "coreutils", "ls"); path == "" {
		t.Error("no path for ls")
	}
}

// A missing command skips outside CI; in CI the test fails instead (not
// run here: it would fail this test).
func TestRequireSkipsOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	ran := make(chan bool, 1)
	t.Run("missing", func(t *testing.T) {
		defer func() { ran <- t.Skipped() }()
		Require(t, "nothing", "slurm-mig-no-such-command")
	})
	if skipped := <-ran; !skipped {
		t.Error("a missing command did not skip the test outside CI")
	}
}
