package gresgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// node --update sets Gres= on the node's own line only, and needs the
// node's name.
func TestUpdateSlurmConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slurm.conf")
	conf := "# site\nNodeName=n1 CPUs=4 Gres=gpu:old:1\nNodeName=n2 CPUs=4\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Generate(node(), Options{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.UpdateSlurmConf(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# site\nNodeName=n1 CPUs=4 Gres=gpu:a100:1,gpu:h100_4g.40gb:1,gpu:h100_1g.10gb+me:1\nNodeName=n2 CPUs=4\n"
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	cfg.NodeName = ""
	if _, err := cfg.UpdateSlurmConf(path); err == nil {
		t.Error("no node name: no error")
	}
}

// gen -o leaves a gres.conf whose records are the config's already, as
// diff compares them, whatever its header says: a new build of slurm-mig
// alone must not rewrite every node's file and restart slurmd.
func TestUnchangedComparesRecordsNotHeader(t *testing.T) {
	cfg, err := Generate(node(), Options{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	now := string(cfg.GresConf("v2.0", false))
	dir := t.TempDir()
	for _, c := range []struct {
		name, data string
		same       bool
	}{
		{"same", now, true},
		{"older-build", strings.Replace(now, "slurm-mig v2.0;", "slurm-mig v1.9-3-gdeadbee;", 1), true},
		{"compact", string(cfg.GresConf("v1.0", true)), true},
		{"no-header", now[strings.Index(now, "\nNodeName=n1 Name=")+1:], true},
		{"other-words", strings.ReplaceAll(strings.ReplaceAll(now, "Type=a100", "type=A100"), "NodeName=n1", "NodeName=\"n1\""), true},
		{"header-only", strings.SplitAfterN(now, "\n", 3)[0] + strings.SplitAfterN(now, "\n", 3)[1], false},
		{"one-less", now[:strings.LastIndex(now[:len(now)-1], "\n")+1], false},
		{"retyped", strings.Replace(now, "Type=a100", "Type=a100_80g", 1), false},
		{"flags", strings.Replace(now, "File=/dev/nvidia0", "File=/dev/nvidia0 Flags=nvidia_gpu_env", 1), false},
	} {
		path := filepath.Join(dir, c.name+".conf")
		if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if same, err := cfg.Unchanged(path); err != nil || same != c.same {
			t.Errorf("%s: unchanged %v, %v; want %v\n%s", c.name, same, err, c.same, c.data)
		}
	}
}

// A line gen does not write makes gen -o refuse, naming the line: it
// would lose it.
func TestUnchangedRefusesForeignLines(t *testing.T) {
	cfg, err := Generate(node(), Options{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gres.conf")
	data := string(cfg.GresConf("v1", false)) + "NodeName=n1 Name=shard Count=64\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = cfg.Unchanged(path)
	if want := path + ":6: a Name=shard line, which gen -o does not write: it replaces the whole file, so it refuses to drop the line (keep such lines in a gres.conf of your own that Includes a file gen -o writes, or move " + path + " away)"; err == nil || err.Error() != want {
		t.Errorf("err %v\nwant %s", err, want)
	}
}
