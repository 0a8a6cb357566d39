package fleetplan

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// maxAssignBytes bounds an assignment file: a line a node of a large
// fleet is well under a megabyte.
const maxAssignBytes = 16 << 20

// Assign says which config of the mig-parted file each node gets: the
// one its line of the assignment file names, or else the default.
type Assign struct {
	cfg     *migplan.Config
	deflt   *migplan.Selected
	file    string
	byNode  map[string]assigned
	lines   []assignLine
	configs map[string]*migplan.Selected
	names   *slurmconf.NameBudget // the run's, shared with --hardware
}

// Names is the run's budget of hostlist names, which the assignment
// file's hostlists count against, and --hardware's too.
func (a *Assign) Names() *slurmconf.NameBudget { return a.names }

// assigned is a node's config and the line of the assignment file that
// gives it.
type assigned struct {
	sel  *migplan.Selected
	line int
}

// assignLine is a line of the assignment file, so that one that names a
// node of no snapshot can be told.
type assignLine struct {
	num   int
	nodes string
}

// NewAssign gives every node the config named deflt of cfg.
func NewAssign(cfg *migplan.Config, deflt string) (*Assign, error) {
	sel, err := cfg.Select(deflt)
	if err != nil {
		return nil, err
	}
	return &Assign{cfg: cfg, deflt: sel, configs: map[string]*migplan.Selected{deflt: sel}, names: slurmconf.NewNameBudget()}, nil
}

// Read reads an assignment file, each line giving a node or hostlist a named
// mig-parted config instead of the default, with blank and # comment lines.
// A node twice, an unknown config or a bad line is an error naming the line.
func (a *Assign) Read(path string) error {
	data, err := fileio.ReadFile(path, maxAssignBytes, "an assignment file")
	if err != nil {
		return err
	}
	a.file, a.byNode = path, map[string]assigned{}
	for i, line := range strings.Split(string(data), "\n") {
		num := i + 1
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return fmt.Errorf("%s:%d: want a node or hostlist and a config name, got %q", path, num, strings.TrimSpace(line))
		}
		sel, err := a.config(f[1])
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, num, err)
		}
		nodes, err := a.names.Expand(f[0])
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, num, err)
		}
		for _, n := range nodes {
			if prev, dup := a.byNode[n]; dup {
				return fmt.Errorf("%s:%d: node %s is assigned twice (first at line %d)", path, num, n, prev.line)
			}
			a.byNode[n] = assigned{sel, num}
		}
		a.lines = append(a.lines, assignLine{num: num, nodes: f[0]})
	}
	return nil
}

// config selects a config by name, once a name.
func (a *Assign) config(name string) (*migplan.Selected, error) {
	if sel, ok := a.configs[name]; ok {
		return sel, nil
	}
	sel, err := a.cfg.Select(name)
	if err != nil {
		return nil, err
	}
	a.configs[name] = sel
	return sel, nil
}

// For is the config node gets.
func (a *Assign) For(node string) *migplan.Selected {
	if as, ok := a.byNode[node]; ok {
		return as.sel
	}
	return a.deflt
}

// checkGiven refuses an assignment line naming a node no snapshot is of (a
// typo, a missing snapshot), which would leave the node out of the lines
// printed, and so out of the slurm.conf made of them.
func (a *Assign) checkGiven(nodes map[string]bool) error {
	for _, l := range a.lines {
		names, _ := slurmconf.ExpandHostlist(l.nodes) // Read expanded it
		var missing []string
		for _, n := range names {
			if !nodes[n] {
				missing = append(missing, n)
			}
		}
		switch {
		case len(missing) == len(names):
			return fmt.Errorf("%s:%d: no snapshot given is of %s", a.file, l.num, l.nodes)
		case len(missing) > 0:
			return fmt.Errorf("%s:%d: no snapshot given is of %s (of %s)", a.file, l.num, slurmconf.CompressHostlist(missing), l.nodes)
		}
	}
	return nil
}
