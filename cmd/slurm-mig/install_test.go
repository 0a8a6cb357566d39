package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testtools"
)

// TestMakeInstall installs from the clone, as a site without packages
// does, into a temporary DESTDIR: make install puts the binary, the man
// page and the three completions where each tool looks under PREFIX, and
// make uninstall removes those five files and nothing else. The binary
// and the generated pages are built under the test's directory (BIN=), so
// nothing is written into the clone.
func TestMakeInstall(t *testing.T) {
	makeCmd := testtools.Require(t, "make", "make")
	// Debian's zsh reads /usr/share/zsh/vendor-completions, where the .deb
	// puts the completion; every zsh reads <prefix>/share/zsh/site-functions
	// of the prefix it was built for, and /usr/local's.
	zshUsr := "usr/share/zsh/site-functions/_slurm-mig"
	if _, err := os.Stat("/etc/debian_version"); err == nil {
		zshUsr = "usr/share/zsh/vendor-completions/_slurm-mig"
	}
	for _, tc := range []struct {
		prefix string // "" leaves the Makefile's default
		want   []string
	}{
		{"/usr", []string{
			"usr/bin/slurm-mig",
			"usr/share/bash-completion/completions/slurm-mig",
			"usr/share/fish/vendor_completions.d/slurm-mig.fish",
			"usr/share/man/man1/slurm-mig.1",
			zshUsr,
		}},
		{"", []string{
			"usr/local/bin/slurm-mig",
			"usr/local/share/bash-completion/completions/slurm-mig",
			"usr/local/share/fish/vendor_completions.d/slurm-mig.fish",
			"usr/local/share/man/man1/slurm-mig.1",
			"usr/local/share/zsh/site-functions/_slurm-mig",
		}},
	} {
		name := "PREFIX=" + tc.prefix
		if tc.prefix == "" {
			name = "default PREFIX"
		}
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			dest := filepath.Join(tmp, "dest")
			// Files of other packages in the directories install shares:
			// uninstall must leave them.
			others := []string{
				filepath.Join(filepath.Dir(tc.want[0]), "other-tool"),
				filepath.Join(filepath.Dir(tc.want[1]), "other-tool"),
			}
			for _, o := range others {
				mustWrite(t, filepath.Join(dest, o), "not slurm-mig's\n")
			}
			vars := []string{"DESTDIR=" + dest, "BIN=" + filepath.Join(tmp, "build/slurm-mig")}
			if tc.prefix != "" {
				vars = append(vars, "PREFIX="+tc.prefix)
			}
			runMake := func(target string) {
				t.Helper()
				cmd := exec.Command(makeCmd, append([]string{"-C", fixture.Root(t), target}, vars...)...)
				cmd.Env = makeEnv()
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("make %s %s: %v\n%s", target, strings.Join(vars, " "), err, out)
				}
			}

			runMake("install")
			if diff := cmp.Diff(sorted(append(tc.want, others...)), filesUnder(t, dest)); diff != "" {
				t.Errorf("make install: files under DESTDIR (-want +got):\n%s", diff)
			}
			bin := filepath.Join(dest, tc.want[0])
			if info, err := os.Stat(bin); err != nil || info.Mode().Perm() != 0o755 {
				t.Errorf("installed binary: %v, %v; want mode 0755", info, err)
			}
			if out, err := exec.Command(bin, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "slurm-mig ") {
				t.Errorf("installed slurm-mig --version: %q, %v", out, err)
			}
			for file, start := range map[string]string{
				tc.want[1]: "# bash completion for slurm-mig",
				tc.want[2]: "# fish completion for slurm-mig",
				tc.want[3]: `.TH "SLURM\-MIG" "1"`,
				tc.want[4]: "#compdef slurm-mig",
			} {
				data, err := os.ReadFile(filepath.Join(dest, file))
				if err != nil || !strings.HasPrefix(string(data), start) {
					t.Errorf("%s: want it to start %q, got %.60q (%v)", file, start, data, err)
				}
				if info, err := os.Stat(filepath.Join(dest, file)); err == nil && info.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v, want 0644", file, info.Mode().Perm())
				}
			}

			runMake("uninstall")
			if diff := cmp.Diff(sorted(others), filesUnder(t, dest)); diff != "" {
				t.Errorf("make uninstall: files left under DESTDIR (-want +got):\n%s", diff)
			}
		})
	}
}

// filesUnder lists the files (not directories) under dir, relative to it.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		out = append(out, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// makeEnv is this process's environment without what would change the
// Makefile's defaults: its variables, and an outer make's (make test runs
// this test), whose MAKEFLAGS pass its command line's variables on.
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PREFIX", "DESTDIR", "BINDIR", "MANDIR", "BASHCOMPDIR", "ZSHCOMPDIR", "FISHCOMPDIR", "MAKEFLAGS", "MFLAGS", "MAKELEVEL":
			continue
		}
		env = append(env, kv)
	}
	return env
}
