package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCount(t *testing.T) {
	events := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"ok\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestB/x"}
{"Action":"output","Package":"p","Test":"TestB/y","Output":"slurmd -G: error: gpu duplicate device file name\n"}
{"Action":"fail","Package":"p","Test":"TestB/y"}
{"Action":"skip","Package":"p","Test":"TestB/z"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestC/x"}
{"Action":"fail","Package":"p","Test":"TestC"}
{"Action":"pass","Package":"p","Test":"TestD/x/1"}
{"Action":"pass","Package":"p","Test":"TestD/x"}
{"Action":"pass","Package":"p","Test":"TestD"}
{"Action":"fail","Package":"p"}
# q [q.test]
q/x_test.go:1:1: undefined: y
{"Action":"fail","Package":"q"}
{"Action":"pass","Package":"r","Test":"TestE"}
{"Action":"pass","Package":"r"}
`
	got, err := Count(strings.NewReader(events))
	if err != nil {
		t.Fatal(err)
	}
	if got.Passed != 5 { // TestA, TestB/x, TestC/x, TestD/x/1, TestE
		t.Errorf("passed %d, want 5", got.Passed)
	}
	want := []string{"p TestB/y", "p TestB/z (skipped)", "p TestC", "q (the package failed: build, TestMain or a panic)"}
	if diff := cmp.Diff(want, got.Failed); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Output["p TestB/y"], "duplicate device file name") {
		t.Errorf("output of TestB/y: %q", got.Output["p TestB/y"])
	}
	if diff := cmp.Diff([]string{"# q [q.test]", "q/x_test.go:1:1: undefined: y"}, got.NonEvent); diff != "" {
		t.Errorf("lines not events (-want +got):\n%s", diff)
	}
}
