package slurmconf_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// FuzzRecordReader: a RecordReader that has read other files before (and
// shares their records with lines that read the same apart from
// NodeName=) reads a file exactly as a fresh one does; and the records it
// gives a node are those ReadGresConf, slurmd's view of one node, gives it.
func FuzzRecordReader(f *testing.F) {
	for _, s := range txtarSeeds(f, isConfSeed) {
		f.Add(s)
	}
	f.Add("NodeName=n1 Name=gpu File=/dev/a\nName=gpu NodeName=n2 File=/dev/a\n  NodeName=\"n3\"   Name=gpu File=/dev/a # c\n")
	f.Add("Name=gpu File=/dev/a NodeName=n[1-2]\nName=gpu File=/dev/a\nNodeName=n1 Name=gpu File=/dev/a NodeName=n2\n")
	dir := confDir(f, incGres)
	var shared slurmconf.RecordReader // across inputs: its records stay
	f.Fuzz(func(t *testing.T, data string) {
		if !confinedIncludes(data) {
			return
		}
		path := writeConf(t, dir, "gres.conf", data)
		got, errShared := shared.Read(path)
		var fresh slurmconf.RecordReader
		want, errFresh := fresh.Read(path)
		if (errShared == nil) != (errFresh == nil) || (errFresh != nil && errShared.Error() != errFresh.Error()) {
			t.Fatalf("a used reader says %v, a fresh one %v", errShared, errFresh)
		}
		if errFresh != nil {
			return
		}
		type line struct {
			Nodes string
			Num   int
			Rec   slurmconf.GresRecord
			Text  string
		}
		flat := func(ls []slurmconf.RecordLine) []line {
			var out []line
			for _, l := range ls {
				out = append(out, line{l.Nodes, l.Num, l.Record.GresRecord, l.Record.Text})
			}
			return out
		}
		if diff := cmp.Diff(flat(want), flat(got)); diff != "" {
			t.Fatalf("a used reader reads differently (-fresh +used):\n%s", diff)
		}
		nodes := map[string]bool{}
		for _, l := range want {
			names, err := slurmconf.ExpandHostlist(l.Nodes)
			if err != nil {
				return // ReadGresConf refuses the line; RecordReader leaves hostlists to its caller
			}
			for _, n := range names {
				nodes[n] = true
			}
		}
		for node := range nodes {
			conf, err := slurmconf.ReadGresConf(path, node)
			if err != nil {
				if strings.Contains(err.Error(), "GRES units") {
					continue // a bound on one node that a file-wide reader has not
				}
				t.Fatalf("RecordReader read it, ReadGresConf for %s: %v", node, err)
			}
			var fromConf, fromReader []slurmconf.GresRecord
			for _, r := range conf.GresRecords() {
				r.NodeName = ""
				fromConf = append(fromConf, r)
			}
			for _, l := range want {
				names, _ := slurmconf.ExpandHostlist(l.Nodes)
				if l.Nodes == "" || slices.Contains(names, node) {
					fromReader = append(fromReader, l.Record.GresRecord)
				}
			}
			if diff := cmp.Diff(fromConf, fromReader); diff != "" {
				t.Fatalf("%s's records (-ReadGresConf +RecordReader):\n%s", node, diff)
			}
		}
	})
}
