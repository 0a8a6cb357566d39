package slurmconf

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadGresRecords(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"ok.conf": `# gen's header
NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-1]
nodename=n[2-3] name=gpu type=a100_1g.10gb \
  MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap[66-67]
Name=gpu Type=x Count=2
`,
		"include.conf": "NodeName=n1 Name=gpu File=/dev/nvidia0\nInclude other.conf\n",
		"auto.conf":    "AutoDetect=off\nNodeName=n1 Name=gpu File=/dev/nvidia0\n",
		"autorec.conf": "NodeName=n1 Name=gpu File=/dev/nvidia0 AutoDetect=nvml\n",
		"bad.conf":     "NodeName=n1 Name=gpu File=/dev/nvidia0\nNodeName=n1 Name=gpu MultipleFiles=/dev/nvidia0\n",
	})
	recs, err := ReadGresRecords(filepath.Join(dir, "ok.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, strings.TrimPrefix(r.Pos, dir+"/")+" ["+r.Nodes+"] "+r.GresRecord.String())
	}
	want := []string{
		"ok.conf:2 [n1] NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-1]",
		"ok.conf:3 [n[2-3]] NodeName=n[2-3] Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap66,/dev/nvidia-caps/nvidia-cap67",
		"ok.conf:5 [] Name=gpu Type=x Count=2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}

	for name, wantErr := range map[string]string{
		"include.conf": "include.conf:2: Include is not followed here: give the included file itself",
		"auto.conf":    "auto.conf:1: AutoDetect= is a setting of the node reading gres.conf, not a record",
		"autorec.conf": "autorec.conf:1: AutoDetect= is a setting",
		"bad.conf":     "bad.conf:2: MultipleFiles= needs at least two files",
		"none.conf":    "none.conf: no such file or directory",
	} {
		_, err := ReadGresRecords(filepath.Join(dir, name))
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ReadGresRecords(%s): %v, want an error with %q", name, err, wantErr)
		}
	}
}

// ReadGresRecords and ReadGresConf read the same records: those of one
// node are the same whichever reader picks them out.
func TestReadGresRecordsAgreesWithReadGresConf(t *testing.T) {
	data := "NodeName=n[1-3] Name=gpu Type=a File=/dev/nvidia0\nNodeName=n2 Name=gpu Type=b File=/dev/nvidia[1-2] Cores=0-3\nNodeName=n1,n3 Name=gpu Type=c Count=4\n"
	path := filepath.Join(writeFiles(t, map[string]string{"gres.conf": data}), "gres.conf")
	all, err := ReadGresRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"n1", "n2", "n3"} {
		conf, err := ReadGresConf(path, node)
		if err != nil {
			t.Fatal(err)
		}
		var mine []ParsedRecord
		for _, r := range all {
			if ok, _ := hostlistHas(r.Nodes, node); ok {
				mine = append(mine, r)
			}
		}
		if diff := cmp.Diff(conf.Records, mine, cmp.AllowUnexported(ParsedRecord{})); diff != "" {
			t.Errorf("%s (-ReadGresConf +ReadGresRecords):\n%s", node, diff)
		}
	}
}
