package docgen

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/alecthomas/kong"
)

// Bash writes a bash completion script for app, needing no bash-completion
// package: commands, each one's flags and its ancestors', enum values, and
// file or directory names where a flag takes one.
func Bash(w io.Writer, app *kong.Application) error {
	bw := bufio.NewWriter(w)
	fn := "_" + ident(app.Name)
	nodes := append([]*kong.Node{app.Node}, commands(app.Node)...)

	fmt.Fprintf(bw, "# bash completion for %s, generated from its command-line model.\n\n", app.Name)

	fmt.Fprintf(bw, "%s_commands() { # the commands below the command path $1\n\tcase $1 in\n", fn)
	for _, n := range nodes {
		if cs := visibleChildren(n); len(cs) > 0 {
			var names []string
			for _, c := range cs {
				names = append(names, c.Name)
			}
			fmt.Fprintf(bw, "\t%s) echo %s ;;\n", shQuote(strings.Join(path(n), " ")), shQuote(strings.Join(names, " ")))
		}
	}
	fmt.Fprintf(bw, "\tesac\n}\n\n")

	fmt.Fprintf(bw, "%s_flags() { # the flags accepted at the command path $1\n\tcase $1 in\n", fn)
	for _, n := range nodes {
		var names []string
		for _, f := range inheritedFlags(n) {
			names = append(names, flagNames(f)...)
		}
		fmt.Fprintf(bw, "\t%s) echo %s ;;\n", shQuote(strings.Join(path(n), " ")), shQuote(strings.Join(names, " ")))
	}
	fmt.Fprintf(bw, "\tesac\n}\n\n")

	fmt.Fprintf(bw, "%s_value() { # complete the value of flag $2 at command path $1; fails for a flag that takes none\n", fn)
	fmt.Fprintf(bw, "\tlocal cur=$3\n\tcase \"$1|$2\" in\n")
	for _, n := range nodes {
		p := strings.Join(path(n), " ")
		for _, f := range inheritedFlags(n) {
			kind := kindOf(f)
			if kind == valueNone {
				continue
			}
			var pats []string
			for _, name := range flagNames(f) {
				if name != negation(f) {
					pats = append(pats, shQuote(p+"|"+name))
				}
			}
			fmt.Fprintf(bw, "\t%s) ", strings.Join(pats, " | "))
			bashValue(bw, kind, f.EnumSlice())
			fmt.Fprintf(bw, " ;;\n")
		}
	}
	// A command's first positional argument, keyed by an empty flag.
	for _, n := range nodes {
		if len(n.Positional) == 0 || len(visibleChildren(n)) > 0 {
			continue
		}
		p := n.Positional[0]
		fmt.Fprintf(bw, "\t%s) ", shQuote(strings.Join(path(n), " ")+"|"))
		bashValue(bw, kindOfValue(p), p.EnumSlice())
		fmt.Fprintf(bw, " ;;\n")
	}
	fmt.Fprintf(bw, "\t*) return 1 ;;\n\tesac\n}\n\n")

	fmt.Fprintf(bw, `%[1]s() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local path="" i w skip=""
	# The command path so far: command words, skipping flags and their
	# values (bash splits --flag=value at the '=').
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ -n $skip ]]; then
			skip=""
			[[ $w == "=" ]] && skip=1
			continue
		fi
		case $w in
		-*) COMPREPLY=(); %[1]s_value "$path" "$w" "" && skip=1 ;;
		*) [[ " $(%[1]s_commands "$path") " == *" $w "* ]] && path=${path:+$path }$w ;;
		esac
	done
	if [[ $cur == "=" ]]; then
		cur=""
	elif [[ $prev == "=" ]]; then
		prev=${COMP_WORDS[COMP_CWORD-2]}
	fi
	if [[ $prev == -* ]] && %[1]s_value "$path" "$prev" "$cur"; then
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(%[1]s_flags "$path")" -- "$cur")
	elif ! %[1]s_value "$path" "" "$cur"; then
		mapfile -t COMPREPLY < <(compgen -W "$(%[1]s_commands "$path")" -- "$cur")
	fi
}
complete -F %[1]s %[2]s
`, fn, app.Name)
	return bw.Flush()
}

// bashValue writes the commands that fill COMPREPLY with the values of
// one kind.
func bashValue(w io.Writer, kind valueKind, enum []string) {
	switch kind {
	case valueEnum:
		fmt.Fprintf(w, "mapfile -t COMPREPLY < <(compgen -W %s -- \"$cur\")", shQuote(strings.Join(enum, " ")))
	case valueFile:
		fmt.Fprintf(w, "compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")")
	case valueDir:
		fmt.Fprintf(w, "compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- \"$cur\")")
	default:
		fmt.Fprintf(w, "COMPREPLY=()")
	}
}

// Zsh writes a zsh completion function (#compdef) for app, one _arguments
// call per command.
func Zsh(w io.Writer, app *kong.Application) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "#compdef %s\n# zsh completion for %s, generated from its command-line model.\n", app.Name, app.Name)
	for _, n := range append([]*kong.Node{app.Node}, commands(app.Node)...) {
		fn := "_" + strings.Join(append([]string{app.Name}, path(n)...), "_")
		fmt.Fprintf(bw, "\n%s() {\n", fn)
		children := visibleChildren(n)
		if len(children) > 0 {
			fmt.Fprintf(bw, "\tlocal curcontext=$curcontext state line\n\ttypeset -A opt_args\n\t_arguments -C")
		} else {
			fmt.Fprintf(bw, "\t_arguments")
		}
		for _, f := range inheritedFlags(n) {
			fmt.Fprintf(bw, " \\\n\t\t%s", zshFlag(f))
		}
		for i, p := range n.Positional {
			pos := fmt.Sprint(i + 1)
			if p.IsCumulative() {
				pos = "*"
			}
			fmt.Fprintf(bw, " \\\n\t\t%s", zshQuote(pos+":"+zshEsc(p.Name)+":"+zshAction(kindOfValue(p), p.EnumSlice())))
		}
		if len(children) == 0 {
			fmt.Fprintf(bw, "\n}\n")
			continue
		}
		fmt.Fprintf(bw, " \\\n\t\t'1: :->command' \\\n\t\t'*:: :->args'\n")
		fmt.Fprintf(bw, "\tcase $state in\n\tcommand)\n\t\tlocal -a commands=(\n")
		for _, c := range children {
			fmt.Fprintf(bw, "\t\t\t%s\n", zshQuote(strings.ReplaceAll(c.Name, ":", `\:`)+":"+firstSentence(c.Help)))
		}
		fmt.Fprintf(bw, "\t\t)\n\t\t_describe -t commands %s commands ;;\n", zshQuote(strings.Join(append([]string{app.Name}, path(n)...), " ")+" command"))
		fmt.Fprintf(bw, "\targs)\n\t\tcase $line[1] in\n")
		for _, c := range children {
			fmt.Fprintf(bw, "\t\t%s) %s_%s ;;\n", c.Name, fn, c.Name)
		}
		fmt.Fprintf(bw, "\t\tesac ;;\n\tesac\n}\n")
	}
	fmt.Fprintf(bw, "\n_%s \"$@\"\n", app.Name)
	return bw.Flush()
}

func zshFlag(f *kong.Flag) string {
	desc := "[" + zshEsc(firstSentence(f.Help)) + "]"
	long, short := "--"+f.Name, ""
	if f.Short != 0 {
		short = "-" + string(f.Short)
	}
	value := ""
	if takesValue(f) {
		long += "="
		if short != "" {
			short += "+"
		}
		value = ":" + zshEsc(placeholder(f)) + ":" + zshAction(kindOf(f), f.EnumSlice())
	}
	repeat := ""
	if f.IsCumulative() {
		repeat = "*"
	}
	var specs []string
	switch {
	case f.Name == "help" || f.Name == "version":
		// They end the command line: nothing else after them.
		specs = []string{"(- *)" + long + desc}
		if short != "" {
			specs = []string{"(- *)" + short + desc, "(- *)" + long + desc}
		}
	case short != "":
		excl := "(" + short[:2] + " --" + f.Name + ")"
		if repeat != "" {
			excl = ""
		}
		specs = []string{excl + repeat + short + desc + value, excl + repeat + long + desc + value}
	default:
		specs = []string{repeat + long + desc + value}
	}
	if neg := negation(f); neg != "" {
		specs = append(specs, neg+desc)
	}
	for i, s := range specs {
		specs[i] = zshQuote(s)
	}
	return strings.Join(specs, " \\\n\t\t")
}

func zshAction(kind valueKind, enum []string) string {
	switch kind {
	case valueEnum:
		var words []string
		for _, e := range enum {
			words = append(words, zshEsc(e))
		}
		return "(" + strings.Join(words, " ") + ")"
	case valueFile:
		return "_files"
	case valueDir:
		return "_files -/"
	}
	return " "
}

// kindOfValue is what a value is (a positional argument's, or a flag's
// before its placeholder is read: kindOf).
func kindOfValue(v *kong.Value) valueKind {
	switch {
	case v.Enum != "":
		return valueEnum
	case v.Tag.Type == "existingdir":
		return valueDir
	case v.Tag.Type == "path" || v.Tag.Type == "existingfile":
		return valueFile
	}
	return valueWord
}

// Fish writes fish completions for app: complete -c lines, conditioned
// on the command words already given.
func Fish(w io.Writer, app *kong.Application) error {
	bw := bufio.NewWriter(w)
	c := "complete -c " + app.Name
	fmt.Fprintf(bw, "# fish completion for %s, generated from its command-line model.\n%s -f\n", app.Name, c)
	for _, n := range append([]*kong.Node{app.Node}, commands(app.Node)...) {
		cond := fishSeen(n)
		if children := visibleChildren(n); len(children) > 0 {
			var names []string
			for _, ch := range children {
				names = append(names, ch.Name)
			}
			below := "not __fish_seen_subcommand_from " + strings.Join(names, " ")
			if cond != "" {
				below = cond + "; and " + below
			}
			for _, ch := range children {
				fmt.Fprintf(bw, "%s -n %s -a %s -d %s\n", c, fishQuote(below), fishQuote(ch.Name), fishQuote(firstSentence(ch.Help)))
			}
		}
		if len(n.Positional) > 0 && len(visibleChildren(n)) == 0 {
			p := n.Positional[0]
			line := c + " -n " + fishQuote(cond)
			switch kindOfValue(p) {
			case valueEnum:
				fmt.Fprintf(bw, "%s -x -a %s\n", line, fishQuote(strings.Join(p.EnumSlice(), " ")))
			case valueFile:
				fmt.Fprintf(bw, "%s -F\n", line)
			case valueDir:
				fmt.Fprintf(bw, "%s -x -a '(__fish_complete_directories)'\n", line)
			}
		}
		for _, f := range visibleFlags(n) {
			line := c
			if cond != "" {
				line += " -n " + fishQuote(cond)
			}
			line += " -l " + f.Name
			if f.Short != 0 {
				line += " -s " + string(f.Short)
			}
			switch kindOf(f) {
			case valueEnum:
				line += " -x -a " + fishQuote(strings.Join(f.EnumSlice(), " "))
			case valueFile:
				line += " -r -F"
			case valueDir:
				line += " -x -a '(__fish_complete_directories)'"
			case valueWord:
				line += " -x"
			}
			fmt.Fprintf(bw, "%s -d %s\n", line, fishQuote(firstSentence(f.Help)))
			if neg := negation(f); neg != "" {
				fmt.Fprintf(bw, "%s -l %s -d %s\n", strings.SplitN(line, " -l ", 2)[0], strings.TrimPrefix(neg, "--"), fishQuote(firstSentence(f.Help)))
			}
		}
	}
	return bw.Flush()
}

// fishSeen is the condition that the command words of n were given.
func fishSeen(n *kong.Node) string {
	var conds []string
	for _, word := range path(n) {
		conds = append(conds, "__fish_seen_subcommand_from "+word)
	}
	return strings.Join(conds, "; and ")
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// ident makes a shell function name from a program name.
func ident(s string) string { return nonIdent.ReplaceAllString(s, "_") }

// shQuote quotes s for bash (and fish, which reads '…' the same way
// except for \\ and \').
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func zshQuote(s string) string { return shQuote(s) }

// zshEsc escapes what _arguments reads specially in descriptions and
// messages.
func zshEsc(s string) string {
	return strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
}

func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}
