// Package testtools is the one rule for tests that need something outside
// Go (Slurm's commands, hwloc, root): where it is missing they skip,
// saying so once, except in CI ($CI set and not "false", as CI services
// and .ci/run set it), where they fail: CI must install what the tests
// need. It is internal, and only tests import it.
package testtools

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// Debian packages of the tools, for the messages.
const (
	SlurmPackages = "slurmd slurmctld slurm-client"
	HwlocPackage  = "hwloc"
)

// InCI reports whether the tests run in CI, where nothing may be skipped
// for a missing tool.
func InCI() bool { return os.Getenv("CI") != "" && os.Getenv("CI") != "false" }

// Require returns the path of command, skipping t, or failing it in CI,
// when it is not on PATH; packages says what installs it.
func Require(t testing.TB, packages, command string) string {
	t.Helper()
	path, err := exec.LookPath(command)
	if err != nil {
		skipOrFail(t, fmt.Sprintf("%s is not on PATH; install it with: apt-get install %s", command, packages))
	}
	return path
}

// RequireRoot skips t when not run as root, or fails it in CI, which runs
// as root; why says what needs it.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root ("+why+"); run as root, as CI does")
	}
}

// announced prints each reason to skip once: the tests of a package skip
// for the same lack, and one line says it.
var announced sync.Map

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("cannot run under CI=%s: %s", os.Getenv("CI"), why)
	}
	if _, done := announced.LoadOrStore(why, true); !done {
		fmt.Printf("tests skipped: %s\n", why)
	}
	t.Skip(why)
}

// CopyExecutable copies the file from (a test binary) to to, mode 0755,
// so that a test can run itself from a path of its choosing.
func CopyExecutable(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
