package slurmconf

import (
	"slices"
	"strings"
)

// OtherNodes are the names a config's NodeName= lines give other than the
// node's, said when none names it: most often the node is named otherwise
// (gpu01.cluster.example), and slurmd, matching exactly, misses it too.
type OtherNodes struct {
	// Names are the NodeName= values as written, each once, in the
	// order first read: at most maxOtherNodes, More set when there were
	// more.
	Names []string
	More  bool
	// Alias is a name there that is the node's in another form: the
	// same part before the first '.', with or without a domain.
	Alias string
}

// maxOtherNodes bounds OtherNodes.Names: enough to show which names a
// file uses, never a cluster's worth.
const maxOtherNodes = 4

// note notes the NodeName= hostlist of a line that does not name node. It
// looks for an alias of node only where just one of the two has a domain,
// so a cluster's file of short names is never expanded twice.
func (o *OtherNodes) note(nodes, node string) error {
	switch {
	case slices.Contains(o.Names, nodes):
	case len(o.Names) < maxOtherNodes:
		o.Names = append(o.Names, nodes)
	default:
		o.More = true
	}
	if o.Alias != "" || node == "" || strings.Contains(nodes, ".") == strings.Contains(node, ".") {
		return nil
	}
	names, err := ExpandHostlist(nodes)
	if err != nil {
		return err // a name without '[' or ',' that is still no hostlist: hostlistHas compared it whole
	}
	short, _, _ := strings.Cut(node, ".")
	for _, n := range names {
		if s, _, _ := strings.Cut(n, "."); s == short {
			o.Alias = n
			break
		}
	}
	return nil
}

// String lists the names: "gpu01, gpu[02-04] and others".
func (o *OtherNodes) String() string {
	s := strings.Join(o.Names, ", ")
	if o.More {
		s += " and others"
	}
	return s
}

// Said is what a message that no line names node adds: the names the
// lines do name, and the alias among them. Empty when there were none.
func (o *OtherNodes) Said(node string) string {
	if len(o.Names) == 0 {
		return ""
	}
	s := "; they name " + o.String()
	if o.Alias != "" {
		s += ". " + o.Alias + " is " + node + " by another name, and Slurm matches node names exactly"
	}
	return s
}
