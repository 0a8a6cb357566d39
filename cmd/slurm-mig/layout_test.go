package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

const module = "github.com/slurm-mig/slurm-mig/"

// TestLayout holds the tree to the rules docs/layout.md states: the top
// level is cmd, capmap, gresgen and slurmconf; imports form at most eight
// levels; slurmconf runs no command; no shipped package outside internal/
// imports testing; and the TaskProlog's package does not link the NVML
// loader.
func TestLayout(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, "./...")
	cmd.Dir = fixture.Root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports, deps := map[string][]string{}, map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		pkg := strings.TrimPrefix(f[0], module)
		imports[pkg], deps[pkg] = strings.Fields(f[1]), strings.Fields(f[2])
	}

	var top []string
	for pkg := range imports {
		if first, _, _ := strings.Cut(pkg, "/"); first != "internal" && !slices.Contains(top, first) {
			top = append(top, first)
		}
	}
	slices.Sort(top)
	if want := []string{"capmap", "cmd", "gresgen", "slurmconf"}; !slices.Equal(top, want) {
		t.Errorf("top-level packages %v, want %v", top, want)
	}

	level := map[string]int{}
	var levelOf func(pkg string) int
	levelOf = func(pkg string) int {
		if l, ok := level[pkg]; ok {
			return l
		}
		l := 1
		for _, imp := range imports[pkg] {
			if ours, ok := strings.CutPrefix(imp, module); ok {
				l = max(l, levelOf(ours)+1)
			}
		}
		level[pkg] = l
		return l
	}
	for pkg := range imports {
		if l := levelOf(pkg); l > 8 && !strings.HasPrefix(pkg, "internal/testkit/") {
			t.Errorf("%s stands on level %d; the tree has at most 8", pkg, l)
		}
	}

	if slices.Contains(deps["slurmconf"], "os/exec") {
		t.Error("slurmconf links os/exec: it reads Slurm's syntax and runs nothing (internal/slurmhost runs slurmd -V)")
	}
	for pkg, imps := range imports {
		if !strings.HasPrefix(pkg, "internal/") && slices.Contains(imps, "testing") {
			t.Errorf("%s imports testing, but ships outside internal/", pkg)
		}
	}
	for _, d := range deps["internal/jobenv"] {
		if d == module+"internal/nodeload" || strings.HasPrefix(d, "github.com/NVIDIA/go-nvml") {
			t.Errorf("internal/jobenv (the TaskProlog) links %s; env runs once per task and never starts NVML", d)
		}
	}
}
