package slurmconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

func TestRecordReader(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"ok.conf": `# gen's header
NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-1]
nodename=n[2-3] name=gpu type=a100_1g.10gb \
  MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap[66-67]
Name=gpu Type=x Count=2
NodeName=n4 Name=gpu Type=a100 File=/dev/nvidia[0-1]
Name=gpu NodeName="n5" Type=a100 File=/dev/nvidia[0-1]
`,
		"other.conf":   "NodeName=n9 Name=gpu Type=a100 File=/dev/nvidia[0-1]\n",
		"include.conf": "NodeName=n1 Name=gpu File=/dev/nvidia0\nInclude other.conf\n",
		"auto.conf":    "AutoDetect=off\nNodeName=n1 Name=gpu File=/dev/nvidia0\n",
		"autorec.conf": "NodeName=n1 Name=gpu File=/dev/nvidia0 AutoDetect=nvml\n",
		"bad.conf":     "NodeName=n1 Name=gpu File=/dev/nvidia0\nNodeName=n1 Name=gpu MultipleFiles=/dev/nvidia0\n",
		"twice.conf":   "NodeName=n1 Name=gpu File=/dev/nvidia0\nNodeName=n1 Name=gpu File=/dev/nvidia0 NodeName=n2\n",
		"binary.conf":  "NodeName=n1 Name=gpu\x00\n",
	})
	var r RecordReader
	lines, err := r.Read(filepath.Join(dir, "ok.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, fmt.Sprintf("%d [%s] #%d %s", l.Num, l.Nodes, l.Record.ID, l.Record.Text))
	}
	want := []string{
		"2 [n1] #0 Name=gpu Type=a100 File=/dev/nvidia[0-1]",
		"3 [n[2-3]] #1 Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap66,/dev/nvidia-caps/nvidia-cap67",
		"5 [] #2 Name=gpu Type=x Count=2",
		"6 [n4] #0 Name=gpu Type=a100 File=/dev/nvidia[0-1]", // n1's line: the same record
		"7 [n5] #3 Name=gpu Type=a100 File=/dev/nvidia[0-1]", // the same, read again (NodeName= not first)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if lines[0].Record != lines[3].Record {
		t.Errorf("lines that differ only in NodeName= do not share their record")
	}
	// A later file's line shares what an earlier file read.
	first := lines[0].Record
	other, err := r.Read(filepath.Join(dir, "other.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if other[0].Record != first || other[0].Nodes != "n9" {
		t.Errorf("other.conf: %+v, want n9 sharing record #%d", other[0], first.ID)
	}

	for name, wantErr := range map[string]string{
		"include.conf": "include.conf:2: Include is not followed here",
		"auto.conf":    "auto.conf:1: AutoDetect= is a setting of the node reading gres.conf, not a record",
		"autorec.conf": "autorec.conf:1: AutoDetect= is a setting",
		"bad.conf":     "bad.conf:2: MultipleFiles= needs at least two files",
		"twice.conf":   "twice.conf:2: NodeName= given twice",
		"binary.conf":  "binary.conf: binary data",
		"none.conf":    "none.conf: no such file or directory",
		".":            ": not a regular file or a pipe",
		"/dev/null":    "/dev/null: not a regular file or a pipe",
	} {
		path := name
		if !filepath.IsAbs(name) {
			path = filepath.Join(dir, name)
		}
		_, err := r.Read(path)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Read(%s): %v, want an error with %q", name, err, wantErr)
		}
		// What the admin can do is the error's hint, apart from its message.
		var h advice.Hinter
		if want := hints[name]; want != "" && (!errors.As(err, &h) || h.Hint() != want || strings.Contains(err.Error(), want)) {
			t.Errorf("Read(%s): %v, want the hint %q apart from the message", name, err, want)
		}
	}
}

// The hints of RecordReader's refusals (advice.Hinter), by file.
var hints = map[string]string{
	"include.conf": ": give the included file itself",
	"auto.conf":    "; set it in the cluster's gres.conf by hand",
	"autorec.conf": "; set it in the cluster's gres.conf by hand",
}

// RecordReader and ReadGresConf read the same records: those of one node
// are the same whichever reader picks them out.
func TestRecordReaderAgreesWithReadGresConf(t *testing.T) {
	data := "NodeName=n[1-3] Name=gpu Type=a File=/dev/nvidia0\nNodeName=n2 Name=gpu Type=b File=/dev/nvidia[1-2] Cores=0-3\nNodeName=n1,n3 Name=gpu Type=c Count=4 Flags=nvidia_gpu_env\n"
	path := filepath.Join(fixture.Tree(t, map[string]string{"gres.conf": data}), "gres.conf")
	var r RecordReader
	all, err := r.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"n1", "n2", "n3"} {
		conf, err := ReadGresConf(path, node)
		if err != nil {
			t.Fatal(err)
		}
		var want, got []GresRecord
		for _, pr := range conf.Records {
			pr.NodeName = ""
			want = append(want, pr.GresRecord)
		}
		for _, l := range all {
			if ok, _ := hostlistHas(l.Nodes, node); ok {
				got = append(got, l.Record.GresRecord)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-ReadGresConf +RecordReader):\n%s", node, diff)
		}
	}
}

// readConfInto reads through the buffer it is given and keeps it.
func TestReadConfIntoKeepsBuffer(t *testing.T) {
	path := filepath.Join(fixture.Tree(t, map[string]string{"a.conf": strings.Repeat("x", 100)}), "a.conf")
	buf := make([]byte, 0, 10)
	got, _, err := readConfInto(path, &buf)
	if err != nil || got != strings.Repeat("x", 100) {
		t.Errorf("readConfInto: %q, %v", got, err)
	}
	if cap(buf) < 101 {
		t.Errorf("buffer not kept: cap %d", cap(buf))
	}
}

// A pipe is read to its end: slurm-mig merge <(ssh gpu01 slurm-mig gen).
func TestRecordReaderReadsAPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "gpu01")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	line := "NodeName=gpu01 Name=gpu Type=a100 File=/dev/nvidia0\n"
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		for range 2000 { // more than a pipe holds at once
			f.WriteString(line)
		}
	}()
	var r RecordReader
	lines, err := r.Read(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2000 || lines[1999].Nodes != "gpu01" || lines[1999].Num != 2000 {
		t.Errorf("read %d lines from the pipe, want 2000", len(lines))
	}
}

// leadingNodeName cuts a line where its words would: the fast path of
// RecordReader must share records exactly as the words do.
func TestLeadingNodeName(t *testing.T) {
	for _, text := range []string{
		"NodeName=n1 Name=gpu File=/dev/x",
		"  nodename=n[1-2]\tName=gpu",
		"NODENAME= Name=gpu",
		"NodeName=n1",
		`NodeName="n1" Name=gpu`,
		`NodeName=n\1 Name=gpu`,
		"Name=gpu NodeName=n1",
		"NodeNames=n1 Name=gpu",
	} {
		l := logicalLine{text: text, num: 1}
		ws, err := words(&l, nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes, rest, ok := leadingNodeName(text)
		w := ws[0]
		first := strings.EqualFold(w.key, "NodeName") && w.value == text[w.valStart:w.valEnd] && !strings.ContainsAny(text[w.start:w.end], `"\`)
		if ok != first {
			t.Errorf("%q: fast path %v, want %v", text, ok, first)
			continue
		}
		if ok && (nodes != w.value || rest != text[w.end:]) {
			t.Errorf("%q: cut into %q and %q, the words into %q and %q", text, nodes, rest, w.value, text[w.end:])
		}
	}
}

// A line whose first key is wrong reads, less a NodeName= word, as the
// record of a line read before with NodeName= first: a reader that looked
// it up took it, where slurmd (and a fresh reader) refuses it. Found by
// FuzzRecordReader.
func TestRecordReaderChecksTheFirstKeyOfASeenRecord(t *testing.T) {
	dir := t.TempDir()
	ok, bad := filepath.Join(dir, "ok.conf"), filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(ok, []byte("NodeName=n1 Type= Name=7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(" Type= Name=7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r RecordReader
	if _, err := r.Read(ok); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(bad); err == nil || !strings.Contains(err.Error(), "a line starts with Name=, NodeName= or AutoDetect=, not Type=") {
		t.Errorf("a line starting with Type=, after a line of the same record with NodeName= first: %v, want it refused", err)
	}
}
