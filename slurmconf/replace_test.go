package slurmconf

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/fixture"
)

// header takes a first line "# mine ..." for a writer's header.
func header(num int, line string) bool { return num == 1 && strings.HasPrefix(line, "# mine ") }

// The writer's own lines are read back as records; blank lines and its
// header are nothing.
func TestReadOwnGpuRecords(t *testing.T) {
	dir := fixture.Tree(t, map[string]string{
		"n1.conf":  "# mine v1\n\nNodeName=n1 Name=gpu Type=a File=/dev/nvidia0\nnodename=\"n1\" name=GPU type=b \\\n multiplefiles=/dev/nvidia1,/dev/x\nNodeName=n[1] Name=gpu File=/dev/nvidia[2-3]\n",
		"all.conf": "# mine v2\r\nName=gpu Type=a File=/dev/nvidia0\r\n",
	})
	recs, err := ReadOwnGpuRecords(filepath.Join(dir, "n1.conf"), "n1", header)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Pos[len(dir)+1:]+" "+r.GresRecord.String())
	}
	want := []string{
		"n1.conf:3 NodeName=n1 Name=gpu Type=a File=/dev/nvidia0",
		"n1.conf:4 NodeName=n1 Name=GPU Type=b MultipleFiles=/dev/nvidia1,/dev/x",
		"n1.conf:6 NodeName=n[1] Name=gpu File=/dev/nvidia[2-3]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if recs, err := ReadOwnGpuRecords(filepath.Join(dir, "all.conf"), "", header); err != nil || len(recs) != 1 {
		t.Errorf("records for every node: %v, %v", recs, err)
	}
}

// Every other line is refused, the first of the file, with what it is.
func TestReadOwnGpuRecordsRefusesForeignLines(t *testing.T) {
	const own = "NodeName=n1 Name=gpu File=/dev/nvidia0\n"
	for _, c := range []struct {
		node, data, pos, what string
	}{
		{"n1", own + "NodeName=n1 Name=shard Count=64 File=/dev/nvidia0\n", "2", "a Name=shard line"},
		{"n1", own + "NodeName=n1 Name=mps Count=700\n", "2", "a Name=mps line"},
		{"n1", "Name=nic Count=2\n" + own, "1", "a Name=nic line"},
		{"n1", own + "NodeName=n2 Name=gpu File=/dev/nvidia0\n", "2", "a line of NodeName=n2"},
		{"n1", own + "NodeName=n[1-2] Name=gpu File=/dev/nvidia1\n", "2", "a line of NodeName=n[1-2]"},
		{"n1", own + "Name=gpu File=/dev/nvidia1\n", "2", "a line for every node (no NodeName=)"},
		{"", "Name=gpu File=/dev/nvidia1\n" + own, "2", "a line of NodeName=n1"},
		{"n1", "AutoDetect=off\n" + own, "1", "an AutoDetect= setting"},
		{"n1", "NodeName=n1 AutoDetect=nvml Name=gpu File=/dev/nvidia0\n", "1", "an AutoDetect= setting"},
		{"n1", own + "Include other.conf\n", "2", "an Include"},
		{"n1", own + "NodeName=n1 File=/dev/nvidia1\n", "2", "a line without Name="},
		// Comments: any but the header, alone or after a record, and
		// the header only at the top.
		{"n1", "# mine v1\n# by hand\n" + own, "2", "a comment"},
		{"n1", own + "# mine v1\n", "2", "a comment"},
		{"n1", "\n# mine v1\n" + own, "2", "a comment"},
		{"n1", "NodeName=n1 Name=gpu File=/dev/nvidia0 # the A100\n", "1", "a comment"},
		{"n1", "NodeName=n1 Name=gpu \\\n File=/dev/nvidia0 # x\n", "2", "a comment"},
		// The first line at fault is named, comment or record.
		{"n1", own + "Name=nic Count=1\n# note\n", "2", "a Name=nic line"},
		{"n1", own + "# note\nName=nic Count=1\n", "2", "a comment"},
	} {
		dir := fixture.Tree(t, map[string]string{"gres.conf": c.data})
		path := filepath.Join(dir, "gres.conf")
		recs, err := ReadOwnGpuRecords(path, c.node, header)
		var fl *ForeignLine
		if !errors.As(err, &fl) || fl.Pos != path+":"+c.pos || fl.What != c.what {
			t.Errorf("node %q, %q: %v, %v; want %s:%s: %s", c.node, c.data, recs, err, path, c.pos, c.what)
		}
	}
}

// A line that cannot be read is an error naming it, not a foreign line.
func TestReadOwnGpuRecordsBadLines(t *testing.T) {
	for _, data := range []string{
		"NodeName=n1 Name=gpu File=/dev/nvidia0 Typo=x\n",
		"NodeName=n[1 Name=gpu File=/dev/nvidia0\n",
		"NodeName=n1 Name=gpu File=\"/dev/nvidia0\n",
		"NodeName=n1 Name=gpu Count=3 File=/dev/nvidia0\n",
	} {
		dir := fixture.Tree(t, map[string]string{"gres.conf": data})
		path := filepath.Join(dir, "gres.conf")
		_, err := ReadOwnGpuRecords(path, "n1", header)
		var fl *ForeignLine
		if err == nil || errors.As(err, &fl) || !strings.HasPrefix(err.Error(), path+":1: ") {
			t.Errorf("%q: %v, want an error naming %s:1", data, err, path)
		}
	}
}

// A writer of whole files (merge) writes its comments anywhere and the
// records of its GRES for any nodes; any other line is foreign.
func TestForeignGresLine(t *testing.T) {
	own := func(num int, line string) bool { return strings.HasPrefix(line, "# mine ") }
	names := map[string]bool{"gpu": true, "shard": true}
	const ok = "# mine 1\nNodeName=a[1-4] Name=gpu File=/dev/nvidia0\n\n# mine 2\nNodeName=b Name=SHARD Count=8\n"
	read := func(data string) (string, string, error) {
		path := filepath.Join(fixture.Tree(t, map[string]string{"gres.conf": data}), "gres.conf")
		got, err := ForeignGresLine(path, own, names)
		return path, got, err
	}
	if _, got, err := read(ok); err != nil || got != ok {
		t.Errorf("its own lines: %q, %v", got, err)
	}
	for _, c := range []struct{ data, line, what string }{
		{ok + "# by hand\n", "6", "a comment"},
		{ok + "Name=mps Count=100\n", "6", "a Name=mps line"},
		{"AutoDetect=off\n" + ok, "1", "an AutoDetect= setting"},
		{ok + "include x.conf\n", "6", "an Include"},
		{"NodeName=a1 Name=gpu File=/dev/nvidia0 # mine\n", "1", "a comment"},
	} {
		var fl *ForeignLine
		if path, _, err := read(c.data); !errors.As(err, &fl) || fl.Pos != path+":"+c.line || fl.What != c.what {
			t.Errorf("%q: %v; want line %s: %s", c.data, err, c.line, c.what)
		}
	}
	if path, _, err := read("NodeName=a Name=gpu Typo=1\n"); err == nil || !strings.HasPrefix(err.Error(), path+":1: unknown") {
		t.Errorf("an unreadable line: %v", err)
	}
}

// node -o's own line is a line of its node with its keys, whatever their
// values; merge's lines are lines of any nodes with NodeName= and Gres=.
// Anything else is foreign.
func TestForeignNodeLine(t *testing.T) {
	n1 := func(node string) bool { return node == "n1" }
	keys := []string{"NodeName", "Gres"}
	for _, c := range []struct{ data, pos, what string }{
		{"NodeName=n1 Gres=gpu:1\n\nnodename=n1 gres=\"gpu:2\"\n", "", ""},
		{"NodeName=n1 CPUs=4 Gres=gpu:1\n", "1", "a CPUs= on the line of NodeName=n1"},
		{"NodeName=n2 Gres=gpu:1\n", "1", "a line of NodeName=n2"},
		{"Gres=gpu:1\n", "1", "a line without NodeName="},
		{"# n1\nNodeName=n1 Gres=gpu:1\n", "1", "a comment"},
		{"Include nodes.conf\n", "1", "an Include"},
	} {
		dir := fixture.Tree(t, map[string]string{"node.conf": c.data})
		path := filepath.Join(dir, "node.conf")
		err := ForeignNodeLine(path, n1, keys)
		var fl *ForeignLine
		switch {
		case c.what == "" && err != nil:
			t.Errorf("%q: %v", c.data, err)
		case c.what != "" && (!errors.As(err, &fl) || fl.Pos != path+":"+c.pos || fl.What != c.what):
			t.Errorf("%q: %v; want %s:%s: %s", c.data, err, path, c.pos, c.what)
		}
	}
	dir := fixture.Tree(t, map[string]string{"none.conf": "Gres=gpu:1\n", "any.conf": "NodeName=a[1-4] Gres=gpu:1\nNodeName=b Gres=gpu:2\n", "bad.conf": "NodeName=n1 x\n"})
	if err := ForeignNodeLine(filepath.Join(dir, "none.conf"), func(node string) bool { return node == "" }, []string{"Gres"}); err != nil {
		t.Errorf("a line without NodeName= for one without: %v", err)
	}
	if err := ForeignNodeLine(filepath.Join(dir, "any.conf"), func(node string) bool { return node != "" }, keys); err != nil {
		t.Errorf("lines of any nodes: %v", err)
	}
	if err := ForeignNodeLine(filepath.Join(dir, "bad.conf"), n1, keys); err == nil || !strings.HasSuffix(err.Error(), `"x" is not a key=value pair`) {
		t.Errorf("a bare word: %v", err)
	}
}
