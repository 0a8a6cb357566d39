package docgen

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/testtools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// toy has what the generators must handle: global flags, a short flag, an
// enum with a default, file and directory values, a repeatable map, nested
// commands, a positional argument, a negatable flag, text that roff and
// the shells read specially, and a hidden command and flag.
type toy struct {
	Root    string `placeholder:"DIR" default:"/" help:"Read files under DIR."`
	Verbose bool   `short:"v" help:"Say more."`
	Debug   bool   `hidden:"" help:"Not shown."`

	Gen struct {
		Style  string            `enum:"plain,fancy" default:"plain" help:"Output style: ${enum}."`
		Output string            `short:"o" placeholder:"FILE" help:"Write FILE [atomically]: it's 'safe'."`
		Map    map[string]string `mapsep:"none" placeholder:"NAME=TYPE" help:"Rename NAME (repeatable)."`
		Color  bool              `negatable:"" default:"true" help:"Colour the output."`
	} `cmd:"" help:"Generate things.\n\nA second paragraph:\n\n  toy gen -o out\n\n.dot and \\back."`
	Fleet struct {
		Merge struct {
			Files []string `arg:"" type:"existingfile" help:"Files to merge."`
			Name  string   `env:"TOY_CLUSTER" help:"Cluster name."`
		} `cmd:"" help:"Merge nodes."`
	} `cmd:"" help:"Work on many nodes."`
	Secret struct{} `cmd:"" hidden:"" help:"Not shown."`
}

func toyApp(t *testing.T) *kong.Application {
	t.Helper()
	var cli toy
	k, err := kong.New(&cli, kong.Name("toy"), kong.Description("Do toy things. For tests."), kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	return k.Model
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update, then read it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func generate(t *testing.T, gen func(io.Writer, *kong.Application) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gen(&b, toyApp(t)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func manPage(w io.Writer, app *kong.Application) error {
	return Man(w, app, Page{Version: "toy 1.0", Manual: "User Commands",
		Extra: []Section{{Title: "Exit status", Text: "0 fine, 2 trouble."},
			{Title: "Environment", Text: "TOY_CLUSTER\n: The cluster name (--name).\n\nTOY_HOME, TOY_DIR\n: Where toy keeps its files;\nthe second line goes on.\n\n.After the list, a paragraph."}}})
}

func TestGolden(t *testing.T) {
	for name, gen := range map[string]func(io.Writer, *kong.Application) error{
		"toy.1": manPage, "toy.bash": Bash, "_toy": Zsh, "toy.fish": Fish,
	} {
		t.Run(name, func(t *testing.T) {
			out := generate(t, gen)
			golden(t, name, out)
			for _, hidden := range []string{"secret", "debug", "Not shown"} {
				if bytes.Contains(out, []byte(hidden)) {
					t.Errorf("%s shows the hidden %q", name, hidden)
				}
			}
		})
	}
}

// TestManRenders runs the page through groff, which warns about any
// roff it does not understand.
func TestManRenders(t *testing.T) {
	testtools.Require(t, "groff-base", "groff")
	cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = bytes.NewReader(generate(t, manPage))
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
}

// TestBashCompletes runs the bash script in bash with command lines as
// bash hands them to it (COMP_WORDS split at '=').
func TestBashCompletes(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"notes.txt", "nodes.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "node-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "toy.bash")
	if err := os.WriteFile(script, generate(t, Bash), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string // the last is the word being completed
		want  string
	}{
		{[]string{"toy", ""}, "gen fleet"},
		{[]string{"toy", "f"}, "fleet"},
		{[]string{"toy", "--"}, "--help --root --verbose"},
		{[]string{"toy", "gen", "--"}, "--style --output --map --color --no-color --help --root --verbose"},
		{[]string{"toy", "gen", "--style", ""}, "plain fancy"},
		{[]string{"toy", "gen", "--style", "=", "f"}, "fancy"},
		{[]string{"toy", "gen", "--style", "="}, "plain fancy"},
		{[]string{"toy", "--root", "no"}, "node-dir"},
		{[]string{"toy", "gen", "-o", "no"}, "node-dir nodes.json notes.txt"},
		{[]string{"toy", "--root", "x", "fleet", ""}, "merge"},
		{[]string{"toy", "fleet", "merge", "--"}, "--name --help --root --verbose"},
		{[]string{"toy", "gen", "--output", "fleet", ""}, ""}, // fleet is -o's value, not a command
		{[]string{"toy", "secret", ""}, "gen fleet"},
		{[]string{"toy", "fleet", "merge", "no"}, "node-dir nodes.json notes.txt"}, // its files argument
	} {
		words := make([]string, len(tc.words))
		for i, w := range tc.words {
			words[i] = "'" + w + "'"
		}
		cmd := exec.Command("bash", "-c", `. ./toy.bash
			COMP_WORDS=(`+strings.Join(words, " ")+`); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
			_toy; printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '`)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.words, err, out)
		}
		if got, want := strings.Fields(string(out)), sorted(tc.want); !cmp.Equal(got, want) {
			t.Errorf("completing %q: got %q, want %q", tc.words, got, want)
		}
	}
}

func sorted(s string) []string {
	f := strings.Fields(s)
	for i := range f {
		for j := i + 1; j < len(f); j++ {
			if f[j] < f[i] {
				f[i], f[j] = f[j], f[i]
			}
		}
	}
	return f
}

// TestShellSyntax has zsh and fish parse their scripts, where installed.
func TestShellSyntax(t *testing.T) {
	for _, tc := range []struct {
		shell string
		gen   func(io.Writer, *kong.Application) error
		args  []string
	}{
		{"bash", Bash, []string{"-n"}},
		{"zsh", Zsh, []string{"-n"}},
		{"fish", Fish, []string{"--no-execute"}},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			testtools.Require(t, tc.shell, tc.shell)
			f := filepath.Join(t.TempDir(), "script")
			if err := os.WriteFile(f, generate(t, tc.gen), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(tc.shell, append(tc.args, f)...).CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s", tc.shell, err, out)
			}
		})
	}
}

// TestFishCompletes asks fish itself (complete -C) what it would offer.
func TestFishCompletes(t *testing.T) {
	testtools.Require(t, "fish", "fish")
	script := filepath.Join(t.TempDir(), "toy.fish")
	if err := os.WriteFile(script, generate(t, Fish), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, want string }{
		{"toy ", "fleet gen"},
		{"toy gen --st", "--style"},
		{"toy gen --style ", "fancy plain"},
		{"toy gen --no-c", "--no-color"},
		{"toy fleet ", "merge"},
		{"toy fleet merge --n", "--name"},
		{"toy --verb", "--verbose"},
	} {
		out, err := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C$argv[2]`, script, tc.line).CombinedOutput()
		if err != nil {
			t.Fatalf("fish: %v\n%s", err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				got = append(got, strings.SplitN(l, "\t", 2)[0])
			}
		}
		if want := sorted(tc.want); !cmp.Equal(sorted(strings.Join(got, " ")), want) {
			t.Errorf("fish completing %q: got %q, want %q", tc.line, got, want)
		}
	}
}

// TestManTerms reads the roff of a tagged paragraph (.TP): a line that
// the next, starting with ": ", describes.
func TestManTerms(t *testing.T) {
	page := string(generate(t, manPage))
	_, env, ok := strings.Cut(page, ".SH \"ENVIRONMENT\"\n")
	if !ok {
		t.Fatalf("no ENVIRONMENT section:\n%s", page)
	}
	want := ".TP\n\\fBTOY_CLUSTER\\fR\nThe cluster name (\\-\\-name).\n" +
		".TP\n\\fBTOY_HOME, TOY_DIR\\fR\nWhere toy keeps its files;\nthe second line goes on.\n" +
		".PP\n\\&.After the list, a paragraph.\n"
	if env != want {
		t.Errorf("ENVIRONMENT:\n%s\nwant:\n%s", env, want)
	}
}

func TestSections(t *testing.T) {
	got := Sections("ignored\n## Exit status\n0 fine.\n\n## See also\n\n  a(1)\n")
	want := []Section{{Title: "Exit status", Text: "0 fine."}, {Title: "See also", Text: "a(1)"}}
	if len(got) != len(want) {
		t.Fatalf("Sections: %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("section %d: %q, want %q", i, got[i], want[i])
		}
	}
}
