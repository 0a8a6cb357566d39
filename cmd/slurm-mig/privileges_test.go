package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// TestAsUnprivilegedUser runs the built binary as uid 65534: reading works
// (a snapshot, mig-minors, sysfs), writing a root-owned directory does not,
// and says so in one line.
func TestAsUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user; CI runs as root")
	}
	dir, err := os.MkdirTemp("", "slurm-mig-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t, dir)
	minors := fixture.Read(t, fixture.RealMigMinors)
	mustWrite(t, filepath.Join(dir, "root/proc/driver/nvidia-caps/mig-minors"), string(minors))
	mustWrite(t, filepath.Join(dir, "snap.json"), `{"schema_version": 1, "hostname": "n1", "gpus": [
	  {"index": 0, "minor": 0, "uuid": "GPU-00000000-0000-4000-8000-000000000000", "name": "NVIDIA A100-SXM4-80GB", "mig_enabled": true, "mig_pending": true,
	   "mig_devices": [{"gpu_instance_id": 7, "compute_instance_id": 0, "profile": "1g.10gb", "uuid": "MIG-00000000-0000-4000-8000-000000000007"}]}]}`)
	etc := filepath.Join(dir, "etc-slurm") // root-owned, as /etc/slurm is
	mustWrite(t, filepath.Join(etc, "gres.conf"), oldGresConf)

	asNobody := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	out, errs, code := asNobody("--root", filepath.Join(dir, "root"), "gen", "--from", filepath.Join(dir, "snap.json"))
	if code != 0 || !strings.Contains(out, "MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap66,/dev/nvidia-caps/nvidia-cap67") {
		t.Errorf("reading as nobody: exit %d\n%s%s", code, out, errs)
	}
	_, errs, code = asNobody("--root", filepath.Join(dir, "root"), "gen", "--from", filepath.Join(dir, "snap.json"), "-o", filepath.Join(etc, "gres.conf"), "--no-state")
	want := "slurm-mig: cannot write " + etc + "/gres.conf: " + etc + " is not writable: permission denied\n"
	if code != 2 || errs != want {
		t.Errorf("writing as nobody: exit %d, stderr %q\nwant exit 2, %q", code, errs, want)
	}
	if data, _ := os.ReadFile(filepath.Join(etc, "gres.conf")); string(data) != oldGresConf {
		t.Errorf("gres.conf changed: %q", data)
	}

	// A gres.conf that is already right needs no write, and so no
	// writable directory (a read-only NFS /etc/slurm): exit 0, unchanged.
	gen := []string{"--root", filepath.Join(dir, "root"), "gen", "--from", filepath.Join(dir, "snap.json"), "-o", filepath.Join(etc, "gres.conf"), "--no-state"}
	if out, err := exec.Command(bin, gen...).CombinedOutput(); err != nil {
		t.Fatalf("writing as root: %v\n%s", err, out)
	}
	out, errs, code = asNobody(gen...)
	if want := etc + "/gres.conf: unchanged (1 device)\n"; code != 0 || out != want || errs != "" {
		t.Errorf("an unchanged gres.conf in a directory nobody may write: exit %d, stdout %q, stderr %q\nwant exit 0, %q", code, out, errs, want)
	}
	if entries, _ := os.ReadDir(etc); len(entries) != 1 {
		t.Errorf("%s holds %d entries, want just gres.conf", etc, len(entries))
	}
}

// TestNoShell checks that the program starts no shell: its only child
// processes are scontrol (diff --running) and slurmd -V (the installed
// Slurm's release), started from a path LookPath found, with their
// arguments as a list, free's claim holder (itself), and the command exec
// runs (it execs it, also from a path LookPath found). scontrol and
// slurmd -V run through slurmhost's runBounded, bounded in time, which is listed with
// its callers.
func TestNoShell(t *testing.T) {
	var calls []string
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, "internal/testkit/synth") { // benchmark input generators, not the program
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.CompositeLit); ok {
				if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Cmd" {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "exec" {
						calls = append(calls, filepath.ToSlash(path)+": exec.Cmd{...}")
					}
				}
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "runBounded" {
				calls = append(calls, filepath.ToSlash(path)+": runBounded(...)")
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "exec" && strings.HasPrefix(sel.Sel.Name, "Command") ||
				pkg.Name == "syscall" && (sel.Sel.Name == "Exec" || sel.Sel.Name == "ForkExec") || pkg.Name == "os" && sel.Sel.Name == "StartProcess") {
				arg := "?"
				if len(call.Args) > 0 {
					if id, ok := call.Args[0].(*ast.Ident); ok {
						arg = id.Name
					} else if lit, ok := call.Args[0].(*ast.BasicLit); ok {
						arg = lit.Value
					}
				}
				calls = append(calls, filepath.ToSlash(path)+": "+pkg.Name+"."+sel.Sel.Name+"("+arg+", ...)")
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// scontrol; slurmd -V; free's claim holder (slurm-mig itself); exec's
	// CMD, which slurm-mig becomes; rebalance --apply's --change-command,
	// the admin's own command line, which is what sh -c is for.
	want := []string{"../../internal/claim/exec.go: syscall.Exec(path, ...)", "../../internal/claim/holder/spawn.go: exec.Cmd{...}",
		"../../internal/rollout/command.go: exec.Command(\"/bin/sh\", ...)",
		"../../internal/slurmhost/release.go: runBounded(...)", "../../internal/slurmhost/run.go: exec.Command(path, ...)",
		"../../internal/slurmhost/scontrol.go: runBounded(...)"}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("child processes started:\n%s\nwant only:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
}
