package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/fixture"
	"github.com/slurm-mig/slurm-mig/internal/nvmlfake"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestAnsibleFleetExample runs scripts/ansible/slurm-mig-fleet.yml command
// for command: its gen on three fake nodes of two layouts (as the GPU
// nodes' play does), each output kept as the controller's copy task keeps
// it, then its merges, twice (changed, then unchanged). Every node must
// read back from the merged gres.conf exactly what its gen printed.
func TestAnsibleFleetExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixture.Root(t), "scripts/ansible/slurm-mig-fleet.yml"))
	if err != nil {
		t.Fatal(err)
	}
	playbook := string(data)
	var gen []string
	var merges [][]string
	for _, m := range regexp.MustCompile(`argv: \[(.*)\]`).FindAllStringSubmatch(playbook, -1) {
		f := strings.Split(m[1], ", ")
		switch {
		case f[0] != slurmMigPath:
			continue // scontrol, systemctl
		case f[1] == "gen":
			gen = f[1:]
		case f[1] == "merge":
			merges = append(merges, f[1:])
		default:
			t.Errorf("unexpected slurm-mig command %v", f)
		}
	}
	if gen == nil || len(merges) != 2 {
		t.Fatalf("found gen %v and merges %v, want one gen and two merges", gen, merges)
	}
	// How the controller keeps each node's lines.
	const content = `content: "{{ hostvars[item].slurm_mig_gen.stdout }}\n"`
	dest := regexp.MustCompile(`dest: "(/etc/slurm/fleet)/\{\{ item \}\}\.conf"`).FindStringSubmatch(playbook)
	if !strings.Contains(playbook, content) || dest == nil {
		t.Fatalf("the copy task no longer writes %s to /etc/slurm/fleet/{{ item }}.conf", content)
	}

	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	etc := filepath.Join(tmp, "etc-slurm")
	mustWrite(t, filepath.Join(root, "proc/driver/nvidia-caps/mig-minors"), string(fixture.Read(t, fixture.RealMigMinors)))
	localize := func(args []string) []string {
		out := []string{"--root", root}
		for _, a := range args {
			out = append(out, strings.ReplaceAll(a, "/etc/slurm", etc))
		}
		return out
	}

	// The GPU nodes' play: gen on each, its stdout as Ansible keeps it
	// (trailing newline dropped), written as the copy task writes it.
	split := fakeNode(nvmlfake.MigDevice{HandleIndex: 0, GI: 7, CI: 0, UUID: "MIG-00000001-0000-4000-8000-000000000000", Profile: "1g.10gb"},
		nvmlfake.MigDevice{HandleIndex: 1, GI: 8, CI: 0, UUID: "MIG-00000002-0000-4000-8000-000000000000", Profile: "1g.10gb"})
	whole := fakeNode()
	inventory := map[string]*nvmlfake.Fixture{"n1.cluster": split, "n2.cluster": whole, "n3.cluster": split}
	fragments := map[string]string{}
	for host, fixture := range inventory {
		stdout := runExample(t, localize(gen), fixture, host)
		kept := strings.TrimRight(stdout, "\n") + "\n"
		mustWrite(t, filepath.Join(strings.Replace(dest[1], "/etc/slurm", etc, 1), host+".conf"), kept)
		fragments[strings.TrimSuffix(host, ".cluster")] = filepath.Join(etc, "fleet", host+".conf")
	}

	// The controller's merges, run twice.
	for round := 0; round < 2; round++ {
		for _, args := range merges {
			var res struct {
				Changed *bool
				Nodes   int
				Layouts int
			}
			if err := json.Unmarshal([]byte(runExample(t, localize(args), nil, "controller")), &res); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			if res.Changed == nil || *res.Changed != (round == 0) || res.Nodes != 3 || res.Layouts != 2 {
				t.Errorf("%v round %d: changed %v, %d nodes, %d layouts; want changed %v, 3 nodes, 2 layouts",
					args, round, res.Changed, res.Nodes, res.Layouts, round == 0)
			}
		}
	}
	merged := filepath.Join(etc, "gres.conf")
	for node, fragment := range fragments {
		want, err := slurmconf.ReadGresConf(fragment, node)
		if err != nil {
			t.Fatal(err)
		}
		got, err := slurmconf.ReadGresConf(merged, node)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(units(t, want), units(t, got)); diff != "" {
			t.Errorf("%s in the merged gres.conf (-gen +merged):\n%s", node, diff)
		}
	}
	lines, err := os.ReadFile(filepath.Join(etc, "gres-nodes.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "NodeName=n[1,3] Gres=gpu:h100_1g.10gb:2\nNodeName=n2 Gres=gpu:h100:1\n"; string(lines) != want {
		t.Errorf("gres-nodes.conf:\n%s\nwant:\n%s", lines, want)
	}
}

// fakeNode is a node of one H100, split into migs (whole without any).
func fakeNode(migs ...nvmlfake.MigDevice) *nvmlfake.Fixture {
	gpu := nvmlfake.GPU{Minor: 0, UUID: "GPU-00000001-0000-4000-8000-000000000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:00:06.0", MemoryMiB: 81559,
		MigMode: "disabled", MigDevices: migs}
	if len(migs) > 0 {
		gpu.MigMode = "enabled"
	}
	return &nvmlfake.Fixture{DriverVersion: "580.159.04", GPUs: []nvmlfake.GPU{gpu}}
}

// runExample runs one slurm-mig command line of an example on a host with
// the fake NVML fixture (nil: none needed) and returns its stdout.
func runExample(t *testing.T, args []string, fixture *nvmlfake.Fixture, host string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &env{stdout: &stdout, stderr: &stderr,
		newNVML: func() nvml.Interface {
			if fixture == nil {
				return nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))
			}
			lib, _ := nvmlfake.New(fixture)
			return lib
		},
		hostname: func() (string, error) { return host, nil }})
	if code != exitOK {
		t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
	}
	return stdout.String()
}

// units are a node's devices as Slurm counts them.
func units(t *testing.T, conf *slurmconf.GresConf) []slurmconf.Unit {
	t.Helper()
	var recs []slurmconf.GresRecord
	for _, r := range conf.GresRecords() {
		r.NodeName = ""
		recs = append(recs, r)
	}
	u, err := slurmconf.SplitUnits(recs)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
