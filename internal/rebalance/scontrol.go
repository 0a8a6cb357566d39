package rebalance

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// NodesFormat is the command whose output ParseNodes reads, one node a line.
// --details adds GresUsed=, the one field that says which GPUs jobs hold:
// AllocTRES= counts gres/gpu only where AccountingStorageTRES lists it.
const NodesFormat = "scontrol --details --oneliner show node"

// NodeState is what slurmctld says of a node: whether rebalance may
// change it.
type NodeState struct {
	Name  string
	State string // as scontrol prints it: IDLE, MIXED, IDLE+DRAIN, ...
	// GPUsInUse is how many gpu GRES are allocated to running jobs
	// (GresUsed's counts, or AllocTRES's gres/gpu if that says more).
	GPUsInUse int
	// Used is GresUsed's gpu counts by type: which types are busy.
	Used []slurmconf.GresCount
	// Gres is the gpu items of the node's Gres=: what slurm.conf gives it
	// now. Nodes of a --hardware kind take their counts from it.
	Gres []slurmconf.GresCount
	Line int
}

// RunsJobs says whether any job runs on the node, a CPU job included.
func (s *NodeState) RunsJobs() bool { return slurmconf.HasStateWord(s.State, "MIXED", "ALLOCATED") }

// OutOfService says, from its state alone, why no job starts on the node or
// why rebalance leaves it alone ("" when neither): a node completing a job,
// or held for a reservation or planned job, is in service but left as it is.
func (s *NodeState) OutOfService() string {
	switch {
	case slurmconf.NotResponding(s.State):
		return "not responding (" + s.State + ")"
	case slurmconf.OutOfService(s.State) || slurmconf.HasStateWord(s.State, "COMPLETING", "RESERVED", "PLANNED", "BLOCKED"):
		return "state " + s.State
	}
	return ""
}

// Why says why rebalance may not change the node, or "" when it may: its
// GPUs are all idle and the node is in service.
func (s *NodeState) Why() string {
	if s.GPUsInUse > 0 {
		return fmt.Sprintf("%d GPUs in use by running jobs", s.GPUsInUse)
	}
	return s.OutOfService()
}

// ParseNodes reads the output of NodesFormat, the file named file, into
// each node's state by name. A line without NodeName= or State= is an
// error naming the file and line.
func ParseNodes(file string, data []byte) (map[string]NodeState, error) {
	out := map[string]NodeState{}
	fields := nodeFields{"NodeName": nil, "State": nil, "Gres": nil, "GresUsed": nil, "AllocTRES": nil}
	err := eachLine(file, data, func(num int, line string) error {
		splitFields(line, fields)
		s := NodeState{Name: fields.get("NodeName"), State: fields.get("State"), Line: num}
		if s.Name == "" || s.State == "" {
			return fmt.Errorf("%s:%d: no NodeName= or State= (want the output of %s)", file, num, NodesFormat)
		}
		if fields["GresUsed"] == nil && strings.Contains(fields.get("Gres"), "gpu") {
			// Without it a busy node would look idle.
			return fmt.Errorf("%s:%d: node %s has GPUs and no GresUsed= (want the output of %s)", file, num, s.Name, NodesFormat)
		}
		used, err := gpusInUse(fields)
		if err != nil {
			return fmt.Errorf("%s:%d: node %s: %v", file, num, s.Name, err)
		}
		s.GPUsInUse = used
		s.Used = usedByType(fields.get("GresUsed"))
		if s.Gres, err = slurmconf.GresTypeCounts(fields.get("Gres"), "gpu"); err != nil {
			return fmt.Errorf("%s:%d: node %s: %v", file, num, s.Name, err)
		}
		if prev, dup := out[s.Name]; dup {
			return fmt.Errorf("%s:%d: node %s is given twice (first at line %d)", file, num, s.Name, prev.Line)
		}
		out[s.Name] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nodeFields are the fields of a scontrol line that ParseNodes reads,
// each with whether the line has it.
type nodeFields map[string]*string

// get is the field's value, "" when the line lacks it.
func (f nodeFields) get(k string) string {
	if p := f[k]; p != nil {
		return *p
	}
	return ""
}

// splitFields sets the wanted fields of a line of scontrol's key=value
// fields; a word without "=" belongs to the value before it (Reason=, OS=).
// The first of a name wins: an admin's Reason= text may hold State=IDLE.
func splitFields(line string, want nodeFields) {
	for k := range want {
		want[k] = nil
	}
	var last *string
	for len(line) > 0 {
		line = strings.TrimLeft(line, " \t")
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		w := line[:end]
		line = line[end:]
		if w == "" {
			continue
		}
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" || strings.ContainsAny(k, "[]:(") {
			if last != nil {
				*last += " " + w
			}
			continue
		}
		last = nil
		if p, wanted := want[k]; wanted && p == nil {
			p = new(string)
			*p = v
			want[k] = p
			last = p
		}
	}
}

// usedByType is GresUsed's typed gpu counts, "gpu:TYPE:N(IDX:...)".
func usedByType(gresUsed string) []slurmconf.GresCount {
	var out []slurmconf.GresCount
	for _, item := range slurmconf.SplitGresList(gresUsed) {
		item, _, _ = strings.Cut(item, "(")
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" || len(parts) != 3 {
			continue
		}
		var n int
		if _, err := fmt.Sscan(parts[2], &n); err != nil || n == 0 {
			continue
		}
		out = append(out, slurmconf.GresCount{Name: "gpu", Type: parts[1], Count: n})
	}
	return out
}

// gpusInUse counts the gpu GRES a node has allocated: the larger of
// AllocTRES's "gres/gpu=N" (its typed items count the same devices again)
// and GresUsed's "gpu:TYPE:N(IDX:...)", so a node is busy if either says so.
func gpusInUse(fields nodeFields) (int, error) {
	alloc := 0
	for _, item := range strings.Split(fields.get("AllocTRES"), ",") {
		k, v, ok := strings.Cut(item, "=")
		if !ok || k != "gres/gpu" {
			continue
		}
		if _, err := fmt.Sscan(v, &alloc); err != nil {
			return 0, fmt.Errorf("AllocTRES %s: %q is not a count", k, v)
		}
	}
	used := 0
	for _, item := range slurmconf.SplitGresList(fields.get("GresUsed")) {
		item, _, _ = strings.Cut(item, "(")
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" || len(parts) < 2 {
			continue
		}
		var n int
		if _, err := fmt.Sscan(parts[len(parts)-1], &n); err != nil || n < 0 {
			if len(parts) == 2 {
				continue // gpu:TYPE with no count: not a use
			}
			// A count that does not read could hide a busy node.
			return 0, fmt.Errorf("GresUsed %s: %q is not a count", item, parts[len(parts)-1])
		}
		used += n
	}
	return max(alloc, used), nil
}
