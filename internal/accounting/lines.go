package accounting

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Node is a node and the gpu types of its devices (NodeTypes).
type Node struct {
	Name  string
	Types []Type
}

// Options are the site's choices.
type Options struct {
	Basis   Basis
	Weights GPUWeights
}

// Lines are the accounting lines for a set of nodes.
type Lines struct {
	// TRES is AccountingStorageTRES's value: the site's own items, then
	// gres/gpu and every gpu type of the nodes it lacks.
	TRES string `json:"accounting_storage_tres"`
	// Partitions are the TRESBillingWeights of each partition holding
	// the nodes; without a slurm.conf, one PartitionName=DEFAULT line.
	Partitions []Partition `json:"partitions"`
	// Billing is what one device of each type bills, the type's share
	// times its GPU's weight, by type, in the order first met.
	Billing []Billing `json:"billing"`
	// Unpartitioned are nodes no partition of the slurm.conf holds.
	Unpartitioned []string `json:"unpartitioned,omitempty"`
	// Max says the weights are written for PriorityFlags=MAX_TRES.
	Max bool `json:"max_tres,omitempty"`
}

// Partition is one partition's new TRESBillingWeights.
type Partition struct {
	Name    string `json:"partition"`
	Weights string `json:"tres_billing_weights"`
	Pos     string `json:"pos,omitempty"` // file:line of its PartitionName= line
}

// Billing is what one device of a type bills.
type Billing struct {
	Type    string `json:"type"`
	Model   string `json:"model"`
	Share   string `json:"share"` // 1/7
	Billing string `json:"billing"`
	bill    *big.Rat
}

// Make works out the accounting lines for nodes under conf (as read by
// slurmconf.ReadAccounting; nil: one PartitionName=DEFAULT line, CPU=1).
// A type two GPUs bill differently is an error: Slurm has one weight a type.
func Make(nodes []Node, o Options, conf *slurmconf.Accounting) (*Lines, error) {
	if o.Basis == "" {
		o.Basis = Compute
	}
	bills, order, err := billings(nodes, o)
	if err != nil {
		return nil, err
	}
	l := &Lines{}
	for _, name := range order {
		l.Billing = append(l.Billing, *bills[name])
	}
	var have []string
	if conf != nil {
		have = splitList(conf.TRES)
		l.Max = hasFlag(conf.PriorityFlags, "max_tres") // MAX_TRES_GRES sums gres: not this
	}
	l.TRES = strings.Join(addTRES(have, order, bills), ",")
	if conf == nil {
		w, err := weights(nil, false, l.Billing, false)
		if err != nil {
			return nil, err
		}
		l.Partitions = []Partition{{Name: "DEFAULT", Weights: w}}
		return l, nil
	}
	inSome := map[string]bool{}
	for _, p := range conf.Partitions {
		var mine []Billing
		got := map[string]bool{}
		holds, err := p.Members()
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if !holds(n.Name) {
				continue
			}
			inSome[n.Name] = true
			for _, t := range n.Types {
				if k := strings.ToLower(t.Name); !got[k] {
					got[k] = true
					mine = append(mine, *bills[k])
				}
			}
		}
		if len(mine) == 0 {
			continue
		}
		w, err := weights(splitList(p.Weights), p.HasWeights, mine, l.Max)
		if err != nil {
			return nil, fmt.Errorf("%s: PartitionName=%s: TRESBillingWeights: %w", p.Pos, p.Name, err)
		}
		l.Partitions = append(l.Partitions, Partition{Name: p.Name, Weights: w, Pos: p.Pos})
	}
	for _, n := range nodes {
		if !inSome[n.Name] {
			l.Unpartitioned = append(l.Unpartitioned, n.Name)
		}
	}
	return l, nil
}

// billings are what a device of each type of the nodes bills, by type
// (lower case, as Slurm compares TRES names), and the types in the order
// first met.
func billings(nodes []Node, o Options) (map[string]*Billing, []string, error) {
	bills := map[string]*Billing{}
	where := map[string]string{}
	var order []string
	for _, n := range nodes {
		for _, t := range n.Types {
			w, err := o.Weights.Of(t.Model)
			if err != nil {
				return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
			}
			share := t.Share(o.Basis)
			bill := new(big.Rat).Mul(w, share)
			k := strings.ToLower(t.Name)
			if b, ok := bills[k]; ok {
				if b.bill.Cmp(bill) != 0 {
					return nil, nil, advice.Wrap(fmt.Errorf("type %s bills %s on node %s (%s of a %s GPU) but %s on node %s (%s of a %s GPU): one type name must be one size",
						t.Name, formatWeight(b.bill), where[k], b.Share, b.Model, formatWeight(bill), n.Name, share.RatString(), t.Model), advice.TypeMap)
				}
				continue
			}
			bills[k] = &Billing{Type: t.Name, Model: t.Model, Share: share.RatString(), Billing: formatWeight(bill), bill: bill}
			where[k] = n.Name
			order = append(order, k)
		}
	}
	return bills, order, nil
}

// addTRES is AccountingStorageTRES's items have with gres/gpu and the
// types' gres/gpu:<type> added where missing (compared without case, as
// Slurm compares TRES names).
func addTRES(have, order []string, bills map[string]*Billing) []string {
	out := slices.Clone(have)
	add := func(item string) {
		if !slices.ContainsFunc(out, func(s string) bool { return strings.EqualFold(s, item) }) {
			out = append(out, item)
		}
	}
	add("gres/gpu")
	for _, k := range order {
		add("gres/gpu:" + bills[k].Type)
	}
	return out
}

// weights is a partition's new TRESBillingWeights: its non-gpu items (CPU=1,
// Slurm's unweighted billing, if it had none at all), then GRES/gpu and each
// type, which keeps its old weight unless these nodes bill it anew.
func weights(have []string, had bool, mine []Billing, max bool) (string, error) {
	var keep []string
	base := new(big.Rat)
	type typed struct {
		name string
		bill *big.Rat
	}
	var types []typed
	var old []typed
	for _, item := range have {
		key, val, _ := strings.Cut(item, "=")
		lk := strings.ToLower(strings.TrimSpace(key))
		if lk != "gres/gpu" && !strings.HasPrefix(lk, "gres/gpu:") {
			keep = append(keep, item)
			continue
		}
		r, ok := new(big.Rat).SetString(strings.TrimSpace(val))
		if !ok {
			return "", fmt.Errorf("%s: not a number slurm-mig can add to", item)
		}
		if lk == "gres/gpu" {
			base = r
			continue
		}
		old = append(old, typed{key[len("gres/gpu:"):], r})
	}
	if !had {
		keep = []string{"CPU=1"}
	}
	for _, t := range old {
		bill := t.bill
		if !max {
			bill = new(big.Rat).Add(base, t.bill)
		}
		types = append(types, typed{t.name, bill})
	}
	for _, b := range mine {
		i := slices.IndexFunc(types, func(t typed) bool { return strings.EqualFold(t.name, b.Type) })
		if i >= 0 {
			types[i] = typed{b.Type, b.bill}
		} else {
			types = append(types, typed{b.Type, b.bill})
		}
	}
	low := types[0].bill
	for _, t := range types[1:] {
		if t.bill.Cmp(low) < 0 {
			low = t.bill
		}
	}
	items := append(keep, "GRES/gpu="+formatWeight(low))
	for _, t := range types {
		w := t.bill
		if !max {
			w = new(big.Rat).Sub(t.bill, low)
		}
		items = append(items, "GRES/gpu:"+t.name+"="+formatWeight(w))
	}
	return strings.Join(items, ","), nil
}

func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func hasFlag(flags, flag string) bool {
	for _, f := range splitList(flags) {
		if strings.EqualFold(f, flag) {
			return true
		}
	}
	return false
}

func sorted(s []string) []string { slices.Sort(s); return s }

func strconvFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
