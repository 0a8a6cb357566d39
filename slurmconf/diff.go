package slurmconf

import (
	"sort"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/cpulist"
)

// Unit is one GRES unit as Slurm counts it: a device with its files, or,
// for records without files, one of Count anonymous units.
type Unit struct {
	Name  string   `json:"name"`
	Type  string   `json:"type,omitempty"`
	Files []string `json:"files,omitempty"`
	Cores string   `json:"cores,omitempty"`
	Links string   `json:"links,omitempty"`
	Flags string   `json:"flags,omitempty"`
	// Pos is file:line of the record the unit was read from; empty for
	// units that were generated.
	Pos string `json:"pos,omitempty"`
}

// SplitUnits splits records into the units Slurm makes of them: one per
// file of File=, one per MultipleFiles= record, Count (default 1) for
// records with no files.
func SplitUnits(recs []GresRecord) ([]Unit, error) {
	return splitUnits(recs, nil)
}

// Units splits the records read into units, each with the file:line of
// its record.
func (c *GresConf) Units() ([]Unit, error) {
	return splitUnits(c.GresRecords(), func(i int) string { return c.Records[i].Pos })
}

// splitUnits is SplitUnits, with pos(i) the position of record i.
func splitUnits(recs []GresRecord, pos func(i int) string) ([]Unit, error) {
	var out []Unit
	for i, r := range recs {
		u := Unit{Name: r.Name, Type: r.Type, Cores: r.Cores, Links: r.Links, Flags: r.Flags}
		if pos != nil {
			u.Pos = pos(i)
		}
		switch {
		case len(r.MultipleFiles) > 0:
			u.Files = append([]string(nil), r.MultipleFiles...)
			out = append(out, u)
		case r.File != "":
			files, err := ExpandHostlist(r.File)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				fu := u
				fu.Files = []string{f}
				out = append(out, fu)
			}
		default:
			n, err := r.Units()
			if err != nil {
				return nil, err
			}
			for j := 0; j < n && j < 1<<16; j++ {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// UnitChange is a device present on both sides whose settings differ.
type UnitChange struct {
	Files  []string `json:"files"`
	From   Unit     `json:"from"`
	To     Unit     `json:"to"`
	Fields []string `json:"fields"` // which settings differ: type, cores, links, flags
}

// CountChange is a (name, type) whose unit count differs.
type CountChange struct {
	Name      string `json:"name"`
	Type      string `json:"type,omitempty"`
	Current   int    `json:"current"`
	Generated int    `json:"generated"`
}

// GresDiff is how generated units differ from the current ones. Devices
// are matched by their set of files, the identity Slurm's cgroups use.
type GresDiff struct {
	Added   []Unit        `json:"added"`
	Removed []Unit        `json:"removed"`
	Changed []UnitChange  `json:"changed"`
	Counts  []CountChange `json:"counts"`
}

// Same reports whether nothing differs.
func (d *GresDiff) Same() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 && len(d.Counts) == 0
}

// DiffUnits compares current (in force) with generated units. Formatting
// does not matter: types and flags compare without case, core lists as
// sets, files as sets.
func DiffUnits(current, generated []Unit) GresDiff {
	d := GresDiff{Added: []Unit{}, Removed: []Unit{}, Changed: []UnitChange{}}
	byFiles := map[string][]int{} // file key -> indices in current
	for i, u := range current {
		if len(u.Files) > 0 {
			k := filesKey(u.Files)
			byFiles[k] = append(byFiles[k], i)
		}
	}
	matched := make([]bool, len(current))
	for _, g := range generated {
		if len(g.Files) == 0 {
			continue
		}
		idx := byFiles[filesKey(g.Files)]
		if len(idx) == 0 {
			d.Added = append(d.Added, g)
			continue
		}
		i := idx[0]
		byFiles[filesKey(g.Files)] = idx[1:]
		matched[i] = true
		if fields := differingFields(current[i], g); len(fields) > 0 {
			d.Changed = append(d.Changed, UnitChange{Files: g.Files, From: current[i], To: g, Fields: fields})
		}
	}
	for i, u := range current {
		if len(u.Files) > 0 && !matched[i] {
			d.Removed = append(d.Removed, u)
		}
	}
	d.Counts = DiffCounts(countUnits(current), countUnits(generated))
	return d
}

// Drains reports whether any change declares more than the node has:
// slurmctld then drains the node (it registers with fewer GRES than its
// NodeName line says). Declaring fewer only leaves devices unused.
func Drains(changes []CountChange) bool {
	for _, c := range changes {
		if c.Current > c.Generated {
			return true
		}
	}
	return false
}

// DiffCounts lists the (name, type) pairs whose counts differ, in the
// order of generated, then those only current has.
func DiffCounts(current, generated []GresCount) []CountChange {
	out := []CountChange{}
	have := map[string]int{}
	for _, c := range current {
		have[countKey(c)] += c.Count
	}
	seen := map[string]bool{}
	for _, g := range generated {
		k := countKey(g)
		seen[k] = true
		if have[k] != g.Count {
			out = append(out, CountChange{Name: g.Name, Type: g.Type, Current: have[k], Generated: g.Count})
		}
	}
	for _, c := range current {
		if k := countKey(c); !seen[k] {
			seen[k] = true
			out = append(out, CountChange{Name: c.Name, Type: c.Type, Current: have[k]})
		}
	}
	return out
}

func countKey(c GresCount) string { return strings.ToLower(c.Name) + ":" + strings.ToLower(c.Type) }

func countUnits(units []Unit) []GresCount {
	var out []GresCount
	for _, u := range units {
		out = addCount(out, GresCount{Name: u.Name, Type: u.Type, Count: 1})
	}
	return out
}

func filesKey(files []string) string {
	s := append([]string(nil), files...)
	sort.Strings(s)
	return strings.Join(s, ",")
}

func differingFields(a, b Unit) []string {
	var out []string
	if !strings.EqualFold(a.Name, b.Name) || !strings.EqualFold(a.Type, b.Type) {
		out = append(out, "type")
	}
	if normalList(a.Cores) != normalList(b.Cores) {
		out = append(out, "cores")
	}
	if strings.TrimSpace(a.Links) != strings.TrimSpace(b.Links) {
		out = append(out, "links")
	}
	if normalFlags(a.Flags) != normalFlags(b.Flags) {
		out = append(out, "flags")
	}
	return out
}

// BareList is a Cores= value without the brackets and blanks slurmd allows
// around its ranges. Not a strings.Replacer: building one costs more than
// the rest of a record's check, which env runs before each task.
func BareList(s string) string {
	if !strings.ContainsAny(s, "[] ") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '[' || r == ']' || r == ' ' {
			return -1
		}
		return r
	}, s)
}

// normalList writes a core list ("0-3,8", "[0-3],8", "0,1,2,3,8") one way.
func normalList(s string) string {
	ids, err := cpulist.Parse(BareList(s))
	if err != nil {
		return s // not a list we understand: compare as written
	}
	return cpulist.Format(ids)
}

func normalFlags(s string) string {
	if s == "" {
		return ""
	}
	f := strings.Split(strings.ToLower(s), ",")
	sort.Strings(f)
	return strings.Join(f, ",")
}
