package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/internal/testkit/nvmlfake"
)

// TestMessagesNamingFlags pins, whole and to the byte, the messages that
// name a flag of the command line or advise one, where no testscript
// golden or fault row pins them as a whole line already. Their words live
// in cmd while the problem they describe is found in a package below:
// this test proves that the two halves still make the same line.
func TestMessagesNamingFlags(t *testing.T) {
	demo := fixture.Path(t, "demo")
	snap := filepath.Join(demo, "snapshot.json")
	root := filepath.Join(demo, "root")
	// sxm and pcie are two A100 models that both shorten to type a100.
	twoA100s := &nvmlfake.Fixture{DriverVersion: "580.159.04", GPUs: []nvmlfake.GPU{
		{Minor: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:07:00.0", MemoryMiB: 81920},
		{Minor: 1, UUID: "GPU-00000001-0000-4000-8000-000000000000", Name: "NVIDIA A100-PCIE-40GB", PCIBusID: "00000000:0F:00.0", MemoryMiB: 40960},
	}}
	// A fragment of one node, as gen writes it, and files with a line
	// that no reader of gres.conf or slurm.conf knows.
	frag := "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"
	unreadable := "Name=gpu Typ=a100 File=/dev/nvidia0\n"
	for _, tc := range []struct {
		name    string
		args    []string
		fixture *nvmlfake.Fixture // nil: the NVML library is missing
		// hostnames are the answers of successive hostname lookups, the
		// last one repeated; an empty answer is a failed lookup.
		hostnames []string
		files     map[string]string // under $DIR, written before the run
		path      string            // $PATH for the run, under $DIR; "" keeps it
		exit      int
		stderr    string // every line, $DIR for the run's directory
	}{
		{name: "a job's process that is none",
			args: []string{"--root", root, "free", "--from", snap, "--claims", "$DIR/claims", "--pid", "1"},
			exit: 2, stderr: "slurm-mig: --pid 1: not a job's process"},
		{name: "more devices than the job may use",
			args: []string{"--root", root, "free", "--from", snap, "--claims", "$DIR/claims", "--count", "99"},
			exit: 2, stderr: "slurm-mig: --count 99, but this job may use only 13 MIG devices"},
		{name: "node name and none",
			args: []string{"--root", root, "gen", "--from", snap, "--node-name", "n1", "--no-node-name"},
			exit: 2, stderr: "slurm-mig: --node-name and --no-node-name exclude each other"},
		{name: "state's node name",
			args: []string{"--root", root, "state", "--from", snap, "--node-name", "n1,n2", "--state", "$DIR/devices.json"},
			exit: 2, stderr: `slurm-mig: --node-name: node name "n1,n2": ',' separates node names in a hostlist, so Slurm would not read it as one node name`},
		{name: "host name unknown", fixture: twoA100s, hostnames: []string{"ok:", "fail"},
			args: []string{"--root", "$DIR", "gen", "--no-cores", "--type-map", "NVIDIA A100-PCIE-40GB=pcie"},
			exit: 2, stderr: "slurm-mig: this host's name is unknown (hostname lookup failed); pass --node-name"},
		{name: "types that clash", fixture: twoA100s, hostnames: []string{"ok:n1"},
			args: []string{"--root", "$DIR", "gen", "--no-cores"},
			exit: 0, stderr: `slurm-mig: warning: GPUs "NVIDIA A100-PCIE-40GB", "NVIDIA A100-SXM4-80GB" all get type "a100"; use --type-map NAME=TYPE to tell them apart`},
		{name: "slurm version not one",
			args: []string{"--root", root, "gen", "--from", snap, "--slurm-version", "2x"},
			exit: 2, stderr: `slurm-mig: --slurm-version: Slurm release "2x" is not X.Y or X.Y.Z (24.11, 23.02.7)`},
		{name: "slurmd -V fails", fixture: twoA100s, hostnames: []string{"ok:n1"},
			files: map[string]string{"bin/slurmd": "#!/bin/sh\nexit 3\n"}, path: "bin",
			args: []string{"gen", "--no-cores", "--type-map", "NVIDIA A100-PCIE-40GB=pcie"},
			exit: 0, stderr: "slurm-mig: warning: slurmd -V: exit status 3: writing for a Slurm of unknown version (--slurm-version names it)"},
		{name: "no scontrol", path: "bin",
			args: []string{"--root", root, "diff", "--from", snap, "--running"},
			exit: 2, stderr: `slurm-mig: --running needs scontrol: exec: "scontrol": executable file not found in $PATH`},
		{name: "update without a node name",
			args:  []string{"--root", root, "node", "--from", snap, "--no-node-name", "--update", "$DIR/slurm.conf"},
			files: map[string]string{"slurm.conf": "NodeName=n1 Gres=gpu:1\n"},
			exit:  2, stderr: "slurm-mig: --update needs the node's name; drop --no-node-name"},
		{name: "gen --json to standard output",
			args: []string{"--root", root, "gen", "--from", snap, "--json"},
			exit: 2, stderr: "slurm-mig: --backup and --json go with -o FILE (or node --update)"},
		{name: "node --backup to standard output",
			args: []string{"--root", root, "node", "--from", snap, "--backup", "-o", "-"},
			exit: 2, stderr: "slurm-mig: --backup and --json go with -o FILE (or node --update)"},
		{name: "node -o of an unreadable file",
			args:  []string{"--root", root, "node", "--from", snap, "--no-state", "-o", "$DIR/node.conf"},
			files: map[string]string{"node.conf": "NodeName=gpu-demo01\x00\n"},
			exit:  2, stderr: "slurm-mig: node -o cannot tell what it would replace in $DIR/node.conf: $DIR/node.conf: binary data (NUL byte); not a Slurm config"},
		{name: "merge output among its inputs",
			args:  []string{"merge", "$DIR/frags", "-o", "$DIR/frags/n1.conf"},
			files: map[string]string{"frags/n1.conf": frag},
			exit:  2, stderr: "slurm-mig: $DIR/frags/n1.conf is among the inputs (-o): a merged file among the fragments would be read back as one next time; write it elsewhere"},
		{name: "merge -o of an unreadable file",
			args:  []string{"merge", "$DIR/frags", "-o", "$DIR/gres.conf"},
			files: map[string]string{"frags/n1.conf": frag, "gres.conf": unreadable},
			exit:  2, stderr: `slurm-mig: merge -o cannot tell what it would replace in $DIR/gres.conf: $DIR/gres.conf:1: unknown gres.conf keyword "Typ"`},
		{name: "merge --node-lines -o of an unreadable file",
			args:  []string{"merge", "--node-lines", "$DIR/frags", "-o", "$DIR/nodes.conf"},
			files: map[string]string{"frags/n1.conf": frag, "nodes.conf": "NodeName=n1\x00\n"},
			exit:  2, stderr: "slurm-mig: merge --node-lines -o cannot tell what it would replace in $DIR/nodes.conf: $DIR/nodes.conf: binary data (NUL byte); not a Slurm config"},
		// A line of megabytes is quoted cut short, never echoed whole.
		{name: "a 3 MB line",
			args:  []string{"merge", "$DIR/big.conf"},
			files: map[string]string{"big.conf": "NodeName=x Name=gpu File=/dev/nvidia0 B" + strings.Repeat("a", 3_000_000) + "=1\n"},
			exit:  2, stderr: `slurm-mig: $DIR/big.conf:1: unknown gres.conf keyword "B` + strings.Repeat("a", 62) + `...[3000003 bytes]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				mustWrite(t, filepath.Join(dir, name), data)
				if strings.HasPrefix(name, "bin/") {
					os.Chmod(filepath.Join(dir, name), 0o755)
				}
			}
			if tc.path != "" {
				if err := os.MkdirAll(filepath.Join(dir, tc.path), 0o755); err != nil {
					t.Fatal(err)
				}
				t.Setenv("PATH", filepath.Join(dir, tc.path))
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "$DIR", dir)
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &env{stdout: &stdout, stderr: &stderr, newNVML: func() nvml.Interface {
				if tc.fixture == nil {
					return nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))
				}
				lib, err := nvmlfake.New(tc.fixture)
				if err != nil {
					t.Fatal(err)
				}
				return lib
			}, hostname: lookups(tc.hostnames)})
			got := strings.TrimSuffix(strings.ReplaceAll(stderr.String(), dir, "$DIR"), "\n")
			if code != tc.exit || got != tc.stderr {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, got, tc.exit, tc.stderr)
			}
		})
	}
}

// lookups answers hostname lookups in turn: "ok:NAME" is NAME, anything
// else a failed lookup; the last answer repeats. None answers "n1".
func lookups(answers []string) func() (string, error) {
	if len(answers) == 0 {
		answers = []string{"ok:n1"}
	}
	return func() (string, error) {
		a := answers[0]
		if len(answers) > 1 {
			answers = answers[1:]
		}
		if name, ok := strings.CutPrefix(a, "ok:"); ok {
			return name, nil
		}
		return "", errors.New("hostname lookup failed")
	}
}
