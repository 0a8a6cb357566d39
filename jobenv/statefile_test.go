package jobenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/hostfs"
)

func getenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// The path comes from the flag, else $SLURM_MIG_STATE, else the default,
// and only the last is Default.
func TestStateFilePath(t *testing.T) {
	for _, tc := range []struct {
		flag, env, want string
		isDefault       bool
	}{
		{"/a.json", "/b.json", "/a.json", false},
		{"", "/b.json", "/b.json", false},
		{"", "", DefaultStatePath, true},
	} {
		f := StateFile{Flag: tc.flag, Getenv: getenv(map[string]string{StatePathEnv: tc.env})}
		if f.Path() != tc.want || f.Default() != tc.isDefault {
			t.Errorf("flag %q env %q: Path %q Default %v, want %q %v", tc.flag, tc.env, f.Path(), f.Default(), tc.want, tc.isDefault)
		}
	}
}

// A state read live records the boot id under Root; one from a snapshot
// none. Write makes the directory and reports an unchanged rewrite.
func TestStateFileWrite(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc/sys/kernel/random"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/kernel/random/boot_id"), []byte("boot-7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := &discover.Node{GPUs: []discover.GPU{{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000"}}}
	path := filepath.Join(t.TempDir(), "run", "slurm-mig", "devices.json")
	f := StateFile{Flag: path, Getenv: getenv(nil), Live: true, Root: hostfs.FS(root)}
	st, res, err := f.Write(n, "n1", "test")
	if err != nil {
		t.Fatal(err)
	}
	if st.BootID != "boot-7" || st.Node != "n1" || !res.Changed || res.Path != path {
		t.Errorf("BootID %q Node %q Changed %v Path %q", st.BootID, st.Node, res.Changed, res.Path)
	}
	got, err := LoadState(path)
	if err != nil || got.Generation != st.Generation {
		t.Fatalf("reading it back: %v, %v", got, err)
	}
	if _, res, err := f.Write(n, "n1", "test"); err != nil || res.Changed {
		t.Errorf("the same state again: Changed %v, %v", res.Changed, err)
	}
	f.Live = false
	if st, err := f.Build(n, "n1", ""); err != nil || st.BootID != "" {
		t.Errorf("from a snapshot: BootID %q, %v; want none", st.BootID, err)
	}
}

// diff compares the state asked for, else the default one only when it
// exists and the GPUs are read live.
func TestStateFileToCompare(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "devices.json")
	if err := os.WriteFile(existing, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.json")
	for _, tc := range []struct {
		flag, env string
		live      bool
		want      string
	}{
		{missing, "", false, missing}, // asked for: compared, missing or not
		{"", existing, true, existing},
		{"", existing, false, ""}, // a snapshot's GPUs are not the node's now
		{"", missing, true, ""},
	} {
		f := StateFile{Flag: tc.flag, Getenv: getenv(map[string]string{StatePathEnv: tc.env}), Live: tc.live}
		if got := f.ToCompare(); got != tc.want {
			t.Errorf("flag %q env %q live %v: %q, want %q", tc.flag, tc.env, tc.live, got, tc.want)
		}
	}
}
