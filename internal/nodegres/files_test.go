package nodegres

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

func text(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A config file with its state: both written, reported in a line each
// and in JSON; rewriting the same content changes nothing.
func TestFilesWrite(t *testing.T) {
	dir := t.TempDir()
	conf, state := filepath.Join(dir, "gres.conf"), filepath.Join(dir, "state", "devices.json")
	n := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-0"}, {Minor: 1, UUID: "GPU-1"}}}
	files := Files{Path: conf, Data: []byte("Name=gpu File=/dev/nvidia0\n"), Devices: 2, State: &State{
		File: jobenv.StateFile{Flag: state, Getenv: os.Getenv}, Node: n, Name: "n1", WrittenBy: "test"}}
	rep, err := files.Write()
	if err != nil {
		t.Fatal(err)
	}
	want := conf + ": changed (2 devices)\n" + state + ": changed (device state for slurm-mig env)\n"
	if got := text(t, rep); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	if rep.State.Devices != 2 {
		t.Errorf("state devices %d, want 2", rep.State.Devices)
	}
	rep, err = files.Write()
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"path":"` + conf + `","changed":false,"devices":2,"state":{"path":"` + state + `","changed":false,"devices":2}}` + "\n"
	if js.String() != wantJSON {
		t.Errorf("JSON %s, want %s", js.String(), wantJSON)
	}
}

// Failing to write the state is an error wherever it goes, at its
// default place too: a node without one fails every GPU task in env.
func TestStateFailure(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-0"}}}
	asked := State{File: jobenv.StateFile{Flag: filepath.Join(blocker, "devices.json"), Getenv: os.Getenv}, Node: n}
	if _, err := asked.Write(); err == nil {
		t.Error("a state that cannot be written where asked: no error")
	}
	byEnv := State{File: jobenv.StateFile{Getenv: func(string) string { return filepath.Join(blocker, "devices.json") }}, Node: n}
	if _, err := byEnv.Write(); err == nil {
		t.Error("a state that cannot be written at $SLURM_MIG_STATE: no error")
	}
	// At the default place: a node whose cap minors are unknown fails
	// wherever the state goes, without touching the real default path.
	unresolved := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-0", MigEnabled: true,
		MigDevices: []model.MigDevice{{GPUInstanceID: 1, UUID: "MIG-a"}}}}}
	dflt := State{File: jobenv.StateFile{Getenv: func(string) string { return "" }}, Node: unresolved}
	if rep, err := dflt.Write(); err == nil {
		t.Errorf("at the default place: no error, report %+v", rep)
	}
}

// A state that cannot be written fails the write before the config file
// is touched: automation sees the failure, and the node is as it was.
func TestFilesStateFailureLeavesConfig(t *testing.T) {
	dir := t.TempDir()
	conf, blocker := filepath.Join(dir, "gres.conf"), filepath.Join(dir, "file")
	for path, data := range map[string]string{conf: "old\n", blocker: ""} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-0"}}}
	files := Files{Path: conf, Data: []byte("Name=gpu File=/dev/nvidia0\n"), Devices: 1, State: &State{
		File: jobenv.StateFile{Flag: filepath.Join(blocker, "devices.json"), Getenv: os.Getenv}, Node: n, Name: "n1"}}
	rep, err := files.Write()
	var a *advice.Error
	if !errors.As(err, &a) || a.Fix != advice.StateNotWritten || !strings.HasSuffix(err.Error(), "; "+conf+" left as it was") {
		t.Errorf("report %+v, error %v; want an error saying %s is left as it was, with advice.StateNotWritten", rep, err, conf)
	}
	if got, _ := os.ReadFile(conf); string(got) != "old\n" {
		t.Errorf("%s now holds %q", conf, got)
	}
}

// Unchanged decides about the file there now, at its symlink's target:
// true leaves it, and its report says unchanged with the target's path;
// an error writes nothing, the state neither. A new file is not asked
// about.
func TestFilesUnchanged(t *testing.T) {
	dir := t.TempDir()
	conf, link, state := filepath.Join(dir, "gres.conf"), filepath.Join(dir, "link.conf"), filepath.Join(dir, "state", "devices.json")
	if err := os.WriteFile(conf, []byte("# old header\nName=gpu File=/dev/nvidia0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gres.conf", link); err != nil {
		t.Fatal(err)
	}
	n := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-0"}}}
	var asked []string
	files := Files{Path: link, Data: []byte("# new header\nName=gpu File=/dev/nvidia0\n"), Devices: 1,
		State:     &State{File: jobenv.StateFile{Flag: state, Getenv: os.Getenv}, Node: n, Name: "n1"},
		Unchanged: func(path string) (bool, error) { asked = append(asked, path); return true, nil }}
	rep, err := files.Write()
	if err != nil || rep.Path != conf || rep.Changed || rep.State == nil || !rep.State.Changed {
		t.Errorf("unchanged: %+v, %v", rep, err)
	}
	if got, _ := os.ReadFile(conf); !strings.HasPrefix(string(got), "# old header") {
		t.Errorf("rewritten: %q", got)
	}
	files.Unchanged = func(path string) (bool, error) { return false, fmt.Errorf("%s:1: refused", path) }
	files.State.File.Flag = filepath.Join(dir, "other", "devices.json")
	if rep, err := files.Write(); err == nil || err.Error() != conf+":1: refused" {
		t.Errorf("refused: %+v, %v", rep, err)
	}
	if _, err := os.Stat(files.State.File.Flag); err == nil {
		t.Error("a refused write wrote the state")
	}
	files.Path = filepath.Join(dir, "new.conf")
	files.Unchanged = func(path string) (bool, error) { asked = append(asked, path); return true, nil }
	if rep, err := files.Write(); err != nil || !rep.Changed {
		t.Errorf("a new file: %+v, %v", rep, err)
	}
	if len(asked) != 1 || asked[0] != conf {
		t.Errorf("asked about %q, want only %s", asked, conf)
	}
}

// A config file that cannot be written, after its state was, puts the
// state back: the old content where there was one, no file where there
// was none, so that state and config always agree. The file fails as a
// .bak that is a directory and as a directory that cannot be written
// (as root, one in sysfs, where no file can be made).
func TestConfigFailurePutsTheStateBack(t *testing.T) {
	unwritable := filepath.Join(t.TempDir(), "ro")
	if os.Geteuid() == 0 {
		unwritable = "/sys/kernel"
		if _, err := os.Stat(unwritable); err != nil {
			t.Skip("no /sys/kernel to stand for a directory root cannot write")
		}
	} else if err := os.Mkdir(unwritable, 0o555); err != nil {
		t.Fatal(err)
	}
	old := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-0"}}}
	repartitioned := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-1"}}}
	for _, c := range []struct {
		name    string
		conf    func(dir string) string
		earlier bool // a state was there before
	}{
		{"bak is a directory", func(dir string) string {
			must(t, os.Mkdir(filepath.Join(dir, "gres.conf.bak"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "gres.conf"), []byte("old\n"), 0o644))
			return filepath.Join(dir, "gres.conf")
		}, true},
		{"bak is a directory, no state before", func(dir string) string {
			must(t, os.Mkdir(filepath.Join(dir, "gres.conf.bak"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "gres.conf"), []byte("old\n"), 0o644))
			return filepath.Join(dir, "gres.conf")
		}, false},
		{"unwritable directory", func(string) string { return filepath.Join(unwritable, "slurm-mig-test-gres.conf") }, true},
		{"unwritable directory, no state before", func(string) string { return filepath.Join(unwritable, "slurm-mig-test-gres.conf") }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state", "devices.json")
			file := jobenv.StateFile{Flag: path, Getenv: os.Getenv}
			var before []byte
			if c.earlier {
				if _, err := (State{File: file, Node: old, Name: "n1", WrittenBy: "test"}).Write(); err != nil {
					t.Fatal(err)
				}
				before = read(t, path)
			}
			conf := c.conf(dir)
			files := Files{Path: conf, Data: []byte("new\n"), Devices: 1, Backup: true,
				State: &State{File: file, Node: repartitioned, Name: "n1", WrittenBy: "test"}}
			_, err := files.Write()
			if err == nil || !strings.Contains(err.Error(), "device state "+path+" put back as it was") {
				t.Errorf("err = %v, want the config's error and the state put back", err)
			}
			after, rerr := os.ReadFile(path)
			switch {
			case c.earlier && !bytes.Equal(after, before):
				t.Errorf("state after the failure:\n%s\nwant it as it was:\n%s", after, before)
			case !c.earlier && !errors.Is(rerr, os.ErrNotExist):
				t.Errorf("a state is left where there was none: %s (%v)", after, rerr)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
