package gresgen

import (
	"os"
	"path/filepath"
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
