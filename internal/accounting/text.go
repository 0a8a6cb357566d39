package accounting

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// WriteText prints the lines as slurm.conf has them, after a comment per
// type with what one device of it bills.
func (l *Lines) WriteText(w io.Writer) error {
	var b strings.Builder
	form := "sum"
	if l.Max {
		form = "PriorityFlags=MAX_TRES"
	}
	fmt.Fprintf(&b, "# billing of one device (share of its GPU x the GPU's weight; %s):\n", form)
	for _, t := range l.Billing {
		fmt.Fprintf(&b, "#   %s: %s of %s = %s\n", t.Type, t.Share, t.Model, t.Billing)
	}
	fmt.Fprintf(&b, "AccountingStorageTRES=%s\n", l.TRES)
	for _, p := range l.Partitions {
		fmt.Fprintf(&b, "PartitionName=%s TRESBillingWeights=%s\n", p.Name, p.Weights)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the lines as one JSON object.
func (l *Lines) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(l)
}

// Weights are the partitions' new weights by name, as
// slurmconf.SetAccounting takes them.
func (l *Lines) Weights() map[string]string {
	m := make(map[string]string, len(l.Partitions))
	for _, p := range l.Partitions {
		m[p.Name] = p.Weights
	}
	return m
}

// Differs says whether conf lacks the lines: its AccountingStorageTRES
// or a partition's TRESBillingWeights are not theirs.
func (l *Lines) Differs(conf *slurmconf.Accounting) bool {
	if conf.TRES != l.TRES {
		return true
	}
	have := map[string]string{}
	for _, p := range conf.Partitions {
		have[p.Name] = p.Weights
	}
	for _, p := range l.Partitions {
		if have[p.Name] != p.Weights {
			return true
		}
	}
	return false
}
