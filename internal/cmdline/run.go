// Package cmdline parses and runs a kong command line as every command of
// slurm-mig is run: parsed with the model of only the command it names where
// that will do (One), since building the whole model is most of a short
// run's work; its error printed on one line; and its exit status returned,
// not taken by os.Exit, so that tests run it in process.
package cmdline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"
)

// App is how a command line is parsed: kong's options beside the name,
// description and output streams; and how a command's error is said.
type App struct {
	Name, Description string
	Stdout, Stderr    io.Writer
	Options           []kong.Option
	// Explain says a command's error as it is printed (nil: its
	// Error()), so that the command line can put in the words that the
	// packages below it leave to it.
	Explain func(error) string
}

// Status is an error that only sets the exit status: diff's 1, "the
// files differ", is not trouble and prints nothing.
type Status int

func (s Status) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// exited carries kong's exit status (after --help, --version) out of its
// parser, which would otherwise call os.Exit.
type exited int

// Exit statuses, as diff(1) has them: 0 fine, 2 trouble.
const (
	statusOK    = 0
	statusError = 2
)

// Run parses args into cli (a pointer to a kong CLI struct), calls ready and
// runs the command. It returns 0, kong's status after --help or --version, a
// Status's, or, having printed the error on one line, its ExitCode() or 2.
func (a App) Run(cli any, args []string, ready func()) (status int) {
	defer func() {
		if r := recover(); r != nil {
			code, ok := r.(exited)
			if !ok {
				panic(r)
			}
			status = int(code)
		}
	}()
	ctx, err := One(cli, args, a.Parse)
	if err != nil {
		ctx, err = a.Parse(cli, args)
	}
	if err != nil {
		fmt.Fprintf(a.Stderr, "%s: %s\n", a.Name, Clip(a.usage(cli, args, err)))
		return statusError
	}
	ready()
	err = ctx.Run()
	var s Status
	switch {
	case err == nil:
		return statusOK
	case errors.As(err, &s):
		return int(s)
	}
	msg := err.Error()
	if a.Explain != nil {
		msg = a.Explain(err)
	}
	fmt.Fprintf(a.Stderr, "%s: %s\n", a.Name, Clip(oneLine(msg)))
	if coded := (interface{ ExitCode() int })(nil); errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return statusError
}

// Parse parses args into target, a pointer to a kong CLI struct (or to
// the part of one that One makes).
func (a App) Parse(target any, args []string) (*kong.Context, error) {
	options := append([]kong.Option{
		kong.Name(a.Name),
		kong.Description(a.Description),
		kong.Writers(a.Stdout, a.Stderr),
		kong.Exit(func(code int) { panic(exited(code)) }),
	}, a.Options...)
	parser, err := kong.New(target, options...)
	if err != nil {
		panic(err) // the CLI definition itself is wrong
	}
	return parser.Parse(args)
}

// Print runs write into a buffer and prints the whole output to w at
// once, after every step succeeded, so that a failure never leaves half a
// config on standard output.
func Print(w io.Writer, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// Report is a command's result that prints as text for the admin or as
// JSON for automation (--json).
type Report interface {
	WriteText(io.Writer) error
	WriteJSON(io.Writer) error
}

// PrintReport prints r whole (Print), as JSON when asJSON.
func PrintReport(w io.Writer, r Report, asJSON bool) error {
	if asJSON {
		return Print(w, r.WriteJSON)
	}
	return Print(w, r.WriteText)
}

// noValue and flagValue match kong's errors for a flag given no value, and
// for a flag where its value should be. kong's error type is not exported,
// so its text is matched; TestRunStatuses pins it for the kong in go.mod.
var (
	noValue   = regexp.MustCompile(`^--([\w-]+): (?:expected [\w ]+ value but got "EOL" \(<EOL>\)|missing value, expecting ".*")$`)
	flagValue = regexp.MustCompile(`^--([\w-]+): expected [\w ]+ value but got "(-[^"]*)" \((?:long|short) flag\); perhaps try .*$`)
)

var (
	unknownFlag   = regexp.MustCompile(`^unknown flag (--[\w-]+)$`)
	unexpectedArg = regexp.MustCompile(`^unexpected argument (.*)$`)
	notACommand   = regexp.MustCompile(`^\[?<command>\]? must be one of .* but got "(.*)"$`)
)

// usage says a parse error and points at the help of the command given, else
// the program's. Given no command, it tells a word that names none the
// commands there are, and a flag given before its command to go after it.
func (a App) usage(cli any, args []string, err error) string {
	msg := usageError(err).Error()
	help := a.Name + " --help"
	var parse *kong.ParseError
	if !errors.As(err, &parse) || parse.Context == nil {
		return fmt.Sprintf("%s (see %s)", msg, help)
	}
	commands := Commands(reflect.ValueOf(cli).Elem().Interface())
	noCommand := func(word string) string {
		return fmt.Sprintf("no command %q; the commands are %s", word, strings.Join(commands, ", "))
	}
	command := ""
	for _, p := range parse.Context.Path {
		if p.Command != nil {
			command = p.Command.Name
			break
		}
	}
	switch {
	case command == "help":
		if m := notACommand.FindStringSubmatch(msg); m != nil {
			msg = noCommand(m[1])
		}
	case command != "":
		help = a.Name + " " + command + " --help"
	case strings.HasPrefix(msg, "expected one of "):
		msg = "no command given; the commands are " + strings.Join(commands, ", ")
	case unexpectedArg.MatchString(msg):
		msg = noCommand(unexpectedArg.FindStringSubmatch(msg)[1])
	case unknownFlag.MatchString(msg):
		flag := unknownFlag.FindStringSubmatch(msg)[1]
		named := Named(args, reflect.ValueOf(cli).Elem().Interface())
		if named != "" && hasFlag(parse.Context.Model.Node, named, strings.TrimPrefix(flag, "--")) {
			msg = fmt.Sprintf("%s is a flag of %s, and goes after it: %s %s %s ...", flag, named, a.Name, named, flag)
			help = a.Name + " " + named + " --help"
		}
	}
	return fmt.Sprintf("%s (see %s)", msg, help)
}

// hasFlag reports whether the command named command of the model app
// takes the flag named flag.
func hasFlag(app *kong.Node, command, flag string) bool {
	for _, c := range app.Children {
		if c.Name != command {
			continue
		}
		for _, f := range c.Flags {
			if f.Name == flag {
				return true
			}
		}
	}
	return false
}

// usageError says in a sentence what kong says of a flag given no value,
// naming the flag as --help does (flagName); other parse errors
// it returns as they are.
func usageError(err error) error {
	var parse *kong.ParseError
	if !errors.As(err, &parse) {
		return err
	}
	msg := err.Error()
	var m []string
	var given string
	if m = noValue.FindStringSubmatch(msg); m != nil {
		given = "none was given"
	} else if m = flagValue.FindStringSubmatch(msg); m != nil {
		given = fmt.Sprintf("was given the flag %s; a value that starts with - is written --%s=%s", m[2], m[1], m[2])
	} else {
		return err
	}
	flag := "--" + m[1]
	if parse.Context != nil {
		for _, f := range parse.Context.Flags() {
			if f.Name == m[1] {
				flag = flagName(f)
				break
			}
		}
	}
	return fmt.Errorf("%s needs a value, and %s", flag, given)
}

// flagName names f as --help does, "-o, --output=FILE", with a placeholder
// only where the flag has its own: kong's default one is the default value,
// which reads as if given. A flag of a few words lists them.
func flagName(f *kong.Flag) string {
	name := "--" + f.Name
	if f.PlaceHolder != "" {
		name += "=" + f.PlaceHolder
	}
	if f.Short != 0 {
		name = fmt.Sprintf("-%c, %s", f.Short, name)
	}
	if f.Enum != "" {
		name += " (one of " + f.Enum + ")"
	}
	return name
}

// oneLine keeps an error's message to one line, so logs of hooks stay
// readable.
func oneLine(msg string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
}

// Version is the version a build reports: set with -ldflags -X (stamped),
// else, in a module build (go install ...@v1.2.3), the module's version.
func Version(stamped string) string {
	if info, ok := debug.ReadBuildInfo(); ok && stamped == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return stamped
}
