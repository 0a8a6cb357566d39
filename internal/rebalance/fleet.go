package rebalance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Evaluator works out, with migplan, the configs each node may take and
// the Gres= counts each gives it, as plan prints them. Nodes whose GPUs
// are alike (the same models, profile tables and layouts) are one kind,
// worked out once: a fleet of 10,000 nodes has a handful of kinds.
type Evaluator struct {
	Configs []*migplan.Selected
	Gres    gresgen.Options
	kinds   map[string]*evaluated
}

type evaluated struct {
	current []slurmconf.GresCount
	options *Options
}

// Node is what the evaluator makes of one node's model: its counts now
// and its options. An error other than a config's refusal (a type name
// that clashes) is returned.
func (e *Evaluator) Node(n *model.Node) ([]slurmconf.GresCount, *Options, error) {
	key := nodeKind(n)
	if k, ok := e.kinds[key]; ok {
		return k.current, k.options, nil
	}
	per, err := gresgen.GPUCounts(n, e.Gres)
	if err != nil {
		return nil, nil, err
	}
	k := &evaluated{current: gresgen.SumCounts(per), options: &Options{}}
	for _, sel := range e.Configs {
		plan, err := migplan.Make(n, sel, func(error) {})
		var refusal *migplan.Refusal
		switch {
		case errors.As(err, &refusal):
			k.options.Refused = append(k.options.Refused, Refused{Config: sel.Name, Why: refusal.Error()})
			continue
		case err != nil:
			return nil, nil, err
		}
		slurm, err := plan.Counts("", e.Gres)
		if err != nil {
			return nil, nil, err
		}
		k.options.Configs = append(k.options.Configs, Option{Config: sel.Name, Counts: countsOf(slurm)})
	}
	if e.kinds == nil {
		e.kinds = map[string]*evaluated{}
	}
	e.kinds[key] = k
	return k.current, k.options, nil
}

// countsOf are plan's node counts, summed over its GPUs.
func countsOf(s *migplan.Slurm) []slurmconf.GresCount {
	per := make([][]slurmconf.GresCount, len(s.GPUs))
	for i, g := range s.GPUs {
		for _, c := range g.Gres {
			per[i] = append(per[i], slurmconf.GresCount{Name: "gpu", Type: c.Type, Count: c.Count})
		}
	}
	return gresgen.SumCounts(per)
}

// nodeKind is what decides what migplan and gresgen make of a node: for
// each GPU its index, model, PCI id, MIG mode, MIG devices' profiles and
// profile table (every field that plan reads).
func nodeKind(n *model.Node) string {
	// Appended by hand, not with fmt: this runs once for each node of
	// the fleet, and fmt took most of the time spent outside JSON.
	b := make([]byte, 0, 4096)
	num := func(v int) { b = strconv.AppendInt(b, int64(v), 10); b = append(b, ',') }
	str := func(v string) { b = append(b, v...); b = append(b, ',') }
	for _, g := range n.GPUs {
		num(g.Index)
		str(g.Name)
		str(g.PCIDeviceID)
		b = strconv.AppendBool(b, g.MigEnabled)
		b = strconv.AppendBool(b, g.MigPending)
		b = append(b, '|')
		for _, m := range g.MigDevices {
			str(m.Profile)
			num(m.GISlices)
			b = strconv.AppendUint(b, m.MemoryMiB, 10)
			b = append(b, ';')
		}
		b = append(b, '|')
		for _, p := range g.MigProfiles {
			num(p.ID)
			str(p.Name)
			num(p.Instances)
			b = strconv.AppendUint(b, p.MemoryMiB, 10)
			b = append(b, ',')
			num(p.Slices)
			for _, pl := range p.Placements {
				num(pl.Start)
				num(pl.Size)
			}
			b = append(b, '/')
			for _, ci := range p.CIProfiles {
				num(ci.ID)
				str(ci.Name)
				num(ci.Slices)
				num(ci.Instances)
			}
			b = append(b, ';')
		}
		b = append(b, '\n')
	}
	return string(b)
}

// Fleet is the nodes Propose weighs: one per snapshot, named by the short
// name of its host, in the state slurmctld gives it. A node slurmctld
// does not know is held. Two snapshots of one node are an error naming
// both files.
func Fleet(snaps []*model.Node, states map[string]NodeState, e *Evaluator) ([]Node, error) {
	nodes := make([]Node, 0, len(snaps))
	from := map[string]string{}
	for _, s := range snaps {
		name, _, _ := strings.Cut(s.Hostname, ".")
		if err := slurmconf.CheckNodeName(name); err != nil {
			return nil, fmt.Errorf("%s: host %q: %v", s.Snapshot, s.Hostname, err)
		}
		if prev, dup := from[name]; dup {
			return nil, fmt.Errorf("%s: node %s is given twice (also by %s)", s.Snapshot, name, prev)
		}
		from[name] = s.Snapshot
		cur, opts, err := e.Node(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Snapshot, err)
		}
		n := Node{Name: name, Current: cur, Options: opts}
		if st, ok := states[name]; ok {
			n.Why = st.Why()
		} else {
			n.Why = "slurmctld does not know it (not in the node states)"
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// ReadSnapshots reads the snapshots args name: files as given, a
// directory's *.json files in name order. It reads several at a time: a
// fleet's snapshots are most of what rebalance reads (10,000 nodes of 8
// GPUs are about 500 MB of JSON, indented as snapshot writes it). An
// error names the file; with several bad files it is the first in the
// order given.
func ReadSnapshots(args []string) ([]*model.Node, error) {
	var files []string
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, arg)
			continue
		}
		found, err := filepath.Glob(filepath.Join(arg, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no *.json snapshots in this directory", arg)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	snaps := make([]*model.Node, len(files))
	errs := make([]error, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				snaps[i], errs[i] = model.LoadSnapshot(files[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return snaps, nil
}
