package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestCapturedNodes checks nodes captured from real GPU hosts
// (scripts/capture-node.sh, kept under testdata/real/*): that gen and
// node --full from the captured snapshot give what slurm-mig printed on
// the host, and that what it printed agrees with NVIDIA's own view in
// nvidia-smi topo -m: Links= the NV# counts per peer (-1 for the GPU
// itself, 0 where no NVLink joins them) and each GPU's CPU affinity.
func TestCapturedNodes(t *testing.T) {
	for _, snapFile := range fixture.Glob(t, "real/*/snapshot.json") {
		dir := filepath.Dir(snapFile)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			read := func(name string) string {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			root := filepath.Join(dir, "root")
			gen := runCaptured(t, "--root", root, "gen", "--from", snapFile)
			if diff := cmp.Diff(configLines(read("gres.conf")), configLines(gen)); diff != "" {
				t.Errorf("gen --from the snapshot differs from gen on the host (-host +here):\n%s", diff)
			}
			full := runCaptured(t, "--root", root, "node", "--full", "--from", snapFile)
			if diff := cmp.Diff(read("node-full.txt"), full); diff != "" {
				t.Errorf("node --full differs from the host's (-host +here):\n%s", diff)
			}

			node, err := snapshot.Load(snapFile)
			if err != nil {
				t.Fatal(err)
			}
			links, affinity := parseTopoMatrix(t, read("topo-m.txt"))
			conf, err := slurmconf.ReadGresConf(filepath.Join(dir, "gres.conf"), node.Hostname)
			if err != nil {
				t.Fatal(err)
			}
			if len(conf.Records) != len(links) {
				t.Fatalf("gres.conf has %d records, topo -m %d GPUs", len(conf.Records), len(links))
			}
			// A node without NVLink between its GPUs gets no Links= at all
			// (a lone GPU's topo -m row is its own -1).
			noNVLink := true
			for _, l := range links {
				for _, n := range strings.Split(l, ",") {
					noNVLink = noNVLink && (n == "-1" || n == "0")
				}
			}
			for i, r := range conf.Records {
				if noNVLink && r.Links == "" {
					continue
				}
				if r.Links != links[i] {
					t.Errorf("GPU%d: gres.conf Links=%s, topo -m says %s", i, r.Links, links[i])
				}
			}
			for i, g := range node.GPUs {
				if g.CPUAffinity != affinity[i] {
					t.Errorf("GPU%d: CPU affinity %q, topo -m says %q", i, g.CPUAffinity, affinity[i])
				}
			}
		})
	}
}

func runCaptured(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stderr, hostname: func() (string, error) { return "elsewhere", nil }}
	if code := run(args, e); code != exitOK || stderr.Len() > 0 {
		t.Fatalf("slurm-mig %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// configLines drops comments (the first names the version that wrote it).
func configLines(conf string) []string {
	var out []string
	for _, l := range strings.Split(conf, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")

// parseTopoMatrix reads nvidia-smi topo -m: for each GPU row, the Links=
// value Slurm would want (NV# per GPU column, X as -1, any PCIe path as
// 0) and the CPU Affinity column. The header underlines itself with ANSI
// escapes; rows and columns are tab-separated.
func parseTopoMatrix(t *testing.T, text string) (links, affinity []string) {
	t.Helper()
	lines := strings.Split(ansiEscape.ReplaceAllString(text, ""), "\n")
	header := strings.Split(strings.TrimSpace(lines[0]), "\t")
	gpuCols, affinityCol := 0, -1
	for i, h := range header {
		if strings.HasPrefix(h, "GPU") && !strings.Contains(h, " ") {
			gpuCols++
		}
		if h == "CPU Affinity" {
			affinityCol = i
		}
	}
	for _, row := range lines[1:] {
		cells := strings.Split(row, "\t")
		if len(cells) < 1+gpuCols || !strings.HasPrefix(cells[0], "GPU") {
			continue
		}
		var counts []string
		for _, c := range cells[1 : 1+gpuCols] {
			c = strings.TrimSpace(c)
			switch {
			case c == "X":
				counts = append(counts, "-1")
			case strings.HasPrefix(c, "NV"):
				if _, err := strconv.Atoi(c[2:]); err != nil {
					t.Fatalf("topo -m cell %q", c)
				}
				counts = append(counts, c[2:])
			default:
				counts = append(counts, "0")
			}
		}
		links = append(links, strings.Join(counts, ","))
		if affinityCol >= 0 {
			affinity = append(affinity, strings.TrimSpace(cells[affinityCol+1]))
		}
	}
	if len(links) == 0 || affinityCol < 0 {
		t.Fatalf("topo -m: no GPU rows or no CPU Affinity column in %q", text)
	}
	return links, affinity
}
