package docgen

import (
	"bufio"
	"io"
	"strings"

	"github.com/alecthomas/kong"
)

// Page is what a man page needs beyond the model.
type Page struct {
	Version string    // shown in the footer, e.g. "slurm-mig v1.2.0"
	Manual  string    // the header's centre, e.g. "User Commands"
	Extra   []Section // sections after COMMANDS (EXIT STATUS, SEE ALSO, ...)
}

// Section is a man page section of plain text: blank lines part paragraphs,
// lines starting with a space are shown as typed, and a line followed by one
// starting with ": " is a term that the lines after it describe.
type Section struct {
	Title string
	Text  string
}

// Sections reads sections from text in which each starts with a line
// "## Title"; what stands before the first title is ignored.
func Sections(text string) []Section {
	var out []Section
	for _, line := range strings.SplitAfter(text, "\n") {
		if title, ok := strings.CutPrefix(line, "## "); ok {
			out = append(out, Section{Title: strings.TrimSpace(title)})
		} else if len(out) > 0 {
			out[len(out)-1].Text += line
		}
	}
	for i := range out {
		out[i].Text = strings.TrimSpace(out[i].Text)
	}
	return out
}

// Man writes a section 1 man page in roff (man macros): NAME, SYNOPSIS,
// DESCRIPTION, OPTIONS (the application's flags), COMMANDS (each visible
// command with its own flags and arguments), then page.Extra.
func Man(w io.Writer, app *kong.Application, page Page) error {
	bw := bufio.NewWriter(w)
	m := &roff{w: bw}
	name := app.Name
	m.macro("TH", strings.ToUpper(name), "1", "", page.Version, page.Manual)
	m.macro("SH", "NAME")
	m.text(name + " - " + firstSentence(app.Help))

	m.macro("SH", "SYNOPSIS")
	if len(visibleChildren(app.Node)) > 0 {
		m.line(`\fB` + esc(name) + `\fR [\fIoptions\fR] \fIcommand\fR [\fIcommand options\fR]`)
	} else {
		m.line(`\fB` + esc(name) + `\fR [\fIoptions\fR]`)
	}

	m.macro("SH", "DESCRIPTION")
	m.paragraphs(app.Help)
	if app.Detail != "" {
		m.macro("PP")
		m.paragraphs(app.Detail)
	}

	m.macro("SH", "OPTIONS")
	m.flags(visibleFlags(app.Node))

	if cmds := commands(app.Node); len(cmds) > 0 {
		m.macro("SH", "COMMANDS")
		m.text("Every command also takes the options above.")
		for _, c := range cmds {
			m.command(name, c)
		}
	}
	for _, s := range page.Extra {
		m.macro("SH", strings.ToUpper(s.Title))
		m.paragraphs(s.Text)
	}
	return bw.Flush()
}

func (m *roff) command(app string, c *kong.Node) {
	syn := `\fB` + esc(app+" "+strings.Join(path(c), " ")) + `\fR`
	if fl := visibleFlags(c); len(fl) > 0 {
		syn += ` [\fIoptions\fR]`
	}
	for _, p := range c.Positional {
		arg := `\fI` + esc(p.Name) + `\fR`
		if p.IsCumulative() {
			arg += " ..."
		}
		if !p.Required {
			arg = "[" + arg + "]"
		}
		syn += " " + arg
	}
	if len(visibleChildren(c)) > 0 {
		syn += ` \fIcommand\fR`
	}
	m.w.WriteString(".SS " + syn + "\n")
	m.paragraphs(c.Help)
	if c.Detail != "" {
		m.macro("PP")
		m.paragraphs(c.Detail)
	}
	for _, p := range c.Positional {
		m.macro("TP")
		m.line(`\fI` + esc(p.Name) + `\fR`)
		m.paragraphs(kong.DefaultHelpValueFormatter(p))
	}
	m.flags(visibleFlags(c))
}

func (m *roff) flags(flags []*kong.Flag) {
	for _, f := range flags {
		m.macro("TP")
		var names []string
		for _, n := range flagNames(f) {
			names = append(names, `\fB`+esc(n)+`\fR`)
		}
		head := strings.Join(names, ", ")
		if takesValue(f) {
			head += `=\fI` + esc(placeholder(f)) + `\fR`
		}
		m.line(head)
		help := kong.DefaultHelpValueFormatter(f.Value) // as --help: with its $ENV
		if f.HasDefault && f.Default != "" && takesValue(f) {
			help += " Default: " + f.Default + "."
		}
		m.paragraphs(help)
	}
}

// roff writes man macros and escaped text.
type roff struct{ w *bufio.Writer }

// macro writes .NAME with its arguments quoted.
func (m *roff) macro(name string, args ...string) {
	m.w.WriteString("." + name)
	for _, a := range args {
		m.w.WriteString(` "` + strings.ReplaceAll(esc(a), `"`, `\(dq`) + `"`)
	}
	m.w.WriteString("\n")
}

// line writes one line of already escaped roff, guarding a leading control
// character.
func (m *roff) line(s string) {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	m.w.WriteString(s + "\n")
}

// text writes plain text, filled.
func (m *roff) text(s string) {
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		m.line(esc(strings.TrimSpace(l)))
	}
}

// paragraphs writes plain text as Section describes it, a term starting a
// tagged paragraph (.TP) that the next term, or a blank line before other
// text, ends.
func (m *roff) paragraphs(s string) {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	verbatim := false
	for i, l := range lines {
		switch {
		case strings.TrimSpace(l) == "":
			if verbatim {
				m.macro("EE")
				verbatim = false
			}
			if i+1 < len(lines) && !isTerm(lines, i+1) { // .TP starts its own paragraph
				m.macro("PP")
			}
		case strings.HasPrefix(l, " "):
			if !verbatim {
				m.macro("EX")
				verbatim = true
			}
			m.line(esc(l))
		default:
			if verbatim {
				m.macro("EE")
				verbatim = false
			}
			switch {
			case isTerm(lines, i):
				m.macro("TP")
				m.line(`\fB` + esc(strings.TrimSpace(l)) + `\fR`)
			case strings.HasPrefix(l, ": "):
				m.line(esc(strings.TrimSpace(l[2:])))
			default:
				m.line(esc(strings.TrimSpace(l)))
			}
		}
	}
	if verbatim {
		m.macro("EE")
	}
}

// isTerm says whether lines[i] is a term: text followed by a line that
// starts with ": ".
func isTerm(lines []string, i int) bool {
	l := lines[i]
	return strings.TrimSpace(l) != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, ": ") &&
		i+1 < len(lines) && strings.HasPrefix(lines[i+1], ": ")
}

// esc escapes text for roff: backslashes and hyphens (a plain '-' may
// print as a Unicode hyphen, which a reader cannot paste into a shell).
func esc(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}

// firstSentence is a help text's first sentence, without its full stop,
// for the NAME line.
func firstSentence(s string) string {
	s = oneLine(s)
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, ".")
}
