package gpuusers

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/hostfs"
)

// fakeProc makes a /proc under root: each pid's comm and its fd links.
func fakeProc(t *testing.T, root string, procs map[int][]string, comm map[int]string, modules string) {
	t.Helper()
	for pid, targets := range procs {
		fd := filepath.Join(root, "proc", strconv.Itoa(pid), "fd")
		if err := os.MkdirAll(fd, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, target := range targets {
			if err := os.Symlink(target, filepath.Join(fd, strconv.Itoa(i+3))); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, "proc", strconv.Itoa(pid), "comm"), []byte(comm[pid]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "proc", "modules"), []byte(modules), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	fakeProc(t, root, map[int][]string{
		100: {"/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia0", "socket:[1234]"},
		200: {"/dev/null", "/var/log/syslog"},
		300: {"/dev/nvidiactl"},
		400: {"/dev/nvidia-caps/nvidia-cap21"},
		500: {"/dev/nvidia1"}, // this process
	}, map[int]string{100: "nv-hostengine", 200: "rsyslogd", 300: "nvidia-persistenced", 400: "python3", 500: "slurm-mig"},
		"nvidia_uvm 4956160 0 - Live 0x0000000000000000 (POE)\n"+
			"nvidia_drm 122880 2 - Live 0x0000000000000000 (POE)\n"+
			"nvidia_modeset 1355776 1 nvidia_drm, Live 0x0000000000000000 (POE)\n")
	r, err := Find(hostfs.FS(root), 500)
	if err != nil {
		t.Fatal(err)
	}
	want := Report{
		Users: []User{
			{PID: 100, Command: "nv-hostengine", Devices: []string{"/dev/nvidia0", "/dev/nvidiactl"}, What: "DCGM's host engine (nvidia-dcgm.service)"},
			{PID: 300, Command: "nvidia-persistenced", Devices: []string{"/dev/nvidiactl"}, What: "nvidia-persistenced", Harmless: true},
			{PID: 400, Command: "python3", Devices: []string{"/dev/nvidia-caps/nvidia-cap21"}},
		},
		Modules: []Module{{Name: "nvidia_drm", Users: 2}},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !r.Busy() {
		t.Error("not busy")
	}
	var texts []string
	for _, l := range r.Lines() {
		texts = append(texts, l.Text)
	}
	lines := strings.Join(texts, "\n")
	for _, s := range []string{"pid 100 (nv-hostengine: DCGM's host engine (nvidia-dcgm.service)) has /dev/nvidia0, /dev/nvidiactl open",
		"pid 300 (nvidia-persistenced) has /dev/nvidiactl open; harmless", "module nvidia_drm has 2 users"} {
		if !strings.Contains(lines, s) {
			t.Errorf("lines lack %q:\n%s", s, lines)
		}
	}
}

// Only nvidia-persistenced, and nvidia_drm loaded with no users: not busy.
func TestFindHarmless(t *testing.T) {
	root := t.TempDir()
	fakeProc(t, root, map[int][]string{7: {"/dev/nvidiactl", "/dev/nvidia0"}}, map[int]string{7: "nvidia-persistenced"},
		"nvidia_drm 122880 0 - Live 0x0000000000000000 (POE)\n")
	r, err := Find(hostfs.FS(root), 1)
	if err != nil || r.Busy() || len(r.Modules) != 0 {
		t.Errorf("%+v, %v: want not busy", r, err)
	}
}

// A real process's open files, through the kernel's own /proc: this test
// holds ROOT/dev/nvidia0 open, and its /proc entry appears under ROOT.
func TestFindReadsRealFds(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "dev", "nvidia0"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pid := strconv.Itoa(os.Getpid())
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/"+pid, filepath.Join(root, "proc", pid)); err != nil {
		t.Fatal(err)
	}
	r, err := Find(hostfs.FS(root), -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Users) != 1 || r.Users[0].PID != os.Getpid() || strings.Join(r.Users[0].Devices, ",") != "/dev/nvidia0" {
		t.Errorf("%+v: want this process with /dev/nvidia0", r)
	}
}

// A report that may miss processes says so, and what would help apart:
// the line reads whole without the hint.
func TestLinesUnreadableHint(t *testing.T) {
	lines := Report{Unreadable: 3}.Lines()
	want := []Line{{Text: "the open files of 3 processes could not be read", Hint: ": run as root"}}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
