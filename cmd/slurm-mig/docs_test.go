package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/claim"
	"github.com/slurm-mig/slurm-mig/internal/drift"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// TestDocsMatchHelp holds the man page and the bash completion that the
// packages ship (slurm-mig docs ...) to --help: the same commands, for
// each the same flags, each flag with the help text --help shows.
func TestDocsMatchHelp(t *testing.T) {
	top := runHelp(t)
	commands := helpCommands(top)
	if len(commands) == 0 {
		t.Fatalf("no commands found in --help:\n%s", top)
	}
	if strings.Contains(top, "docs") {
		t.Errorf("--help shows the hidden docs command:\n%s", top)
	}
	man := manFlags(t, docsOutput(t, "man"))
	var manCommands []string
	for c := range man {
		if c != "" {
			manCommands = append(manCommands, c)
		}
	}
	sort.Strings(manCommands)
	if diff := cmp.Diff(sorted(commands), manCommands); diff != "" {
		t.Errorf("commands in the man page differ from --help (-help +man):\n%s", diff)
	}

	bash := filepath.Join(t.TempDir(), "slurm-mig.bash")
	if err := os.WriteFile(bash, []byte(docsOutput(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range append([]string{""}, commands...) {
		var args []string
		if cmd != "" {
			args = []string{cmd}
		}
		want := helpFlags(runHelp(t, args...))
		got := map[string]string{}
		for name, text := range man[""] {
			got[name] = text
		}
		for name, text := range man[cmd] {
			got[name] = text
		}
		if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
			t.Errorf("slurm-mig %s: flags in the man page differ from --help (-help +man):\n%s", cmd, diff)
		}
		for name, help := range want {
			if text, ok := got[name]; ok && !strings.HasPrefix(text, help) {
				t.Errorf("slurm-mig %s %s: the man page says\n\t%s\n--help says\n\t%s", cmd, name, text, help)
			}
		}

		out, err := exec.Command("bash", "-c", `. "$1" && _slurm_mig_flags "$2"`, "bash", bash, cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion: %v\n%s", err, out)
		}
		completed := map[string]bool{}
		for _, f := range strings.Fields(string(out)) {
			completed[f] = true
		}
		for name := range want {
			if !completed[name] {
				t.Errorf("slurm-mig %s: the bash completion lacks %s (has %s)", cmd, name, out)
			}
		}
	}
}

// TestManEnvironment holds the man page's ENVIRONMENT section to the
// environment variables the program reads: each name the Go files built
// into slurm-mig spell (an all-capital string with an underscore, as
// SLURM_CONF; the only others are scontrol's state words) is a term
// there, and no other. FILES names the files an admin looks for.
func TestManEnvironment(t *testing.T) {
	page := docsOutput(t, "man")
	section := func(title string) string {
		_, rest, ok := strings.Cut(page, ".SH \""+title+"\"\n")
		if !ok {
			t.Fatalf("the man page has no %s section", title)
		}
		body, _, _ := strings.Cut(rest, "\n.SH ")
		return body
	}
	documented := map[string]bool{}
	for _, term := range manTerm.FindAllStringSubmatch(section("ENVIRONMENT"), -1) {
		for _, name := range strings.Split(manUnesc.Replace(term[1]), ", ") {
			documented[name] = true
		}
	}
	read := map[string]bool{"PATH": true} // exec.LookPath: slurmd, scontrol, exec's CMD
	for _, name := range programStrings(t, envName) {
		if name != "NOT_RESPONDING" { // scontrol's State= word
			read[name] = true
		}
	}
	if diff := cmp.Diff(keys(read), keys(documented)); diff != "" {
		t.Errorf("ENVIRONMENT differs from the variables the program reads (-read +documented):\n%s", diff)
	}

	files := manUnesc.Replace(section("FILES"))
	for _, f := range []string{jobenv.DefaultStatePath, claim.DefaultDir, drift.DefaultGresConf} {
		if !strings.Contains(files, "\\fB"+f) {
			t.Errorf("FILES does not name %s:\n%s", f, files)
		}
	}
}

// TestSnapshotDocCommands holds docs/snapshot.md's table of the commands
// that read a snapshot to the commands whose --help shows --from.
func TestSnapshotDocCommands(t *testing.T) {
	var want []string
	for _, c := range helpCommands(runHelp(t)) {
		if _, ok := helpFlags(runHelp(t, c))["--from"]; ok {
			want = append(want, c)
		}
	}
	doc, err := os.ReadFile(filepath.Join(fixture.Root(t), "docs/snapshot.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "\n## Commands that read a snapshot\n")
	table, _, _ = strings.Cut(table, "\n\n## ")
	var documented []string
	for _, l := range strings.Split(table, "\n") {
		if first, _, ok := strings.Cut(strings.TrimPrefix(l, "| "), " |"); ok && strings.HasPrefix(l, "| `") {
			for _, c := range strings.Split(first, ", ") {
				documented = append(documented, strings.Trim(c, "`"))
			}
		}
	}
	if diff := cmp.Diff(sorted(want), sorted(documented)); diff != "" {
		t.Errorf("docs/snapshot.md's commands that read a snapshot differ from those that take --from (-help +doc):\n%s", diff)
	}
}

// TestJSONHelpNamesItsKeys holds each --json flag's help, which lists the
// keys of the JSON it reports, to what the command prints: every key,
// nested ones included, with --backup replacing a file so that "backup"
// shows too.
func TestJSONHelpNamesItsKeys(t *testing.T) {
	dir := t.TempDir()
	demo := fixture.Path(t, "demo")
	gres, state, merged := filepath.Join(dir, "gres.conf"), filepath.Join(dir, "devices.json"), filepath.Join(dir, "cluster.conf")
	from := []string{"--root", filepath.Join(demo, "root")}
	snapshot := []string{"--from", filepath.Join(demo, "snapshot.json")}
	for _, tc := range []struct {
		command string // whose --help names the keys
		args    []string
		backup  string // the file --backup keeps, written first: a gpu record of the node, to be replaced
	}{
		{"gen", append(append(from, "gen", "-o", gres, "--backup", "--json", "--state", state), snapshot...), gres},
		{"state", append(append(from, "state", "--json", "--state", state), snapshot...), ""},
		{"merge", []string{"merge", gres, "-o", merged, "--backup", "--json"}, merged}, // gen's output
		{"list", append(append(from, "list", "--json"), snapshot...), ""},
	} {
		if tc.backup != "" {
			mustWrite(t, tc.backup, "NodeName=gpu-demo01 Name=gpu Type=replaced File=/dev/nvidia0\n")
		}
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &env{stdout: &stdout, stderr: &stderr, newNVML: testNVML, hostname: testHostname}); code != 0 {
			t.Fatalf("slurm-mig %s: exit %d: %s", strings.Join(tc.args, " "), code, stderr.String())
		}
		var report map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
			t.Fatalf("slurm-mig %s: %v\n%s", tc.command, err, stdout.String())
		}
		printed := map[string]bool{}
		collectKeys(report, printed)
		named := map[string]bool{}
		for _, m := range quotedKey.FindAllStringSubmatch(helpFlags(runHelp(t, tc.command))["--json"], -1) {
			named[m[1]] = true
		}
		if diff := cmp.Diff(keys(printed), keys(named)); diff != "" {
			t.Errorf("slurm-mig %s --json: the keys --help names differ from those printed (-printed +help):\n%s\n%s", tc.command, diff, stdout.String())
		}
	}
}

// TestDocExamplesOneVersion holds the version in the headers of the
// example outputs in README.md and docs/ to one that --version prints:
// the same for every example, one build's (make build stamps a commit id
// such as 6531baa until there are tags).
func TestDocExamplesOneVersion(t *testing.T) {
	root := fixture.Root(t)
	files, err := filepath.Glob(filepath.Join(root, "docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string][]string{} // version -> where
	for _, f := range append(files, filepath.Join(root, "README.md")) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range writtenBy.FindAllStringSubmatch(string(data), -1) {
			rel, _ := filepath.Rel(root, f)
			versions[m[1]] = append(versions[m[1]], rel+": "+m[0])
		}
	}
	if len(versions) > 1 {
		t.Errorf("the examples name more than one version; --version prints one:\n%v", versions)
	}
}

var writtenBy = regexp.MustCompile(`written by slurm-mig (\S+?);? `)

var quotedKey = regexp.MustCompile(`"([a-z_]+)"`)

// collectKeys adds the keys of a decoded JSON object, and of the objects
// in it and in its lists, to keys.
func collectKeys(v any, keys map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, inner := range v {
			keys[k] = true
			collectKeys(inner, keys)
		}
	case []any:
		for _, inner := range v {
			collectKeys(inner, keys)
		}
	}
}

var (
	manTerm = regexp.MustCompile(`(?m)^\.TP\n\\fB(.*)\\fR$`)
	envName = regexp.MustCompile(`"([A-Z][A-Z0-9]*_[A-Z0-9_]+)"`)
)

// programStrings are the first groups of re's matches in the non-test Go
// files of this module's packages that are built into slurm-mig.
func programStrings(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{if and .Module .Module.Main}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var found []string
	for _, file := range strings.Fields(string(out)) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			found = append(found, m[1])
		}
	}
	if len(found) == 0 {
		t.Fatalf("no match for %s in the program's files (go list printed %q)", re, out)
	}
	return found
}

func runHelp(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "--help"), &env{stdout: &stdout, stderr: &stderr}); code != 0 {
		t.Fatalf("slurm-mig %s --help: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

func docsOutput(t *testing.T, format string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"docs", format}, &env{stdout: &stdout, stderr: &stderr}); code != 0 {
		t.Fatalf("slurm-mig docs %s: exit %d: %s", format, code, stderr.String())
	}
	return stdout.String()
}

// helpCommands are the command names under "Commands:" in --help.
func helpCommands(help string) []string {
	var out []string
	_, list, _ := strings.Cut(help, "\nCommands:\n")
	for _, l := range strings.Split(list, "\n") {
		if l == "" {
			break
		}
		if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   ") {
			out = append(out, strings.Fields(l)[0])
		}
	}
	return out
}

var helpFlagLine = regexp.MustCompile(`^  (?:-(\S), |    )--(?:\[no-\])?([\w-]+)(?:=\S+)?(?: {2,}(.*))?$`)

// helpFlags maps each flag (--name, and -s where it has one) in --help
// to its help text, unwrapped.
func helpFlags(help string) map[string]string {
	out := map[string]string{}
	var names []string // the flag whose text continues on the next lines
	for _, l := range strings.Split(help, "\n") {
		if m := helpFlagLine.FindStringSubmatch(l); m != nil {
			names = []string{"--" + m[2]}
			if m[1] != "" {
				names = append(names, "-"+m[1])
			}
			for _, n := range names {
				out[n] = m[3]
			}
			continue
		}
		if !strings.HasPrefix(l, "        ") || strings.TrimSpace(l) == "" {
			names = nil
			continue
		}
		for _, n := range names {
			out[n] = strings.TrimSpace(out[n] + " " + strings.TrimSpace(l))
		}
	}
	return out
}

var (
	manBold   = regexp.MustCompile(`\\fB(.*?)\\fR`)
	manUnesc  = strings.NewReplacer(`\-`, "-", `\e`, `\`, `\&`, "")
	manSubsec = regexp.MustCompile(`^\.SS \\fBslurm\\-mig (.*?)\\fR`)
)

// manFlags reads the roff man page: for OPTIONS (key "") and each command
// (.SS), each flag name (--name, -s) and its text.
func manFlags(t *testing.T, page string) map[string]map[string]string {
	out := map[string]map[string]string{}
	section, inSection := "", false
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case l == `.SH "OPTIONS"`:
			section, inSection = "", true
			out[section] = map[string]string{}
		case strings.HasPrefix(l, ".SS "):
			m := manSubsec.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("man page: unexpected %q", l)
			}
			section, inSection = manUnesc.Replace(m[1]), true
			out[section] = map[string]string{}
		case strings.HasPrefix(l, ".SH "):
			inSection = false
		case l == ".TP" && inSection && i+1 < len(lines):
			i++
			var names []string
			for _, m := range manBold.FindAllStringSubmatch(lines[i], -1) {
				names = append(names, manUnesc.Replace(m[1]))
			}
			var text []string
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], ".") {
				i++
				text = append(text, manUnesc.Replace(lines[i]))
			}
			for _, n := range names {
				out[section][n] = strings.Join(text, " ")
			}
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// The man page slurm-mig ships renders without a warning in groff -ww
// (man-db's own check): a long word that cannot be broken, a roff request
// it does not know. A list of the commands as one comma-joined word
// could not be adjusted.
func TestManPageRendersWithoutWarnings(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("no groff")
	}
	cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(docsOutput(t, "man"))
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("groff -man -Tutf8 -ww -z: %v\n%s", err, out)
	}
}
