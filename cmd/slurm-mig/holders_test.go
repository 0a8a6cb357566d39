package main

import (
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/gpuusers"
)

// holders prints a line's hint after it, as say prints an error's: the
// text is the line the admin has always read.
func TestHoldersPrintsTheHintAfterTheLine(t *testing.T) {
	var b strings.Builder
	if err := (holders(gpuusers.Report{Unreadable: 2})).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "the open files of 2 processes could not be read: run as root\n"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
}
