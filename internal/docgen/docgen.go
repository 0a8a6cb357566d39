// Package docgen writes a man page and shell completions (bash, zsh,
// fish) from a kong application's model, so that they say what --help
// says and change with it. Hidden commands and flags are left out.
package docgen

import (
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"
)

// Write writes app's man page (roff; page says what the model does not)
// or its completion script for bash, zsh or fish: format names which.
func Write(w io.Writer, format string, app *kong.Application, page Page) error {
	switch format {
	case "man":
		return Man(w, app, page)
	case "bash":
		return Bash(w, app)
	case "zsh":
		return Zsh(w, app)
	case "fish":
		return Fish(w, app)
	}
	return fmt.Errorf("no %q format (man, bash, zsh or fish)", format)
}

// commands returns the visible commands below n, depth first, in the
// model's order.
func commands(n *kong.Node) []*kong.Node {
	var out []*kong.Node
	for _, c := range visibleChildren(n) {
		out = append(out, c)
		out = append(out, commands(c)...)
	}
	return out
}

// visibleChildren are n's commands (and branching arguments) shown in --help.
func visibleChildren(n *kong.Node) []*kong.Node {
	var out []*kong.Node
	for _, c := range n.Children {
		if !c.Hidden {
			out = append(out, c)
		}
	}
	return out
}

// visibleFlags are n's own flags shown in --help, without its ancestors'.
func visibleFlags(n *kong.Node) []*kong.Flag {
	var out []*kong.Flag
	for _, f := range n.Flags {
		if !f.Hidden {
			out = append(out, f)
		}
	}
	return out
}

// inheritedFlags are the visible flags a command line at n accepts: n's
// own and its ancestors', nearest first.
func inheritedFlags(n *kong.Node) []*kong.Flag {
	var out []*kong.Flag
	for p := n; p != nil; p = p.Parent {
		out = append(out, visibleFlags(p)...)
	}
	return out
}

// path is n's command words after the application name ("gen", "fleet merge").
func path(n *kong.Node) []string {
	var words []string
	for p := n; p != nil && p.Type != kong.ApplicationNode; p = p.Parent {
		words = append([]string{p.Name}, words...)
	}
	return words
}

// takesValue says whether a flag consumes an argument.
func takesValue(f *kong.Flag) bool { return !f.IsBool() && !f.IsCounter() }

// valueKind says what a flag's value is, for completion.
type valueKind int

const (
	valueNone valueKind = iota // a switch, takes no value
	valueWord                  // free text
	valueEnum                  // one of f.EnumSlice()
	valueFile                  // a file name
	valueDir                   // a directory name
)

// kindOf is what a flag's value is: its value's kind, or a file or a
// directory as its placeholder says.
func kindOf(f *kong.Flag) valueKind {
	if !takesValue(f) {
		return valueNone
	}
	switch kind := kindOfValue(f.Value); {
	case kind == valueEnum || kind == valueDir:
		return kind
	case f.PlaceHolder == "DIR":
		return valueDir
	case kind == valueFile || f.PlaceHolder == "FILE":
		return valueFile
	}
	return valueWord
}

// flagNames are the spellings of f on a command line: -s, --name, its
// aliases and, for a negatable flag, --no-name.
func flagNames(f *kong.Flag) []string {
	var names []string
	if f.Short != 0 {
		names = append(names, "-"+string(f.Short))
	}
	names = append(names, "--"+f.Name)
	for _, a := range f.Aliases {
		names = append(names, "--"+a)
	}
	if neg := negation(f); neg != "" {
		names = append(names, neg)
	}
	return names
}

// negation is the flag that sets a negatable flag false (--no-name, or
// the name its tag gives), else "".
func negation(f *kong.Flag) string {
	switch f.Tag.Negatable {
	case "":
		return ""
	case "_": // kong's mark for the default, --no-<name>
		return "--no-" + f.Name
	}
	return "--" + f.Tag.Negatable
}

// placeholder is the word that stands for a flag's value in the man page.
func placeholder(f *kong.Flag) string {
	switch {
	case f.PlaceHolder != "":
		return f.PlaceHolder
	case f.Enum != "":
		return strings.Join(f.EnumSlice(), "|")
	case f.IsMap():
		return "KEY=VALUE"
	}
	return strings.ToUpper(f.Name)
}

// oneLine is a help text on one line, as completions show it.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
