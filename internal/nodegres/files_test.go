package nodegres

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// Failing to write the state where it was asked for is an error; at its
// default place, with Warn set, a warning and no state in the report.
func TestStateFailure(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-0"}}}
	var warnings []string
	warn := func(w string) { warnings = append(warnings, w) }
	asked := State{File: jobenv.StateFile{Flag: filepath.Join(blocker, "devices.json"), Getenv: os.Getenv}, Node: n, Warn: warn}
	if _, err := asked.Write(); err == nil {
		t.Error("a state that cannot be written where asked: no error")
	}
	byEnv := State{File: jobenv.StateFile{Getenv: func(string) string { return filepath.Join(blocker, "devices.json") }}, Node: n, Warn: warn}
	if _, err := byEnv.Write(); err == nil {
		t.Error("a state that cannot be written at $SLURM_MIG_STATE: no error")
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q for states asked for", warnings)
	}
	// At the default place: a node whose cap minors are unknown fails
	// wherever the state goes, without touching the real default path.
	unresolved := &model.Node{GPUs: []model.GPU{{Minor: 0, UUID: "GPU-0", MigEnabled: true,
		MigDevices: []model.MigDevice{{GPUInstanceID: 1, UUID: "MIG-a"}}}}}
	dflt := State{File: jobenv.StateFile{Getenv: func(string) string { return "" }}, Node: unresolved, Warn: warn}
	rep, err := dflt.Write()
	if err != nil || rep != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "device state not written") {
		t.Errorf("at the default place: %v, %v, warnings %q", rep, err, warnings)
	}
	dflt.Warn = nil
	if _, err := dflt.Write(); err == nil {
		t.Error("without Warn, a failure at the default place is no error")
	}
}
