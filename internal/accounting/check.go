package accounting

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Check warns, where a partition weighs a GRES/gpu TRES, of gres/gpu or a
// declared type that AccountingStorageTRES does not track, a weight
// slurmctld would refuse, and partition weights missing a type they hold.
func Check(nodes []slurmconf.SlurmNode, a *slurmconf.Accounting) []slurmconf.Problem {
	bills := false
	for _, p := range a.Partitions {
		for _, item := range splitList(p.Weights) {
			if isGpuWeight(item) {
				bills = true
			}
		}
	}
	if !bills {
		return nil
	}
	tracked := map[string]bool{}
	for _, item := range splitList(a.TRES) {
		tracked[strings.ToLower(item)] = true
	}
	var out []slurmconf.Problem
	warn := func(pos, format string, args ...any) {
		out = append(out, slurmconf.Problem{Pos: pos, Severity: slurmconf.Warning, Message: fmt.Sprintf(format, args...)})
	}
	tresPos := a.TRESPos
	if tresPos == "" {
		tresPos = "AccountingStorageTRES (not set)"
	}
	if !tracked["gres/gpu"] {
		warn(tresPos, "AccountingStorageTRES lacks gres/gpu, which the partitions' TRESBillingWeights weigh: slurmctld refuses a weight of a TRES it does not track, and sacct shows no GPU of any job")
	}
	type decl struct {
		typ, nodes, pos string
		first           string // the line's first node, which stands for its nodes
	}
	var decls []decl
	seen := map[string]bool{}
	for _, n := range nodes {
		counts, err := slurmconf.ParseGresList(n.Gres)
		if err != nil {
			continue // check's own reading of the node line says so
		}
		first := firstNode(n.Nodes)
		for _, c := range counts {
			if !strings.EqualFold(c.Name, "gpu") || c.Type == "" {
				continue
			}
			decls = append(decls, decl{c.Type, n.Nodes, n.Pos, first})
			k := strings.ToLower(c.Type)
			if !tracked["gres/gpu:"+k] && !seen[k] {
				seen[k] = true
				warn(n.Pos, "NodeName=%s declares gpu type %s, which AccountingStorageTRES (%s) does not track: sacct records its jobs as gres/gpu only, and no partition can weigh it; a job on it is billed the GRES/gpu weight, what any GPU bills",
					n.Nodes, c.Type, tresPos)
			}
		}
	}
	for _, p := range a.Partitions {
		weights := map[string]string{}
		for _, item := range splitList(p.Weights) {
			k, v, _ := strings.Cut(item, "=")
			k = strings.ToLower(strings.TrimSpace(k))
			weights[k] = v
			if isGpuWeight(item) && k != "gres/gpu" && !tracked[k] {
				warn(p.Pos, "PartitionName=%s weighs %s, which AccountingStorageTRES does not track: slurmctld does not start (\"TRES weight ... is not a configured TRES type\", then \"failed to parse tres weights str\")",
					p.Name, strings.TrimSpace(item[:strings.IndexByte(item+"=", '=')]))
			}
		}
		missing := map[string]bool{}
		var list []string
		holds, err := p.Members()
		if err != nil {
			continue // a partition no hostlist names holds none of these
		}
		for _, d := range decls {
			k := strings.ToLower(d.typ)
			if missing[k] || weights["gres/gpu:"+k] != "" {
				continue
			}
			if !holds(d.first) {
				continue
			}
			missing[k] = true
			list = append(list, d.typ)
		}
		if len(list) == 0 {
			continue
		}
		if !p.HasWeights {
			warn(p.Pos, "PartitionName=%s has no TRESBillingWeights: it bills CPUs only, and a job on %s there nothing for its GPU",
				p.Name, strings.Join(list, ", "))
			continue
		}
		billed := "nothing for its GPU, only its other TRES: GRES/gpu has no weight either"
		if w := weights["gres/gpu"]; w != "" {
			billed = "the GRES/gpu weight, " + w + ", what every GPU of the partition bills, whatever its size"
		}
		warn(p.Pos, "PartitionName=%s weighs no GRES/gpu:%s: a job on %s there is billed %s",
			p.Name, strings.Join(list, ", GRES/gpu:"), oneOf(list), billed)
	}
	return out
}

func isGpuWeight(item string) bool {
	k, _, _ := strings.Cut(item, "=")
	k = strings.ToLower(strings.TrimSpace(k))
	return k == "gres/gpu" || strings.HasPrefix(k, "gres/gpu:")
}

// firstNode is a hostlist's first node, which stands for the line's
// nodes: partitions take nodes by hostlist, and lines of one Gres=
// rarely straddle two partitions differently.
func firstNode(hostlist string) string {
	names, err := slurmconf.ExpandHostlist(hostlist)
	if err != nil || len(names) == 0 {
		return hostlist
	}
	return names[0]
}

func oneOf(types []string) string {
	if len(types) == 1 {
		return types[0]
	}
	return "one of them"
}
