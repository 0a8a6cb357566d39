package slurmconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// TestSetAccounting: only the two keys' values change, every other byte
// (quotes, comments, other keys, CRLF, continued lines) stays; a key
// missing is added; a partition not on a line of its own is refused.
func TestSetAccounting(t *testing.T) {
	in := "ClusterName=c\r\n" +
		"AccountingStorageTRES=gres/gpu   # first\n" +
		"AccountingStorageTRES=license/x  # the last wins\n" +
		"PartitionName=DEFAULT TRESBillingWeights=CPU=9\n" +
		"PartitionName=a Nodes=h[1-2] TRESBillingWeights=\"CPU=2\" MaxTime=1-0 # a\n" +
		"PartitionName=b Nodes=h3 \\\n" +
		"  State=UP   # continued\n" +
		"PartitionName=c Nodes=c1\n"
	got, err := SetAccounting(in, "s", "license/x,gres/gpu", map[string]string{"a": "CPU=2,GRES/gpu=1", "b": "CPU=1,GRES/gpu=7"})
	if err != nil {
		t.Fatal(err)
	}
	want := "ClusterName=c\r\n" +
		"AccountingStorageTRES=gres/gpu   # first\n" +
		"AccountingStorageTRES=license/x,gres/gpu  # the last wins\n" +
		"PartitionName=DEFAULT TRESBillingWeights=CPU=9\n" +
		"PartitionName=a Nodes=h[1-2] TRESBillingWeights=\"CPU=2,GRES/gpu=1\" MaxTime=1-0 # a\n" +
		"PartitionName=b Nodes=h3 \\\n" +
		"  State=UP TRESBillingWeights=CPU=1,GRES/gpu=7   # continued\n" +
		"PartitionName=c Nodes=c1\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	got, err = SetAccounting("PartitionName=a Nodes=x", "s", "gres/gpu", map[string]string{"a": "CPU=1"})
	if err != nil || got != "PartitionName=a Nodes=x TRESBillingWeights=CPU=1\nAccountingStorageTRES=gres/gpu\n" {
		t.Errorf("added keys: %q, %v", got, err)
	}
	if _, err := SetAccounting(in, "s", "gres/gpu", map[string]string{"z": "CPU=1"}); err == nil || !strings.Contains(err.Error(), "no PartitionName=z line") {
		t.Errorf("missing partition: %v", err)
	}
}

// TestReadAccounting: the last AccountingStorageTRES and PriorityFlags,
// partitions with their weights in force (a DEFAULT's where they have
// none), across an Include; and SetAccountingFile refuses a TRES set in
// the Included file.
func TestReadAccounting(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "slurm.conf")
	inc := filepath.Join(dir, "acct.conf")
	os.WriteFile(main, []byte("PriorityFlags=MAX_TRES\nPartitionName=DEFAULT TRESBillingWeights=CPU=3\nPartitionName=a Nodes=ALL\nInclude acct.conf\nPartitionName=b Nodes=h[1-2] TRESBillingWeights=CPU=1\n"), 0o644)
	os.WriteFile(inc, []byte("AccountingStorageTRES=gres/gpu\n"), 0o644)
	a, err := ReadAccounting(main)
	if err != nil {
		t.Fatal(err)
	}
	if a.TRES != "gres/gpu" || a.TRESPos != inc+":1" || a.PriorityFlags != "MAX_TRES" || len(a.Partitions) != 2 {
		t.Fatalf("%+v", a)
	}
	if p := a.Partitions[0]; p.Name != "a" || p.Weights != "CPU=3" || !p.HasWeights {
		t.Errorf("a: %+v", p)
	}
	for node, want := range map[string]bool{"h2": true, "h3": false} {
		if in, err := a.Partitions[1].Holds(node); err != nil || in != want {
			t.Errorf("b holds %s: %v %v", node, in, err)
		}
	}
	if in, _ := a.Partitions[0].Holds("anything"); !in {
		t.Error("Nodes=ALL holds no node")
	}
	_, err = SetAccountingFile(main, "gres/gpu", nil)
	var h advice.Hinter
	if want := inc + ":1: AccountingStorageTRES is set in an Included file, which is not edited"; !errors.As(err, &h) || err.Error() != want || h.Hint() != "; set it there by hand" {
		t.Errorf("TRES in an Include: %v; want %q with its hint", err, want)
	}
	_, err = SetAccounting("AccountingStorageTRES=gres/gpu,\\\nlicense/x\n", "s", "gres/gpu", nil)
	if want := "s:1: the AccountingStorageTRES= value is split across lines"; !errors.As(err, &h) || err.Error() != want || h.Hint() != "; edit it by hand" {
		t.Errorf("a value split across lines: %v; want %q with its hint", err, want)
	}
}
