// Package slurmtest checks what slurm-mig writes against real Slurm:
// Debian's slurmd, slurmctld and slurm-client (22.05). Its tests feed every
// node layout of the golden tests to `slurmd -G`, the parser of record,
// and to a one-node cluster on loopback that must reach IDLE and run
// `srun --gres=gpu:<type>:1` jobs.
//
// This file holds what other packages' tests share (the hostlist oracle
// in slurmconf skips and fails by the same rule). It imports nothing of
// this module, so that slurmconf's own tests can import it without a cycle.
package slurmtest

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// InstallHint says how to get the Slurm commands the tests run.
const InstallHint = "apt-get install slurmd slurmctld slurm-client"

// InCI reports whether the tests run in CI ($CI set, as CI services and
// .ci/run set it). There the real-Slurm tests must run: a missing command
// fails them instead of skipping them.
func InCI() bool { return os.Getenv("CI") != "" && os.Getenv("CI") != "false" }

// Require skips t when one of the Slurm commands is not on PATH, or fails
// it in CI.
func Require(t testing.TB, commands ...string) {
	t.Helper()
	for _, c := range commands {
		if _, err := exec.LookPath(c); err != nil {
			skipOrFail(t, fmt.Sprintf("%s is not on PATH; install it with: %s", c, InstallHint))
		}
	}
}

// RequireRoot skips t when not run as root (mknod and the daemons need
// it), or fails it in CI, which runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root (mknod of device files, slurmd and slurmctld run as SlurmUser=root); run as root, as CI does")
	}
}

// announceSkip prints the first reason to skip, once: the tests of a
// package skip for the same lack, and one line says it.
var announceSkip sync.Once

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("real-Slurm test cannot run under CI=%s: %s", os.Getenv("CI"), why)
	}
	announceSkip.Do(func() { Announce("real-Slurm tests skipped: %s", why) })
	t.Skip(why)
}

// Announce prints one line of the suite's findings. `make test` runs this
// package with -v and filters the per-test lines, so the line shows in
// CI's output; a plain `go test` hides it with the rest of a passing
// package's output.
func Announce(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}
