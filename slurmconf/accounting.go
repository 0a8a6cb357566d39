package slurmconf

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// Accounting is how a slurm.conf accounts and bills jobs, as slurmctld
// reads it: the last value of a key wins, and a partition without its own
// TRESBillingWeights takes the last PartitionName=DEFAULT line's before it.
type Accounting struct {
	TRES          string // AccountingStorageTRES, "" when not set
	TRESPos       string // its file:line, "" when not set
	PriorityFlags string
	Partitions    []PartitionConf
}

// PartitionConf is one PartitionName= line (not DEFAULT).
type PartitionConf struct {
	Name  string
	Nodes string // Nodes= as written: hostlists, or ALL
	// Weights are the TRESBillingWeights in force; HasWeights says some
	// are (its own, or a DEFAULT's): without, Slurm bills CPUs.
	Weights    string
	HasWeights bool
	Pos        string // file:line
}

// Holds says whether the partition's Nodes= names node. A name that is
// no hostlist (a NodeSet) holds no node here.
func (p PartitionConf) Holds(node string) (bool, error) {
	for _, part := range SplitGresList(p.Nodes) {
		part = strings.TrimSpace(part)
		if strings.EqualFold(part, "ALL") {
			return true, nil
		}
	}
	ok, err := hostlistHas(p.Nodes, node)
	if err != nil {
		return false, fmt.Errorf("%s: PartitionName=%s: Nodes=: %v", p.Pos, p.Name, err)
	}
	return ok, nil
}

// Members is the partition's Nodes= as a test of node names, expanded
// once: for checking thousands of nodes against it.
func (p PartitionConf) Members() (func(node string) bool, error) {
	for _, part := range SplitGresList(p.Nodes) {
		if strings.EqualFold(strings.TrimSpace(part), "ALL") {
			return func(string) bool { return true }, nil
		}
	}
	names, err := ExpandHostlist(p.Nodes)
	if err != nil {
		return nil, fmt.Errorf("%s: PartitionName=%s: Nodes=: %v", p.Pos, p.Name, err)
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(node string) bool { return set[node] }, nil
}

// ReadAccounting reads the accounting keys of the slurm.conf at path,
// following Includes.
func ReadAccounting(path string) (*Accounting, error) {
	a := &Accounting{}
	var deflt string
	var hasDeflt bool
	var ws []word
	var lineErr error
	err := walkConf(path, nil, func(l *logicalLine, file string) bool {
		if ws, lineErr = lineWords(l, file, ws[:0]); lineErr != nil {
			return false
		}
		if len(ws) == 0 {
			return true
		}
		switch strings.ToLower(ws[0].key) {
		case "accountingstoragetres":
			a.TRES, a.TRESPos = ws[0].value, linePos(file, l)
		case "priorityflags":
			a.PriorityFlags = ws[0].value
		case "partitionname":
			p := PartitionConf{Name: ws[0].value, Pos: linePos(file, l)}
			own, has := "", false
			for _, w := range ws[1:] {
				switch strings.ToLower(w.key) {
				case "nodes":
					p.Nodes = w.value
				case "tresbillingweights":
					own, has = w.value, true
				}
			}
			if strings.EqualFold(p.Name, "DEFAULT") {
				if has {
					deflt, hasDeflt = own, true
				}
				return true
			}
			p.Weights, p.HasWeights = deflt, hasDeflt
			if has {
				p.Weights, p.HasWeights = own, true
			}
			a.Partitions = append(a.Partitions, p)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return a, lineErr
}

// Editable refuses a slurm.conf at path whose AccountingStorageTRES is
// set in an Included file: SetAccounting edits path alone, and a line
// added there would be overridden, or override, by the Included one.
func (a *Accounting) Editable(path string) error {
	if a.TRESPos != "" && a.TRESPos[:strings.LastIndexByte(a.TRESPos, ':')] != path {
		return advice.Hinted(fmt.Errorf("%s: AccountingStorageTRES is set in an Included file, which is not edited", a.TRESPos), "; set it there by hand")
	}
	return nil
}

// SetAccountingFile is the slurm.conf at path with AccountingStorageTRES
// set to tres and each partition of weights (by name) given
// TRESBillingWeights, every other byte kept (SetAccounting).
func SetAccountingFile(path, tres string, weights map[string]string) ([]byte, error) {
	a, err := ReadAccounting(path)
	if err != nil {
		return nil, err
	}
	if err := a.Editable(path); err != nil {
		return nil, err
	}
	data, _, err := readConfInto(path, new([]byte))
	if err != nil {
		return nil, err
	}
	out, err := SetAccounting(data, path, tres, weights)
	return []byte(out), err
}

// SetAccounting returns data, a slurm.conf, with AccountingStorageTRES= set
// to tres and each named partition's TRESBillingWeights= set, every other
// byte kept; a partition not defined in the file itself is an error.
func SetAccounting(data, name, tres string, weights map[string]string) (string, error) {
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	tresAt := -1
	var tresEdit edit
	found := map[string]bool{}
	var lineErr error
	scanLines(data, func(l *logicalLine) bool {
		if _, ok := includeTarget(l.text); ok {
			return true
		}
		ws, err := words(l, nil)
		if err != nil {
			lineErr = fmt.Errorf("%s:%d: %v", name, l.num, err)
			return false
		}
		if len(ws) == 0 {
			return true
		}
		value := func(w word, text string) (edit, error) {
			start := l.fileOffset(w.valStart)
			end := start + (w.valEnd - w.valStart)
			if data[start:end] != l.text[w.valStart:w.valEnd] {
				return edit{}, advice.Hinted(fmt.Errorf("%s:%d: the %s= value is split across lines", name, l.num, w.key), "; edit it by hand")
			}
			return edit{start, end, text}, nil
		}
		switch {
		case strings.EqualFold(ws[0].key, "AccountingStorageTRES"):
			tresEdit, lineErr = value(ws[0], tres)
			tresAt = l.num
		case strings.EqualFold(ws[0].key, "PartitionName"):
			w, ok := weights[ws[0].value]
			if !ok || strings.EqualFold(ws[0].value, "DEFAULT") {
				return true
			}
			found[ws[0].value] = true
			for i := len(ws) - 1; i >= 1; i-- {
				if strings.EqualFold(ws[i].key, "TRESBillingWeights") {
					var e edit
					e, lineErr = value(ws[i], w)
					edits = append(edits, e)
					return lineErr == nil
				}
			}
			last := ws[len(ws)-1]
			at := l.fileOffset(last.end-1) + 1
			edits = append(edits, edit{at, at, " TRESBillingWeights=" + w})
		}
		return lineErr == nil
	})
	if lineErr != nil {
		return "", lineErr
	}
	for p := range weights {
		if !found[p] {
			return "", fmt.Errorf("%s: no PartitionName=%s line (an Included file is not edited)", name, p)
		}
	}
	if tresAt > 0 {
		edits = append(edits, tresEdit)
	}
	var b strings.Builder
	prev := 0
	sortEdits := func() {
		for i := 1; i < len(edits); i++ {
			for j := i; j > 0 && edits[j].start < edits[j-1].start; j-- {
				edits[j], edits[j-1] = edits[j-1], edits[j]
			}
		}
	}
	sortEdits()
	for _, e := range edits {
		b.WriteString(data[prev:e.start])
		b.WriteString(e.text)
		prev = e.end
	}
	b.WriteString(data[prev:])
	out := b.String()
	if tresAt < 0 {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += "AccountingStorageTRES=" + tres + "\n"
	}
	return out, nil
}
