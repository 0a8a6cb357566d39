package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/alecthomas/kong"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

func TestReadsNVML(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"gen"}, true},
		{[]string{"--root", "/x", "gen", "--compact", "-o", "/etc/slurm/gres.conf"}, true},
		{[]string{"node", "--update", "/etc/slurm/slurm.conf"}, true},
		{[]string{"diff", "--running"}, true},
		{[]string{"list"}, true},
		{[]string{"snapshot"}, true},
		{[]string{"gen", "--from", "snap.json"}, false},
		{[]string{"gen", "--from=snap.json"}, false},
		{[]string{"diff", "--from", "snap.json", "--gres-conf", "g"}, false},
		{[]string{"gen", "--help"}, false},
		{[]string{"gen", "-h"}, false},
		{[]string{"--version"}, false},
		{[]string{}, false},
		{[]string{"--help"}, false},
		{[]string{"gen", "--", "--from"}, true}, // after --, nothing is a flag
		{[]string{"frobnicate"}, false},
		{[]string{"state"}, true},
		{[]string{"env"}, false}, // a TaskProlog: never NVML
		{[]string{"--root", "/x", "env", "--state", "/run/s.json"}, false},
		{[]string{"env", "--state", "gen"}, false}, // the command is the first word that names one
		{[]string{"merge", "list", "gen"}, false},
		{[]string{"plan", "--mig-config", "m.yaml", "--select", "x"}, true},
		{[]string{"plan", "--mig-config", "m.yaml", "--select", "x", "--assign", "a.txt", "snaps/"}, false}, // a fleet: snapshots only
		{[]string{"plan", "--assign=a.txt", "--hardware", "n[1-2]=s.json"}, false},
	} {
		if got := readsNVML(tc.args, cli{}); got != tc.want {
			t.Errorf("ReadsNVML(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestNVMLShutdownBeforeWaiting pins when NVML is shut down: once by every
// run that used it (cmd defers it), before a run writes a file or
// compares configs, never after a failed Init.
func TestNVMLShutdownBeforeWaiting(t *testing.T) {
	dir := t.TempDir()
	gresConf := filepath.Join(dir, "gres.conf")
	for _, tc := range []struct {
		name      string
		args      []string
		initError string
		wantCode  int
		want      int
	}{
		{"gen prints", []string{"gen"}, "", exitOK, 1},
		{"list prints", []string{"list"}, "", exitOK, 1},
		{"gen writes", []string{"gen", "-o", gresConf}, "", exitOK, 1},
		{"diff", []string{"diff", "--gres-conf", gresConf}, "", exitOK, 1}, // the file gen wrote
		{"init fails", []string{"gen", "-o", gresConf}, "ERROR_DRIVER_NOT_LOADED", exitError, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := synth.Fixture(2, 7)
			fake.InitError = tc.initError
			fakeLib, err := nvmlfake.New(fake)
			if err != nil {
				t.Fatal(err)
			}
			lib := &nvmlfake.ShutdownCounter{Interface: fakeLib}
			var stdout, stderr bytes.Buffer
			args := append([]string{"--root", fixture.Path(t, "demo/root")}, tc.args...)
			code := run(args, &env{stdout: &stdout, stderr: &stderr,
				newNVML: func() nvml.Interface { return lib }, hostname: func() (string, error) { return "n1", nil }})
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, stderr.String())
			}
			if lib.Shutdowns != tc.want {
				t.Errorf("nvmlShutdown called %d times, want %d", lib.Shutdowns, tc.want)
			}
		})
	}
}

// NVML starts early for the commands named by cli's nvml:"" tags: the
// names must be kong's, and a command without the tag (one that never
// reads NVML) does not start Init.
func TestReadsNVMLKnowsEveryCommand(t *testing.T) {
	parser, err := kong.New(&cli{}, (&env{}).app().Options...)
	if err != nil {
		t.Fatal(err)
	}
	tagged := 0
	for _, cmd := range parser.Model.Children {
		want := cmd.Tag.Has("nvml")
		if want {
			tagged++
		}
		if got := nvmlCommands(cli{})[cmd.Name]; got != want {
			t.Errorf("NVMLCommands(cli{})[%q] = %v, want %v (its nvml tag)", cmd.Name, got, want)
		}
	}
	if tagged == 0 {
		t.Error("no command is tagged nvml")
	}
}
