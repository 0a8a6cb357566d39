package main

import (
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestHardwareNameBudget (issue 34): plan's --hardware hostlists count
// against the run's budget of names, which --assign's share: the second
// of two quarter-million-name hostlists is refused, in one line, before
// its snapshot is read.
func TestHardwareNameBudget(t *testing.T) {
	names := slurmconf.NewNameBudget()
	if _, err := names.Expand("a[0-65535]x[0-3]"); err != nil { // as --assign's file would
		t.Fatal(err)
	}
	_, err := readHardware([]string{"n[0-65535]x[0-3]=no-such-snapshot.json"}, names)
	if err == nil || !strings.Contains(err.Error(), "that all of a run's hostlists may name") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v; want one line refusing the run's names", err)
	}
}
