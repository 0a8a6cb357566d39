package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

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

	// docs/layout.md names every package with its one job, and so stays
	// true as packages come and go.
	layout, err := os.ReadFile(filepath.Join(fixture.Root(t), "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range imports {
		if !strings.Contains(string(layout), "`"+pkg+"`") {
			t.Errorf("docs/layout.md does not name package %s", pkg)
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

// mayNameFlags are the packages whose strings may name the command line's
// flags: the command itself; the packages that parse it and make its
// documentation from its model (cmdline knows kong's --help and the
// --version that decides which model it builds); and the test kit.
var mayNameFlags = []string{"cmd/slurm-mig", "internal/cmdline", "internal/docgen", "internal/testkit"}

// TestFlagNamesOnlyInCmd: no string in a package below cmd names a flag
// of the command line, so that a flag renamed in cmd cannot leave advice
// naming the old one behind. A package says what is wrong and, through
// internal/advice, what would help; cmd says it in the flags' words. The
// flags are those of kong's model of the whole command line: every long
// name as --NAME, and the short names of flags that take a value as -X
// after a blank or a parenthesis ("gen -o", "(-o)"; a string that is
// only "-o" is an argument of another command: scontrol show node -o). The short names of switches (-V,
// -v, -h) are left out: Slurm's commands take the same ones (slurmd -V),
// and slurm-mig runs and names those.
func TestFlagNamesOnlyInCmd(t *testing.T) {
	app, err := kong.New(&cli{}, (&env{}).app().Options...)
	if err != nil {
		t.Fatal(err)
	}
	var long []string
	var short string
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			long = append(long, regexp.QuoteMeta(f.Name))
			if f.Short != 0 && !f.IsBool() && !strings.ContainsRune(short, f.Short) {
				short += string(f.Short)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(app.Model.Node)
	if !slices.Contains(long, "node-name") || short != "o" {
		t.Fatalf("the model's flags are %v and -%s; want --node-name among them and -o alone", long, short)
	}
	flag := regexp.MustCompile(`(?:^|[^\w-])(--(?:` + strings.Join(long, "|") + `))(?:$|[^\w-])|[\s(](-[` + short + `])(?:$|[\s),;:=])`)

	eachShippedFile(t, mayNameFlags, func(fset *token.FileSet, pkg string, file *ast.File) {
		ast.Inspect(file, func(n ast.Node) bool {
			if _, ok := n.(*ast.ImportSpec); ok {
				return false
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			if strings.HasPrefix(s, "squeue ") || strings.HasPrefix(s, "sacct ") {
				return true // another program's command line: its flags (--format) are its own
			}
			if m := flag.FindStringSubmatch(s); m != nil {
				pos := fset.Position(lit.Pos())
				rel, _ := filepath.Rel(fixture.Root(t), pos.Filename)
				t.Errorf("%s:%d names the flag %s; say it in cmd (internal/advice)", rel, pos.Line, m[1]+m[2])
			}
			return true
		})
	})
}

// eachShippedFile calls fn with each parsed non-test Go file of the
// module's packages, but those of the packages skip names (and the
// packages below them). It returns how many files it parsed.
func eachShippedFile(t *testing.T, skip []string, fn func(fset *token.FileSet, pkg string, file *ast.File)) int {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}}`, "./...")
	cmd.Dir = fixture.Root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	files := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		pkg := strings.TrimPrefix(f[0], module)
		if slices.ContainsFunc(skip, func(p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }) {
			continue
		}
		for _, name := range strings.Fields(f[2]) {
			file, err := parser.ParseFile(fset, filepath.Join(f[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files++
			fn(fset, pkg, file)
		}
	}
	return files
}

// mayPrint are the packages that may write to standard output or error
// on their own: the command and the runner that prints its result, the
// test kit, the developer tools and the real-Slurm test harness.
var mayPrint = []string{"cmd", "internal/cmdline", "internal/testkit", "internal/tools", "internal/slurmtest"}

// TestNoPrintBelowCmd: no package below cmd picks where output goes
// (docs/layout.md). It names neither os.Stdout nor os.Stderr, calls no
// fmt.Print, and uses no package log: what it has to say it returns, or
// renders to the writer cmd gives it.
func TestNoPrintBelowCmd(t *testing.T) {
	checked := eachShippedFile(t, mayPrint, func(fset *token.FileSet, pkg string, file *ast.File) {
		for _, imp := range file.Imports {
			if imp.Path.Value == `"log"` || imp.Path.Value == `"log/slog"` {
				t.Errorf("%s: %s imports %s; return what it has to say", fset.Position(imp.Pos()), pkg, imp.Path.Value)
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch {
			case x.Name == "os" && (sel.Sel.Name == "Stdout" || sel.Sel.Name == "Stderr"),
				x.Name == "fmt" && strings.HasPrefix(sel.Sel.Name, "Print"):
				t.Errorf("%s: %s uses %s.%s; return it, or render it to a writer cmd gives", fset.Position(sel.Pos()), pkg, x.Name, sel.Sel.Name)
			}
			return true
		})
	})
	if checked < 50 {
		t.Fatalf("checked %d files below cmd; want the module's packages", checked)
	}
}
