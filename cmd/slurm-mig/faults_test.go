package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
)

// The fault matrix: every fault slurm-mig is built to meet, how the test
// injects it, what slurm-mig does, its exit code and its one line on
// stderr. TestFaultMatrix runs each row and writes docs/faults.md from
// the rows (-update), or checks that the file says the same, so the
// document cannot drift from the behaviour.

type fault struct {
	name      string
	injected  string
	behaviour string
	fixture   *nvmlfake.Fixture // nil: the real go-nvml with no library to load
	setup     func(t *testing.T, dir string)
	args      []string // $DIR is the row's directory
	exit      int
	stderr    string // every line, $DIR for the row's directory
	keeps     string // a file (under $DIR) that must keep its content
}

// migNode is one A100 in MIG mode with one 1g.10gb at GI 7, and one
// whole GPU.
func migNode() *nvmlfake.Fixture {
	return &nvmlfake.Fixture{DriverVersion: "580.159.04", GPUs: []nvmlfake.GPU{
		{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:07:00.0", MemoryMiB: 81920},
		{Minor: 1, UUID: "GPU-00000001-0000-4000-8000-000000000000", Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:0F:00.0", MemoryMiB: 81920, MigMode: "enabled",
			MigDevices: []nvmlfake.MigDevice{{HandleIndex: 0, GI: 7, CI: 0, UUID: "MIG-00000001-0000-4000-8000-000000000000", Profile: "1g.10gb"}}},
	}}
}

// with applies a change to migNode.
func with(change func(f *nvmlfake.Fixture)) *nvmlfake.Fixture {
	f := migNode()
	change(f)
	return f
}

func writeMinors(data string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		mustWrite(t, filepath.Join(dir, "root/proc/driver/nvidia-caps/mig-minors"), data)
	}
}

var realMinors = func(t *testing.T, dir string) {
	writeMinors(string(fixture.Read(t, fixture.RealMigMinors)))(t, dir)
}

// oldGresConf is the gres.conf in force before a write: what an earlier
// gen wrote, for other devices. gen -o replaces it, or leaves it intact
// when it fails; a file with lines gen does not write it would refuse.
const oldGresConf = "# gres.conf written by slurm-mig v0.9; regenerate it, do not edit by hand.\nNodeName=n1 Name=gpu Type=old File=/dev/nvidia9\n"

func faults() []fault {
	gen := []string{"--root", "$DIR/root", "gen", "--node-name", "n1", "-o", "$DIR/gres.conf"}
	const old = "$DIR/gres.conf" // every write row starts from an old gres.conf
	// free fails before it hands a claim on in every row: a holder would be
	// a re-exec of the test binary.
	free := []string{"--root", "$DIR/root", "free", "--claims", "$DIR/claims"}
	return []fault{
		{name: "NVML library missing", injected: "real go-nvml, library path that does not exist", behaviour: "fail; no other NVML call",
			args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: nvml: initialising NVML: libnvidia-ml.so.1 not found; is the NVIDIA driver installed? (use --from SNAPSHOT on hosts without it)"},
		{name: "NVIDIA driver not loaded", injected: "Init: ERROR_DRIVER_NOT_LOADED", behaviour: "fail; no other NVML call",
			fixture: &nvmlfake.Fixture{InitError: "ERROR_DRIVER_NOT_LOADED"}, args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: nvml: initialising NVML: the NVIDIA kernel driver is not loaded"},
		{name: "No permission", injected: "Init: ERROR_NO_PERMISSION", behaviour: "fail; no other NVML call",
			fixture: &nvmlfake.Fixture{InitError: "ERROR_NO_PERMISSION"}, args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: nvml: initialising NVML: no permission to open the GPU device files (/dev/nvidiactl)"},
		{name: "GPU count fails", injected: "DeviceGetCount: ERROR_UNKNOWN", behaviour: "fail",
			fixture: with(func(f *nvmlfake.Fixture) { f.Errors = map[string]string{"DeviceGetCount": "ERROR_UNKNOWN"} }),
			args:    gen, exit: 2, keeps: old, stderr: "slurm-mig: nvml: counting GPUs: ERROR_UNKNOWN"},
		{name: "GPU lost mid-scan", injected: "GPU 1 GetUUID: ERROR_GPU_IS_LOST", behaviour: "fail: a node known in part must not look complete",
			fixture: with(func(f *nvmlfake.Fixture) { f.GPUs[1].Errors = map[string]string{"GetUUID": "ERROR_GPU_IS_LOST"} }),
			args:    gen, exit: 2, keeps: old, stderr: "slurm-mig: nvml: GPU 1: reading its UUID: ERROR_GPU_IS_LOST"},
		{name: "Minor number unreadable", injected: "GPU 0 GetMinorNumber: ERROR_UNKNOWN", behaviour: "fail: the minor names /dev/nvidiaN",
			fixture: with(func(f *nvmlfake.Fixture) { f.GPUs[0].Errors = map[string]string{"GetMinorNumber": "ERROR_UNKNOWN"} }),
			args:    gen, exit: 2, keeps: old, stderr: "slurm-mig: nvml: GPU 0: reading its minor number: ERROR_UNKNOWN"},
		{name: "MIG device vanishes while read", injected: "MIG handle 0 GetUUID: ERROR_NOT_FOUND", behaviour: "fail; run again after the repartition",
			fixture: with(func(f *nvmlfake.Fixture) {
				f.GPUs[1].MigDevices[0].Errors = map[string]string{"GetUUID": "ERROR_NOT_FOUND"}
			}),
			args: gen, exit: 2, keeps: old, setup: realMinors,
			stderr: "slurm-mig: nvml: GPU 1 (minor 1, 00000000:0F:00.0): MIG device handle 0: reading its UUID: the MIG device vanished while being read (is the MIG layout being changed?); run again when it is done"},
		{name: "NVML hangs", injected: "DeviceGetCount answers after 5 s; --timeout 300ms", behaviour: "fail at the deadline",
			fixture: with(func(f *nvmlfake.Fixture) { f.Delays = map[string]string{"DeviceGetCount": "5s"} }),
			args:    append([]string{"--timeout", "300ms"}, gen...), exit: 2, keeps: old,
			stderr: "slurm-mig: nvml: no answer within 300ms (a hung GPU or driver?); nothing was written"},
		{name: "MIG not supported on one GPU", injected: "GPU 0 GetMigMode: ERROR_NOT_SUPPORTED (a V100 beside A100s)", behaviour: "that GPU is a whole GPU",
			fixture: with(func(f *nvmlfake.Fixture) { f.GPUs[0].MigMode = "unsupported" }),
			args:    gen, setup: realMinors, exit: 0, stderr: ""},
		{name: "Gaps in MIG handle indices", injected: "MIG devices at handles 2 and 5 only", behaviour: "normal: every index is tried",
			fixture: with(func(f *nvmlfake.Fixture) {
				f.GPUs[1].MigDevices = []nvmlfake.MigDevice{{HandleIndex: 2, GI: 7, UUID: "MIG-00000001-0000-4000-8000-000000000000", Profile: "1g.10gb"}, {HandleIndex: 5, GI: 13, UUID: "MIG-00000002-0000-4000-8000-000000000000", Profile: "1g.10gb"}}
			}),
			args: gen, setup: realMinors, exit: 0, stderr: ""},
		{name: "CPU affinity unreadable", injected: "GetCpuAffinity: ERROR_UNKNOWN", behaviour: "warn; that GPU gets no Cores=",
			fixture: with(func(f *nvmlfake.Fixture) { f.GPUs[0].Errors = map[string]string{"GetCpuAffinity": "ERROR_UNKNOWN"} }),
			args:    gen, setup: realMinors, exit: 0,
			stderr: "slurm-mig: warning: GPU 0 (minor 0, 00000000:07:00.0): reading its CPU affinity: ERROR_UNKNOWN; its Cores= is left out"},
		{name: "NVLink state unreadable", injected: "GetNvLinkState: ERROR_UNKNOWN", behaviour: "warn; its links are not counted in Links=",
			fixture: with(func(f *nvmlfake.Fixture) {
				f.GPUs[0].NVLinks = []nvmlfake.NVLink{{Remote: "00000000:0F:00.0", Count: 4}}
				f.GPUs[0].Errors = map[string]string{"GetNvLinkState": "ERROR_UNKNOWN"}
			}),
			args: gen, setup: realMinors, exit: 0,
			stderr: "slurm-mig: warning: GPU 0 (minor 0, 00000000:07:00.0): reading the state of NVLink 0: ERROR_UNKNOWN; its NVLinks are not counted in Links="},
		{name: "CPU topology unreadable", injected: "NVML gives an affinity; no sysfs under --root", behaviour: "warn; no Cores=",
			fixture: with(func(f *nvmlfake.Fixture) { f.GPUs[0].CPUs = "0-15" }),
			args:    gen, setup: realMinors, exit: 0,
			stderr: "slurm-mig: warning: CPU topology: topology: open $DIR/root/sys/devices/system/cpu/online: no such file or directory; Cores= left out"},
		{name: "mig-minors missing", injected: "no mig-minors and no capabilities tree", behaviour: "fail: cap minors are never guessed",
			fixture: migNode(), args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: cap minors for MIG device gpu1/gi7/ci0 (GPU 1 (minor 1, 00000000:0F:00.0)): no MIG capability minors: neither $DIR/root/proc/driver/nvidia-caps/mig-minors nor $DIR/root/proc/driver/nvidia/capabilities exists: file does not exist"},
		{name: "mig-minors corrupt", injected: "a line \"gpu1/gi7/ci0/access x4\"", behaviour: "fail, naming file and line",
			fixture: migNode(), setup: writeMinors("config 1\nmonitor 2\ngpu1/gi7/access 201\ngpu1/gi7/ci0/access x4\n"), args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: cap minors for MIG device gpu1/gi7/ci0 (GPU 1 (minor 1, 00000000:0F:00.0)): $DIR/root/proc/driver/nvidia-caps/mig-minors:4: malformed line \"gpu1/gi7/ci0/access x4\": want \"<name> <minor>\""},
		{name: "mig-minors lacks the device", injected: "mig-minors without gpu1/gi7/ci0", behaviour: "fail, naming the device",
			fixture: migNode(), setup: writeMinors("gpu1/gi7/access 201\ngpu1/gi7/ci1/access 203\n"), args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: MIG device gpu1/gi7/ci0 (GPU 1 (minor 1, 00000000:0F:00.0)): $DIR/root/proc/driver/nvidia-caps/mig-minors has no entry gpu1/gi7/ci0/access"},
		{name: "mig-minors with a 100 KB line", injected: "one line of 100 KiB", behaviour: "fail; memory stays bounded",
			fixture: migNode(), setup: writeMinors("gpu1/gi7/access 201\n" + strings.Repeat("x", 100<<10) + " 5\n"), args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: cap minors for MIG device gpu1/gi7/ci0 (GPU 1 (minor 1, 00000000:0F:00.0)): $DIR/root/proc/driver/nvidia-caps/mig-minors:2: line too long (limit 65536 bytes): bufio.Scanner: token too long"},
		{name: "mig-minors oversized", injected: "2 MiB of valid-looking lines", behaviour: "fail; memory stays bounded",
			fixture: migNode(), setup: writeMinors(strings.Repeat("monitor 2\n", 2<<20/10)), args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: cap minors for MIG device gpu1/gi7/ci0 (GPU 1 (minor 1, 00000000:0F:00.0)): $DIR/root/proc/driver/nvidia-caps/mig-minors: larger than 1 MiB; not a /proc, /sys or /dev file"},
		{name: "mig-minors binary", injected: "NUL bytes", behaviour: "fail",
			fixture: migNode(), setup: writeMinors("gpu1/gi7/access 201\n\x00\x01\x02 3\n"), args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: cap minors for MIG device gpu1/gi7/ci0 (GPU 1 (minor 1, 00000000:0F:00.0)): $DIR/root/proc/driver/nvidia-caps/mig-minors:2: malformed line \"\\x00\\x01\\x02 3\": byte 0x00 at column 1 is not printable ASCII"},
		{name: "No GPU at all", injected: "DeviceGetCount: 0", behaviour: "refuse to write unless --allow-empty",
			fixture: &nvmlfake.Fixture{}, args: gen, exit: 2, keeps: old,
			stderr: "slurm-mig: no GPU or MIG device found; refusing to write an empty gres.conf (pass --allow-empty if this node really has none)"},
		{name: "MIG mode on, no MIG device", injected: "GPU 1 in MIG mode with no instance", behaviour: "warn; that GPU offers nothing",
			fixture: with(func(f *nvmlfake.Fixture) { f.GPUs[1].MigDevices = nil }), args: gen, exit: 0,
			stderr: "slurm-mig: warning: GPU 1 (minor 1, 00000000:0F:00.0): MIG mode is enabled but it has no MIG devices; it offers Slurm nothing"},
		{name: "MIG mode change pending", injected: "GPU 0 mig_mode disabled/enabled", behaviour: "warn; the current layout is written",
			fixture: with(func(f *nvmlfake.Fixture) { f.GPUs[0].MigMode = "disabled/enabled" }), args: gen, setup: realMinors, exit: 0,
			stderr: "slurm-mig: warning: GPU 0 (minor 0, 00000000:07:00.0): MIG mode is disabled but will be enabled after the next GPU reset; this config describes the current layout"},
		{name: "Target directory read-only", injected: "gres.conf in a directory mode 0555, written as uid 65534", behaviour: "fail; old file intact (a file that is already right is no error: unchanged, exit 0)",
			fixture: migNode(), setup: func(t *testing.T, dir string) {
				realMinors(t, dir)
				mustWrite(t, filepath.Join(dir, "ro/gres.conf"), oldGresConf)
				if err := os.Chmod(filepath.Join(dir, "ro"), 0o555); err != nil {
					t.Fatal(err)
				}
			},
			args: []string{"--root", "$DIR/root", "gen", "--node-name", "n1", "-o", "$DIR/ro/gres.conf"}, exit: 2, keeps: "$DIR/ro/gres.conf",
			stderr: "slurm-mig: cannot write $DIR/ro/gres.conf: $DIR/ro is not writable: permission denied"},
		{name: "Snapshot of unknown schema", injected: "schema_version 4", behaviour: "fail",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, filepath.Join(dir, "s.json"), `{"schema_version": 4, "gpus": []}`)
			},
			args: []string{"--root", "$DIR/root", "gen", "--from", "$DIR/s.json", "-o", "$DIR/gres.conf"}, exit: 2, keeps: old,
			stderr: "slurm-mig: $DIR/s.json: unsupported schema_version 4 (this slurm-mig reads 1 to 3)"},
		{name: "Snapshot of 100,000 devices", injected: "one GPU listing 100,000 MIG devices (about 9 MB)", behaviour: "fail fast; memory stays bounded",
			setup: func(t *testing.T, dir string) {
				var b strings.Builder
				b.WriteString(`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "A100", "mig_enabled": true, "mig_devices": [`)
				for i := 0; i < 100000; i++ {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"gpu_instance_id": %d, "compute_instance_id": 0, "profile": "1g.10gb"}`, i)
				}
				b.WriteString(`]}]}`)
				mustWrite(t, filepath.Join(dir, "s.json"), b.String())
			},
			args: []string{"--root", "$DIR/root", "gen", "--from", "$DIR/s.json", "-o", "$DIR/gres.conf"}, exit: 2, keeps: old,
			stderr: "slurm-mig: $DIR/s.json: GPU 0 (minor 0): 100000 MIG devices; no GPU has more than 256"},
		{name: "gres.conf Include loop", injected: "a.conf includes b.conf includes a.conf", behaviour: "fail (diff)",
			fixture: migNode(), setup: func(t *testing.T, dir string) {
				realMinors(t, dir)
				mustWrite(t, filepath.Join(dir, "a.conf"), "Include b.conf\n")
				mustWrite(t, filepath.Join(dir, "b.conf"), "Include a.conf\n")
			},
			args: []string{"--root", "$DIR/root", "diff", "--node-name", "n1", "--gres-conf", "$DIR/a.conf"}, exit: 2,
			stderr: "slurm-mig: $DIR/b.conf:1: Include loop: $DIR/a.conf -> $DIR/b.conf -> back to $DIR/a.conf"},
		{name: "Compute processes unreadable", injected: "MIG device GetComputeRunningProcesses: ERROR_NO_PERMISSION", behaviour: "fail (free, exec): whether a device is in use is never guessed",
			fixture: with(func(f *nvmlfake.Fixture) {
				f.GPUs[1].MigDevices[0].Errors = map[string]string{"GetComputeRunningProcesses": "ERROR_NO_PERMISSION"}
			}), setup: realMinors, args: free, exit: 2,
			stderr: "slurm-mig: nvml: MIG device gpu1/gi7/ci0 (GPU 1 (minor 1, 00000000:0F:00.0)): reading its compute processes: ERROR_NO_PERMISSION"},
		{name: "Every MIG device busy", injected: "a compute process on the only MIG device", behaviour: "refuse (free, exec), saying by what; exit 1",
			fixture: with(func(f *nvmlfake.Fixture) {
				f.GPUs[1].MigDevices[0].Processes = []nvmlfake.Process{{PID: 3999999}}
			}), setup: realMinors, args: free, exit: 1,
			stderr: "slurm-mig: no idle MIG device: the one MIG device this job may use is busy: 1 in use by compute processes (pid 3999999)"},
		{name: "Claims directory open to tampering", injected: "claims directory mode 0777, not sticky", behaviour: "fail (free, exec): others could remove claims",
			fixture: migNode(), setup: func(t *testing.T, dir string) {
				realMinors(t, dir)
				claims := filepath.Join(dir, "claims")
				if err := os.Mkdir(claims, 0o755); err != nil || os.Chmod(claims, 0o777) != nil {
					t.Fatal(err)
				}
			}, args: free, exit: 2,
			stderr: "slurm-mig: claims directory $DIR/claims is writable by others but not sticky (mode 0777): anyone could remove others' claims; chmod 1777 it"},
		{name: "Claims directory's parent open to tampering", injected: "the claims directory's parent mode 0777, not sticky", behaviour: "fail (free, exec): others could put a claims directory of their own in its place",
			fixture: migNode(), setup: func(t *testing.T, dir string) {
				realMinors(t, dir)
				if err := os.Mkdir(filepath.Join(dir, "open"), 0o755); err != nil || os.Chmod(filepath.Join(dir, "open"), 0o777) != nil {
					t.Fatal(err)
				}
			}, args: []string{"--root", "$DIR/root", "free", "--claims", "$DIR/open/claims"}, exit: 2,
			stderr: "slurm-mig: claims directory $DIR/open/claims: $DIR/open is writable by others but not sticky (mode 0777): anyone could put a file or directory of their own in its place; refusing it"},
	}
}

func TestFaultMatrix(t *testing.T) {
	for _, f := range faults() {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "root"), 0o755); err != nil {
				t.Fatal(err)
			}
			if f.setup != nil {
				f.setup(t, dir)
			}
			oldFile := filepath.Join(dir, "gres.conf")
			mustWrite(t, oldFile, oldGresConf)
			keep := strings.ReplaceAll(f.keeps, "$DIR", dir)
			var before []byte
			if keep != "" {
				before, _ = os.ReadFile(keep)
			}
			args := make([]string, len(f.args))
			for i, a := range f.args {
				args[i] = strings.ReplaceAll(a, "$DIR", dir)
			}
			newNVML := func() nvml.Interface { return nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")) }
			if f.fixture != nil {
				newNVML = func() nvml.Interface {
					lib, err := nvmlfake.New(f.fixture)
					if err != nil {
						t.Fatal(err)
					}
					return lib
				}
			}
			var stdout, stderr bytes.Buffer
			e := &env{stdout: &stdout, stderr: &stderr, newNVML: newNVML, hostname: func() (string, error) { return "n1", nil }}
			var code int
			if strings.Contains(f.name, "read-only") {
				code = runAsNobody(t, dir, func() int { return run(args, e) })
			} else {
				code = run(args, e)
			}
			got := strings.TrimSuffix(strings.ReplaceAll(stderr.String(), dir, "$DIR"), "\n")
			if code != f.exit || got != f.stderr {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, got, f.exit, f.stderr)
			}
			if f.exit != 0 && stdout.Len() > 0 {
				t.Errorf("a failed run printed %q", stdout.String())
			}
			if keep != "" {
				after, _ := os.ReadFile(keep)
				if !bytes.Equal(before, after) {
					t.Errorf("%s changed:\n%s", keep, after)
				}
			}
		})
	}
	checkGolden(t, "../../docs/faults.md", faultsDoc())
}

// runAsNobody runs fn with this thread's file access as uid 65534, so a
// directory mode of 0555 holds for a root test run too (setfsuid also
// drops CAP_DAC_OVERRIDE). As a non-root user it just runs fn.
func runAsNobody(t *testing.T, dir string, fn func() int) int {
	if os.Geteuid() != 0 {
		return fn()
	}
	for _, d := range []string{filepath.Dir(dir), dir} { // t.TempDir's are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.Setfsuid(65534)
	defer syscall.Setfsuid(0)
	return fn()
}

func faultsDoc() string {
	var b strings.Builder
	b.WriteString(`# Fault matrix

What slurm-mig does when something is wrong. Generated by
` + "`go test ./cmd/slurm-mig -run TestFaultMatrix -update`" + ` from the table the
test runs (cmd/slurm-mig/faults_test.go): every row is injected (most
through the fake NVML) and its exit code and message are checked.

The rule: whatever decides which devices Slurm gets (GPUs, minors, MIG
devices, cap minors) fails the run with exit 2, one line on stderr naming
the file or device, nothing on stdout, and no file written. What only
refines the config (CPU affinity for Cores=, NVLinks for Links=) degrades
to a warning. A half-known node never yields a config that looks complete.
$DIR stands for the run's directory.

| fault | injected as | behaviour | exit | stderr |
|---|---|---|---|---|
`)
	for _, f := range faults() {
		msg := "(nothing)"
		if f.stderr != "" {
			msg = "`" + strings.ReplaceAll(f.stderr, "|", `\|`) + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s |\n", f.name, strings.ReplaceAll(f.injected, "|", `\|`), f.behaviour, f.exit, msg)
	}
	b.WriteString(`
Also covered elsewhere: a writer killed mid-write leaves the old file whole
(atomicfile.TestKilledWriter), concurrent writers serialize
(atomicfile.TestConcurrentWriters), and a snapshot that contradicts itself
is refused with the device named (testdata/script/snapshot.txtar).
`)
	return b.String()
}

// checkGolden compares a generated file with the one in the repository,
// or rewrites it with -update.
func checkGolden(t *testing.T, path, want string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s is not what the fault table says; run go test ./cmd/slurm-mig -run TestFaultMatrix -update and read the diff", path)
	}
}
