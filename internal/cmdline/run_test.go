package cmdline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/alecthomas/kong"
)

type coded struct{ code int }

func (c coded) Error() string { return "none idle" }
func (c coded) ExitCode() int { return c.code }

// testCLI's command returns what its test sets, and records that ready
// came first.
type testCLI struct {
	Do doCmd `cmd:"" help:"Do it."`
}

type doCmd struct {
	Say   string            `help:"Say it."`
	Out   string            `short:"o" placeholder:"FILE" help:"Write it to FILE."`
	Alias map[string]string `placeholder:"NAME=TYPE" mapsep:"none" help:"Call it so."`
	Style string            `enum:"plain,loud" default:"plain" help:"Say it so."`
}

type outcome struct {
	err   error
	ready bool // ready had run when the command ran
}

func (d *doCmd) Run(o *outcome, w io.Writer) error {
	if !o.ready {
		return errors.New("ran before ready")
	}
	if d.Say != "" {
		io.WriteString(w, d.Say+"\n")
	}
	return o.err
}

func TestRunStatuses(t *testing.T) {
	for _, tc := range []struct {
		name           string
		args           []string
		err            error
		status         int
		stdout, stderr string
	}{
		{"ok", []string{"do", "--say", "hi"}, nil, 0, "hi\n", ""},
		{"status alone", []string{"do"}, Status(1), 1, "", ""},
		{"wrapped status", []string{"do"}, fmt.Errorf("comparing: %w", Status(3)), 3, "", ""},
		{"error with its code", []string{"do"}, coded{126}, 126, "", "x: none idle\n"},
		{"error on one line", []string{"do"}, errors.New("a\n  b\tc"), 2, "", "x: a b c\n"},
		{"parse error", []string{"do", "--bogus"}, nil, 2, "", "x: unknown flag --bogus (see x do --help)\n"},
		{"no command", []string{}, nil, 2, "", "x: expected \"do\" (see x --help)\n"},
		{"help", []string{"--help"}, nil, 0, "", ""},
		// A usage error points at the help of the command given; given
		// none, a word that is no command is told the commands, and a
		// command's flag before the command that it goes after it.
		{"no such command", []string{"bogus"}, nil, 2, "", "x: no command \"bogus\"; the commands are do (see x --help)\n"},
		{"flag before its command", []string{"--say", "hi", "do"}, nil, 2, "", "x: --say is a flag of do, and goes after it: x do --say ... (see x do --help)\n"},
		{"no flag anywhere", []string{"--bogus", "do"}, nil, 2, "", "x: unknown flag --bogus (see x --help)\n"},
		// A flag with no value, or with a flag where its value should be,
		// is said in a sentence, not in kong's "expected string value but
		// got EOL".
		{"flag with no value", []string{"do", "-o"}, nil, 2, "", "x: -o, --out=FILE needs a value, and none was given (see x do --help)\n"},
		{"long flag with no value", []string{"do", "--say"}, nil, 2, "", "x: --say needs a value, and none was given (see x do --help)\n"},
		{"map flag with no value", []string{"do", "--alias"}, nil, 2, "", "x: --alias=NAME=TYPE needs a value, and none was given (see x do --help)\n"},
		{"enum flag with no value", []string{"do", "--style"}, nil, 2, "", "x: --style (one of plain,loud) needs a value, and none was given (see x do --help)\n"},
		{"flag for a value", []string{"do", "-o", "--say", "hi"}, nil, 2, "", `x: -o, --out=FILE needs a value, and was given the flag --say; a value that starts with - is written --out=--say (see x do --help)` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			o := &outcome{err: tc.err}
			app := App{Name: "x", Stdout: &stdout, Stderr: &stderr}
			app.Options = append(app.Options, kongBind(o, &stdout)...)
			status := app.Run(&testCLI{}, tc.args, func() { o.ready = true })
			if status != tc.status {
				t.Errorf("status %d, want %d", status, tc.status)
			}
			if tc.name == "help" {
				if stdout.Len() == 0 {
					t.Errorf("--help printed nothing")
				}
				return
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
}

// A command's error is printed as Explain says it, on one line; its exit
// status is still the error's own.
func TestRunExplains(t *testing.T) {
	var stdout, stderr bytes.Buffer
	o := &outcome{err: coded{126}}
	app := App{Name: "x", Stdout: &stdout, Stderr: &stderr,
		Explain: func(err error) string { return err.Error() + ";\n  the fix" }}
	app.Options = append(app.Options, kongBind(o, &stdout)...)
	status := app.Run(&testCLI{}, []string{"do"}, func() { o.ready = true })
	if want := "x: none idle; the fix\n"; status != 126 || stderr.String() != want {
		t.Errorf("status %d, stderr %q; want 126, %q", status, stderr.String(), want)
	}
}

// Print prints nothing of a write that fails, and names a failing output.
func TestPrint(t *testing.T) {
	var out bytes.Buffer
	err := Print(&out, func(w io.Writer) error {
		io.WriteString(w, "half a config\n")
		return errors.New("step two failed")
	})
	if err == nil || out.Len() != 0 {
		t.Errorf("failed write: err %v, printed %q", err, out.String())
	}
	err = Print(failingWriter{}, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
	if err == nil || err.Error() != "writing output: disk full" {
		t.Errorf("failing output: err %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

type report struct{}

func (report) WriteText(w io.Writer) error { _, err := io.WriteString(w, "text\n"); return err }
func (report) WriteJSON(w io.Writer) error { _, err := io.WriteString(w, "{}\n"); return err }

func TestPrintReport(t *testing.T) {
	for asJSON, want := range map[bool]string{false: "text\n", true: "{}\n"} {
		var out bytes.Buffer
		if err := PrintReport(&out, report{}, asJSON); err != nil || out.String() != want {
			t.Errorf("asJSON %v: %q, %v; want %q", asJSON, out.String(), err, want)
		}
	}
}

// kongBind gives the test command its outcome and output.
func kongBind(o *outcome, w io.Writer) []kong.Option {
	return []kong.Option{kong.Bind(o), kong.BindTo(w, (*io.Writer)(nil))}
}
