package drift

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// WriteText prints the comparison for people: per device +/-/~ with the
// file:line of the record in force, per type the counts, then the verdict.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if g := r.GresConf; g != nil {
		for _, p := range g.Problems {
			fmt.Fprintf(&b, "%s\n", p)
		}
		if g.AutoDetect != "" && !strings.EqualFold(g.AutoDetect, "off") {
			fmt.Fprintf(&b, "%s: AutoDetect=%s is in force: slurmd adds what it detects to these lines\n", g.AutoDetectPos, g.AutoDetect)
		}
		if !g.Same {
			writeGresDiff(&b, g, r.Node)
		}
	}
	if s := r.SlurmConf; s != nil && !s.Same {
		fmt.Fprintf(&b, "%s: Gres=%s\n", s.Source, orNone(s.Gres))
		writeCounts(&b, "slurm.conf", s.Counts)
	}
	if s := r.Running; s != nil && !s.Same {
		fmt.Fprintf(&b, "slurmctld: Gres=%s State=%s Reason=%s\n", orNone(s.Gres), orNone(s.State), orNone(s.Reason))
		writeCounts(&b, "slurmctld", s.Counts)
	}
	if st := r.State; st != nil && !st.Same {
		fmt.Fprintf(&b, "device state %s (generation %s, the GPUs' %s):\n", st.Path, orNone(st.Generation), st.Want)
		for _, p := range st.Problems {
			fmt.Fprintf(&b, "  %s\n", p)
		}
	}
	fmt.Fprintln(&b, r.Verdict+r.Hint)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGresDiff(b *strings.Builder, g *GresConfReport, node string) {
	target := "generated for " + node
	if node == "" {
		target = "generated for every node (no NodeName=)"
	}
	state := "in force"
	if g.Missing {
		state = "does not exist yet"
	}
	fmt.Fprintf(b, "--- %s (%s)\n+++ %s\n", g.Path, state, target)
	for _, u := range g.Removed {
		fmt.Fprintf(b, "- %s %s%s\n", slurmconf.GresName(u.Name, u.Type), strings.Join(u.Files, ","), at(u.Pos))
	}
	for _, u := range g.Added {
		fmt.Fprintf(b, "+ %s %s\n", slurmconf.GresName(u.Name, u.Type), strings.Join(u.Files, ","))
	}
	for _, ch := range g.Changed {
		var what []string
		for _, f := range ch.Fields {
			from, to := unitField(ch.From, f), unitField(ch.To, f)
			what = append(what, fmt.Sprintf("%s %s -> %s", f, orNone(from), orNone(to)))
		}
		fmt.Fprintf(b, "~ %s: %s%s\n", strings.Join(ch.Files, ","), strings.Join(what, ", "), at(ch.From.Pos))
	}
	writeCounts(b, "gres.conf", g.Counts)
}

// at is where a record in force stands, after what is said of it.
func at(pos string) string {
	if pos == "" {
		return ""
	}
	return " (" + pos + ")"
}

func writeCounts(b *strings.Builder, what string, counts []slurmconf.CountChange) {
	for _, c := range counts {
		fmt.Fprintf(b, "  count %s: %s %d, generated %d (%+d)\n", slurmconf.GresName(c.Name, c.Type), what, c.Current, c.Generated, c.Generated-c.Current)
	}
}

func unitField(u slurmconf.Unit, field string) string {
	switch field {
	case "type":
		return slurmconf.GresName(u.Name, u.Type)
	case "cores":
		return u.Cores
	case "links":
		return u.Links
	case "flags":
		return u.Flags
	}
	return ""
}

// WriteJSON prints the comparison as indented JSON, for automation.
// Positions of standard input ("<stdin>:3") are written as they are, not
// escaped as for HTML.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	out := *r
	out.Verdict += r.Hint // one line for people, as the text says it
	return enc.Encode(&out)
}
