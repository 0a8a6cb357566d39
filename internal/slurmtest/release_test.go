package slurmtest

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// This file is what differs between Slurm releases in how the tests run
// Slurm, in one place, keyed by `slurmd -V`. The tests run whichever Slurm
// is first on PATH: Debian's here, or a chroot's when
// scripts/slurm-versions.sh (make test-slurm-versions) puts wrappers for
// another release first. docs/slurm-versions.md says why each line is
// here.

// release is what `slurmd -V` says, read once in TestMain; the zero
// Version where slurmd is missing (the tests then skip, or fail in CI).
var release slurmconf.Version

func readRelease() error {
	v, _, err := slurmhost.InstalledVersion()
	if errors.Is(err, slurmhost.ErrNoSlurm) {
		return nil
	}
	release = v
	return err
}

// Releases that change what the tests write or expect.
var (
	// cons_tres wants SelectTypeParameters before 21.08.1, which made
	// CR_Core_Memory the default.
	selectDefaultSince = slurmconf.Version{Major: 21, Minor: 8, Micro: -1}
	// slurmd -G checks that File= names a device ("is not a valid
	// character or block device", 765c9565e2).
	deviceCheckSince = slurmconf.Version{Major: 22, Minor: 5, Micro: -1}
	// cgroup.conf's CgroupPlugin= key (43237c9b5b); before it cgroup v1
	// is the only one, and the key is a parse error.
	cgroupPluginSince = slurmconf.Version{Major: 21, Minor: 8, Micro: -1}
	// CgroupAutomount= is gone, an error: line (c1cd0cba86, also in
	// 23.02.5 and later 23.02 releases): the
	// controllers are mounted as needed.
	cgroupAutomountGoneSince = slurmconf.Version{Major: 23, Minor: 11, Micro: -1}
	// SLURM_STEP_GPUS and CUDA_VISIBLE_DEVICES hold GRES indices
	// (0ebfd37834); before, the number that ends each device's file.
	gresIndexEnvSince = slurmconf.Version{Major: 21, Minor: 8, Micro: -1}
	// A TaskProlog that fails kills the task (6bd842011b, "Task will fail
	// when task_prolog fails"); before it the task runs anyway.
	taskPrologFailsTaskSince = slurmconf.Version{Major: 22, Minor: 5, Micro: -1}
	// CgroupPlugin=disabled: no cgroup at all, which a chroot or
	// container without a writable cgroup tree needs. Before it slurmd
	// reads this machine's /sys/fs/cgroup (the chroot binds /sys).
	cgroupDisabledSince = slurmconf.Version{Major: 24, Minor: 5, Micro: -1}
	// scontrol reconfigure starts slurmctld afresh ("Rework 'scontrol
	// reconfigure'", 23.11.0 NEWS; CHANGELOG/slurm-23.11.md: "how reconfig
	// was changed in 23.11"), which reads a node's new GRES count. Before,
	// a reconfigure keeps the count of a node whose GRES have files
	// ("Attempt to change gres/gpu Count on node ... invalid with File
	// configuration"): only a restart changes it. Tried: 20.11 and 22.05
	// keep the count, 24.11 and 26.05 take it
	// (TestRepartitionReconfigureOnly).
	reconfigureRestartsSince = slurmconf.Version{Major: 23, Minor: 11, Micro: -1}
)

// releaseSlurmConf are the slurm.conf lines that depend on the release.
//
// Every release takes auth/none and cred/none, Debian's 24.11 and 26.05
// too. auth/slurm, the munge-free default of 23.11 on, is not used: its
// clients (scontrol, srun) reach the daemons through a socket at a fixed
// path, /run/slurm/sack.socket, that clusters running side by side would
// share, each with its own key ("Protocol authentication error").
func releaseSlurmConf() []string {
	lines := []string{"AuthType=auth/none", "CredType=cred/none"}
	if release.Before(selectDefaultSince) {
		lines = append(lines, "SelectTypeParameters=CR_Core_Memory")
	}
	return lines
}

// nodeCommand is how a script that Slurm runs (the TaskProlog) starts a
// program built on this machine. Where Slurm runs in a chroot of an older
// Debian, the binary built here may need a newer glibc than the chroot
// has (2.34 against bullseye's 2.31; a 20.11 node runs a portable
// build): scripts/slurm-versions.sh then copies this machine's dynamic
// loader and libc where the chroot sees them and names the loader in
// $SLURMTEST_HOST_LOADER.
func nodeCommand(binary string) string {
	if loader := os.Getenv("SLURMTEST_HOST_LOADER"); loader != "" {
		return loader + " " + binary
	}
	return binary
}

// cgroupV1Conf are the lines of cgroup.conf that pick cgroup v1 and
// mount its controllers as needed, as the release says it.
func cgroupV1Conf() string {
	conf := "CgroupPlugin=cgroup/v1\n"
	if release.Before(cgroupPluginSince) {
		conf = "" // v1 is the only one
	}
	if release.Before(cgroupAutomountGoneSince) {
		conf += "CgroupAutomount=yes\n"
	}
	return conf
}

// writeReleaseFiles writes the files beside slurm.conf that the release
// needs: cgroup.conf, unless the test wrote its own.
func writeReleaseFiles(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "cgroup.conf")); err == nil {
		return
	}
	if !release.Before(cgroupDisabledSince) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.conf"), []byte("CgroupPlugin=disabled\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gresLine matches the start of a record of slurmd -G: "slurmd: Gres
// Name=gpu ..." (22.05, 24.11); 20.11 names itself "slurmd-<host>:", and
// 26.05 starts with the time, "[2026-11-23T13:12:36.317] Gres ...".
var gresLine = regexp.MustCompile(`^(slurmd(-\S+)?: |\[[0-9T:.-]+\] )Gres `)

// slurmdGNoise are the warning: lines of slurmd -G that say nothing of
// gres.conf but of how a test runs it: 24.11 on warn that the config read
// is a local copy of a configless one (the configless test reads what
// slurmd fetched, on purpose), 26.05 that cgroup/v1 is deprecated (the
// TaskProlog test's task/cgroup uses v1, which this machine has).
var slurmdGNoise = regexp.MustCompile(`warning: (Running with local config file despite slurmctld having been setup for configless operation|cgroup/v1 plugin is deprecated)`)

// refusal is what the release says of the records the layout renders in
// form f: nil where it reads them, else why it refuses them
// (slurmconf.CheckGres, which gresgen applies).
func refusal(t *testing.T, l layout, f form, host string) *slurmconf.RefusedError {
	t.Helper()
	_, err := generate(l, f, host, release)
	var refused *slurmconf.RefusedError
	if errors.As(err, &refused) {
		return refused
	}
	if err != nil {
		t.Fatal(err)
	}
	return nil
}

// refusedName is the subtest name of a form the release refuses: it says
// which rule refuses it.
func refusedName(r *slurmconf.RefusedError) string {
	if r.SharedFiles {
		return "shared-files-refused-before-" + slurmconf.SharedFilesSince.String()
	}
	return "refused-by-" + r.Version.String()
}

// checkSlurmMigRefuses runs gen for the release (--slurm-version) in form
// f, which must fail, writing nothing, with the refusal's message.
func checkSlurmMigRefuses(t *testing.T, l layout, f form, host string, r *slurmconf.RefusedError) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "gres.conf")
	args := append([]string{"--root", l.root, "gen", "--from", l.snapshot, "--node-name", host, "--slurm-version", release.String(), "-o", out}, f.flags("gen")...)
	code, stdout, stderr := runSlurmMigCode(t, args...)
	if code != 2 || !strings.Contains(stderr, r.Problem) || !strings.Contains(stderr, "nothing was written") || stdout != "" {
		t.Errorf("slurm-mig %s: exit %d\n%s%s\nwant exit 2 and: %s", strings.Join(args, " "), code, stdout, stderr, r.Problem)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("slurm-mig refused, yet %s exists (%v)", out, err)
	}
}

// TestReadsSlurmdOutputOfEveryRelease reads what `slurmd -G` and `slurmd
// -C` printed for the demo node on each release (testdata/<release>/),
// as the tests read them live: every record with its type, count and
// files, and the hardware words of the node line.
func TestReadsSlurmdOutputOfEveryRelease(t *testing.T) {
	want := map[string]int{"a100": 1, "a100_1g.10gb": 7, "a100_1c.3g.40gb": 1, "a100_2c.3g.40gb": 1, "a100_3g.40gb": 1, "a100_2g.20gb": 2, "a100_1g.10gb+me": 1}
	for _, r := range []string{"20.11", "22.05", "24.11", "26.05"} {
		t.Run(r, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", r, "slurmd-G.txt"))
			if err != nil {
				t.Fatal(err)
			}
			var recs []gresRecord
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				prefix := gresLine.FindString(line)
				if prefix == "" {
					t.Fatalf("not a record: %s", line)
				}
				rec, err := parseSlurmdRecord(line[len(prefix):])
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec)
			}
			if got := typeCounts(recs); !maps.Equal(got, want) {
				t.Errorf("counts %v, want %v", got, want)
			}
			// 20.11 has the CI caps alone (--files auto), the others all
			// three files of each MIG device.
			files := 3
			if r == "20.11" {
				files = 1
			}
			for _, rec := range recs {
				if n := len(strings.Split(rec.Files, ",")); rec.Type != "a100" && n != files || rec.Links != "" || rec.Count != 1 {
					t.Errorf("record %+v: want %d files, no links, count 1", rec, files)
				}
			}
			data, err = os.ReadFile(filepath.Join("testdata", r, "slurmd-C.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if got := hardwareWords(string(data)); got != "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1" {
				t.Errorf("slurmd -C: %q", got)
			}
		})
	}
}
