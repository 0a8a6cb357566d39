// Package slurmconf holds Slurm configuration syntax: gres.conf records and
// the slurm.conf NodeName Gres= list, rendered as Slurm reads them, and
// Slurm's hostlist range syntax.
package slurmconf

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// GresRecord is one gres.conf line; exactly one of File and MultipleFiles
// is set. Each File= file is one unit of the GRES; MultipleFiles= files are
// one unit together (a MIG device's /dev/nvidiaN and its GI and CI caps).
type GresRecord struct {
	NodeName      string // empty: the line applies to every node reading it
	Name          string
	Type          string
	File          string
	MultipleFiles []string
	Count         uint64 // Count=: without files, or a sharing GRES's shares (SharingGres); 0 when not given
	Cores         string // abstract core ids near the device: "0-15"
	Links         string
	Flags         string
}

// Units is how many GRES the record offers Slurm. A File= that is not a
// file range Slurm reads is an error: counting it as one unit would
// declare a device Slurm refuses.
func (r GresRecord) Units() (int, error) {
	switch {
	case len(r.MultipleFiles) > 0:
		return 1, nil
	case r.File != "" && r.Count > 0 && SharingGres(r.Name):
		return int(r.Count), nil // shares of the files' devices
	case r.File != "":
		names, err := ExpandHostlist(r.File)
		if err != nil {
			return 0, fmt.Errorf("File=%s: %v", r.File, err)
		}
		return len(names), nil
	case r.Count > 0:
		return int(r.Count), nil
	}
	return 1, nil
}

// String renders the record as a gres.conf line, keys in Slurm's order.
func (r GresRecord) String() string {
	var b strings.Builder
	if r.NodeName != "" {
		b.WriteString("NodeName=")
		b.WriteString(r.NodeName)
		b.WriteByte(' ')
	}
	b.WriteString("Name=")
	b.WriteString(r.Name)
	if r.Type != "" {
		b.WriteString(" Type=")
		b.WriteString(r.Type)
	}
	if len(r.MultipleFiles) > 0 {
		b.WriteString(" MultipleFiles=")
		b.WriteString(strings.Join(r.MultipleFiles, ","))
	} else if r.File != "" {
		b.WriteString(" File=")
		b.WriteString(r.File)
	}
	if r.Count > 0 && r.File == "" && len(r.MultipleFiles) == 0 {
		b.WriteString(" Count=" + strconv.FormatUint(r.Count, 10))
	}
	for _, kv := range [][2]string{{"Cores", r.Cores}, {"Links", r.Links}, {"Flags", r.Flags}} {
		if kv[1] != "" {
			b.WriteString(" " + kv[0] + "=" + kv[1])
		}
	}
	return b.String()
}

// WriteGresConf writes comment lines (each prefixed with "# ") and then one
// line per record.
func WriteGresConf(w io.Writer, comments []string, recs []GresRecord) error {
	_, err := io.WriteString(w, FormatGresConf(comments, recs))
	return err
}

// FormatGresConf is the text WriteGresConf writes.
func FormatGresConf(comments []string, recs []GresRecord) string {
	var b strings.Builder
	for _, c := range comments {
		b.WriteString("# ")
		b.WriteString(c)
		b.WriteByte('\n')
	}
	for _, r := range recs {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Compact merges records that differ only in a single-file File= into one
// record, at the first one's place, whose File= is a Slurm range
// (/dev/nvidia[0-1]). MultipleFiles= records are kept, each being one unit.
func Compact(recs []GresRecord) []GresRecord {
	type key struct{ node, name, typ, cores, links, flags string }
	files := map[key][]string{}
	var order []key
	out := make([]GresRecord, 0, len(recs))
	slot := map[key]int{} // key -> index in out
	for _, r := range recs {
		if len(r.MultipleFiles) > 0 {
			out = append(out, r)
			continue
		}
		k := key{r.NodeName, r.Name, r.Type, r.Cores, r.Links, r.Flags}
		if _, seen := slot[k]; !seen {
			slot[k] = len(out)
			order = append(order, k)
			out = append(out, r)
		}
		files[k] = append(files[k], r.File)
	}
	for _, k := range order {
		if len(files[k]) > 1 {
			out[slot[k]].File = CompressHostlist(files[k])
		}
	}
	return out
}

// GresCount is one gpu:<type>:<count> item of a slurm.conf Gres= list.
type GresCount struct {
	Name  string
	Type  string
	Count int
}

// SameGresCounts says whether a and b give each type the same count,
// whatever their order; types compare as Slurm compares them, without
// case.
func SameGresCounts(a, b []GresCount) bool {
	m := map[string]int{}
	for _, c := range a {
		m[strings.ToLower(c.Type)] += c.Count
	}
	for _, c := range b {
		m[strings.ToLower(c.Type)] -= c.Count
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

// CountGres totals the units of recs per (name, type), in the order the
// types first appear.
func CountGres(recs []GresRecord) ([]GresCount, error) {
	var counts []GresCount
	at := map[[2]string]int{}
	for _, r := range recs {
		n, err := r.Units()
		if err != nil {
			return nil, err
		}
		k := [2]string{r.Name, r.Type}
		i, ok := at[k]
		if !ok {
			i = len(counts)
			at[k] = i
			counts = append(counts, GresCount{Name: r.Name, Type: r.Type})
		}
		counts[i].Count += n
	}
	return counts, nil
}

// GresList renders counts as a slurm.conf Gres= value:
// gpu:a100:2,gpu:a100_1g.10gb:14.
func GresList(counts []GresCount) string {
	var b strings.Builder
	for i, c := range counts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(GresName(c.Name, c.Type))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(c.Count))
	}
	return b.String()
}

// NodeLine renders the slurm.conf line "NodeName=n1 Gres=gpu:a100:2"; with
// no node it is only "Gres=...", with no counts it has no Gres=. attrs
// (key=value words, as slurmd -C prints them) go between the two.
func NodeLine(node string, counts []GresCount, attrs ...string) string {
	var parts []string
	if node != "" {
		parts = append(parts, "NodeName="+node)
	}
	parts = append(parts, attrs...)
	if len(counts) > 0 {
		parts = append(parts, "Gres="+GresList(counts))
	}
	return strings.Join(parts, " ")
}
