package slurmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// checkCase is a gres.conf and the node's Gres= that `slurm-mig check`
// and real slurmd -G both read. $D in the gres.conf is a directory of
// device nodes (nvidia0-3, nvidia-caps/nvidia-cap10-15); $H is this host,
// the node checked.
type checkCase struct {
	name, gres, decl string
	// want is what check must say, and slurmd must do: "fatal" (slurmd
	// dies), "error" (it logs an error: and goes on), "clean".
	want string
}

// checkCases pin each fatal and error of check against the real slurmd,
// with controls that are clean.
var checkCases = []checkCase{
	// Clean controls.
	{"clean-range", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=gpu Type=b File=$D/nvidia2\n", "Gres=gpu:a:2,gpu:b:1", "clean"},
	{"clean-order-of-slurm-conf", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=gpu Type=b File=$D/nvidia2\n", "Gres=gpu:b:1,gpu:a:2", "clean"},
	{"clean-global-before-node", "NodeName=$H Name=gpu Type=a File=$D/nvidia0\nName=gpu Type=a File=$D/nvidia1\n", "Gres=gpu:a:2", "clean"},
	{"clean-other-node", "NodeName=other[1-4] Name=gpu Type=a File=$D/nvidia[0-3]\nNodeName=$H Name=gpu Type=a File=$D/nvidia1\n", "Gres=gpu:a:1", "clean"},
	{"clean-type-case", "Name=gpu Type=A File=$D/nvidia[0-1]\n", "Gres=gpu:a:2", "clean"},
	{"clean-untyped-declared", "Name=gpu Type=a File=$D/nvidia[0-1]\n", "Gres=gpu:2", "clean"},
	{"multiplefiles", "Name=gpu Type=a MultipleFiles=$D/nvidia0,$D/nvidia-caps/nvidia-cap10,$D/nvidia-caps/nvidia-cap11\nName=gpu Type=a MultipleFiles=$D/nvidia0,$D/nvidia-caps/nvidia-cap12,$D/nvidia-caps/nvidia-cap13\n", "Gres=gpu:a:2", "clean"},
	{"clean-count-matches", "Name=gpu Type=a File=$D/nvidia[0-1] Count=2\n", "Gres=gpu:a:2", "clean"},
	{"clean-include-autodetect-off", "AutoDetect=off\nName=gpu Type=a File=$D/nvidia[0-3] Cores=0-1\n", "Gres=gpu:a:4", "clean"},
	{"clean-mps", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=mps Count=100\n", "Gres=gpu:a:2,mps:100", "clean"},
	// Fatal: slurmd dies.
	{"fatal-file-and-not", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=gpu Type=b Count=2\n", "Gres=gpu:a:2,gpu:b:2", "fatal"},
	{"fatal-autodetect-differ", "NodeName=$H AutoDetect=off\nNodeName=$H AutoDetect=nvml\nName=gpu Type=a File=$D/nvidia[0-1]\n", "Gres=gpu:a:2", "fatal"},
	{"fatal-shared-without-sharing", "Name=mps Count=100\n", "Gres=mps:100", "fatal"},
	{"fatal-count-disagrees", "Name=gpu Type=a File=$D/nvidia[0-1] Count=3\n", "Gres=gpu:a:2", "fatal"},
	{"fatal-first-key", "Type=a File=$D/nvidia[0-1]\n", "Gres=gpu:a:2", "fatal"},
	{"fatal-unknown-key", "Name=gpu Type=a File=$D/nvidia[0-1] Foo=1\n", "Gres=gpu:a:2", "fatal"},
	{"fatal-autodetect-not-alone", "AutoDetect=off Name=gpu Type=a File=$D/nvidia[0-1]\n", "Gres=gpu:a:2", "fatal"},
	{"fatal-file-and-multiplefiles", "Name=gpu Type=a File=$D/nvidia0 MultipleFiles=$D/nvidia1,$D/nvidia2\n", "Gres=gpu:a:1", "fatal"},
	{"fatal-multiplefiles-of-one-file", "Name=gpu Type=a MultipleFiles=$D/nvidia1\n", "Gres=gpu:a:1", "fatal"},
	{"fatal-typed-and-untyped-gres", "Name=gpu Type=a File=$D/nvidia[0-1]\n", "Gres=gpu:a:2,gpu:3", "fatal"},
	{"fatal-type-and-none", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=gpu File=$D/nvidia[2-3]\n", "Gres=gpu:4", "fatal"},
	{"fatal-duplicate-count-only", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=nic Count=2\nName=nic Count=2\n", "Gres=gpu:a:2,nic:4", "fatal"},
	{"fatal-duplicate-device-file", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=gpu Type=a File=$D/nvidia1\n", "Gres=gpu:a:3", "fatal"},
	{"fatal-env-flags-differ", "Name=gpu Type=a File=$D/nvidia0\nName=gpu Type=a File=$D/nvidia1 Flags=nvidia_gpu_env\n", "Gres=gpu:a:2", "fatal"},
	{"fatal-shared-declared-beyond", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=shard Count=8\n", "Gres=gpu:a:2,shard:16", "fatal"},
	// Error: slurmd logs and goes on.
	{"error-no-name", "NodeName=$H Type=a File=$D/nvidia[0-1]\nName=gpu Type=b File=$D/nvidia2\n", "Gres=gpu:b:1", "error"},
	{"error-bad-hostlist", "NodeName=[localmachine] Name=gpu Type=a File=$D/nvidia[0-1]\nName=gpu Type=b File=$D/nvidia2\n", "Gres=gpu:b:1", "error"},
	{"error-autodetect-nvidia", "AutoDetect=nvidia\nName=gpu Type=a File=$D/nvidia[0-1]\n", "Gres=gpu:a:2", "error"},
	{"error-cores", "Name=gpu Type=a File=$D/nvidia[0-1] Cores=0-10000\n", "Gres=gpu:a:2", "error"},
	{"error-key-twice", "Name=gpu Type=a Type=b File=$D/nvidia[0-1]\n", "Gres=gpu:b:2", "error"},
	{"error-global-autodetect-twice", "AutoDetect=off\nAutoDetect=off\nName=gpu Type=a File=$D/nvidia[0-1]\n", "Gres=gpu:a:2", "error"},
	{"error-fewer-than-declared", "Name=gpu Type=a File=$D/nvidia[0-1]\n", "Gres=gpu:a:3", "error"},
	{"error-name-not-in-grestypes", "Name=gpu Type=a File=$D/nvidia[0-1]\nName=foo Count=1\n", "Gres=gpu:a:2,bar:1", "error"},
	{"error-fileless-gpu", "Name=gpu Type=b Count=1\n", "Gres=gpu:b:1", "error"},
}

// TestCheckAgainstSlurmd has check and slurmd -G read each case: check
// must say fatal exactly where slurmd dies, report an error wherever
// slurmd logs one, and otherwise give the GPU records slurmd prints, in
// its order.
func TestCheckAgainstSlurmd(t *testing.T) {
	Require(t, "slurmd")
	RequireRoot(t)
	host := shortHostname(t)
	hw := hardware(t)
	devDir := t.TempDir()
	makeCheckDevices(t, devDir)
	for _, c := range checkCases {
		// silent: slurmd says nothing, yet reads the lines otherwise
		// than written, which check reports as a warning; the records
		// show what slurmd made of them.
		silent := false
		if c.name == "multiplefiles" {
			// GresTypes= names mps and shard in these tests: before
			// 23.02.7 slurmd splits each MultipleFiles= record into one
			// GPU per file, saying nothing.
			switch {
			case release.Before(slurmconf.SharedFilesSince):
				// The records share /dev/nvidia0, which 20.11 refuses.
				c.name, c.want = "multiplefiles/shared-files-refused-before-21.08", "fatal"
			case release.Before(slurmconf.Version{Major: 23, Minor: 2, Micro: -1}):
				c.name, silent = "multiplefiles/split-silently-before-23.02.7", true
			default:
				c.name += "/kept-from-23.02.7"
			}
		}
		before2108 := release.Before(slurmconf.Version{Major: 21, Minor: 8, Micro: -1})
		switch {
		case c.name == "fatal-env-flags-differ" && before2108:
			c.name, c.want = c.name+"/no-env-flags-before-21.08", "clean"
		case c.name == "fatal-shared-declared-beyond" && release.Before(slurmconf.Version{Major: 22, Minor: 5, Micro: -1}):
			c.name, c.want = c.name+"/not-before-22.05", "clean"
		case c.name == "fatal-multiplefiles-of-one-file" && before2108:
			// 20.11 reads it; check, whose reading of a line knows no
			// release, does not follow it there (docs/check.md).
			continue
		}
		if c.name == "error-autodetect-nvidia" {
			switch {
			case release.Before(slurmconf.Version{Major: 21, Minor: 8, Micro: -1}):
				c.name, c.want = c.name+"/ignored-without-a-word-before-21.08", "clean"
			case !release.Before(slurmconf.Version{Major: 24, Minor: 11, Micro: -1}):
				c.name, c.want = c.name+"/known-from-24.11", "clean"
			}
		}
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			gres := strings.NewReplacer("$D", devDir, "$H", host).Replace(c.gres)
			slurm := strings.Replace(slurmConf(dir, host, "NodeName="+host+" "+c.decl, hw, ports{}), "GresTypes=gpu\n", "GresTypes=gpu,mps,shard,nic\n", 1)
			conf := writeConfigs(t, dir, gres, slurm)
			died, errs, gpus := slurmdCheck(t, conf, host)
			rep := runCheck(t, filepath.Join(dir, "gres.conf"), conf, host)
			got := rep.verdict()
			slurmd := "clean"
			switch {
			case died:
				slurmd = "fatal"
			case len(errs) > 0:
				slurmd = "error"
			}
			if silent && !rep.warned() {
				t.Errorf("check: %v, want a warning that slurmd reads the lines otherwise than written", rep.Nodes[0].Problems)
			}
			if slurmd != c.want {
				t.Errorf("slurmd -G: %s (%q), want %s", slurmd, errs, c.want)
			}
			if got != slurmd {
				t.Errorf("check: %s (%v), slurmd -G: %s (%q)", got, rep.Nodes[0].Problems, slurmd, errs)
			}
			if !died {
				if diff := cmp.Diff(gpus, rep.gpus()); diff != "" {
					t.Errorf("GPU records (-slurmd -G +check):\n%s", diff)
				}
			}
		})
	}
}

// makeCheckDevices makes the device nodes the cases name.
func makeCheckDevices(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "nvidia-caps"), 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(path string, major, minor uint32) {
		if err := syscall.Mknod(filepath.Join(dir, path), syscall.S_IFCHR|0o666, int(mkdev(major, minor))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
	}
	for i := uint32(0); i < 4; i++ {
		mk(fmt.Sprintf("nvidia%d", i), 195, i)
	}
	for i := uint32(10); i < 16; i++ {
		mk(fmt.Sprintf("nvidia-caps/nvidia-cap%d", i), 241, i)
	}
}

var slurmdName = regexp.MustCompile(`\bName=(\S+)`)

// slurmdCheck runs slurmd -N host -G: whether it died, its error: lines,
// and its GPU records as "type files".
func slurmdCheck(t *testing.T, conf, host string) (died bool, errs, gpus []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "slurmd", "-N", host, "-G")
	cmd.Env = slurmEnv(conf)
	out, err := cmd.CombinedOutput()
	died = err != nil
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		prefix := gresLine.FindString(line)
		if prefix == "" {
			switch {
			case strings.Contains(line, "fatal:"):
				died = true
				errs = append(errs, line)
			case strings.Contains(line, "error: System GPU detection failed"):
				// AutoDetect= asks for GPUs this machine does not
				// have: a word of the machine, not of the config.
			case strings.Contains(line, "error:"):
				errs = append(errs, line)
			}
			continue
		}
		rec, ok := slurmdGPU(t, line[len(prefix):])
		if !ok {
			continue
		}
		gpus = append(gpus, rec.Type+" "+rec.Files)
	}
	return died, errs, gpus
}

// checkReport is check --json.
type checkReport struct {
	Nodes []struct {
		Node string `json:"node"`
		Gres []struct {
			Name  string   `json:"name"`
			Type  string   `json:"type"`
			Files []string `json:"files"`
		} `json:"gres"`
		Problems []struct {
			Pos      string `json:"pos"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
		} `json:"problems"`
	} `json:"nodes"`
	Verdict string `json:"verdict"`
	status  int
}

func runCheck(t *testing.T, gresConf, slurmConf, host string) checkReport {
	t.Helper()
	code, out, errs := runSlurmMigCode(t, "check", "--gres-conf", gresConf, "--slurm-conf", slurmConf,
		"--node", host, "--slurm-version", release.String(), "--json")
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Nodes) != 1 {
		t.Fatalf("check: exit %d, %v: %s%s", code, err, out, errs)
	}
	rep.status = code
	return rep
}

// verdict is fatal, error (an error: slurmd logs) or clean; drains are
// slurmctld's, not slurmd's, warnings what slurmd does not log, and a
// device listed twice slurm-mig's own error, of which slurmd says
// nothing from 21.08.
func (r checkReport) verdict() string {
	v := "clean"
	for _, p := range r.Nodes[0].Problems {
		if strings.Contains(p.Message, "is listed twice") {
			continue
		}
		switch p.Severity {
		case "fatal":
			return "fatal"
		case "error":
			v = "error"
		}
	}
	return v
}

// warned reports whether check gave a warning.
func (r checkReport) warned() bool {
	for _, p := range r.Nodes[0].Problems {
		if p.Severity == "warning" {
			return true
		}
	}
	return false
}

func (r checkReport) gpus() []string {
	var out []string
	for _, g := range r.Nodes[0].Gres {
		if g.Name == "gpu" {
			out = append(out, g.Type+" "+strings.Join(g.Files, ","))
		}
	}
	return out
}

// TestCheckNodeNotDeclared: slurmd -N of a node that slurm.conf does not
// declare does not start, and check says so.
func TestCheckNodeNotDeclared(t *testing.T) {
	Require(t, "slurmd")
	RequireRoot(t)
	host := shortHostname(t)
	devDir := t.TempDir()
	makeCheckDevices(t, devDir)
	dir := t.TempDir()
	conf := writeConfigs(t, dir, "Name=gpu Type=a File="+devDir+"/nvidia[0-1]\n", slurmConf(dir, host, "NodeName="+host+" Gres=gpu:a:2", hardware(t), ports{}))
	const other = "nosuchnode"
	died, errs, _ := slurmdCheck(t, conf, other)
	rep := runCheck(t, filepath.Join(dir, "gres.conf"), conf, other)
	if !died || rep.verdict() != "fatal" || rep.status != 2 {
		t.Errorf("slurmd -N %s -G died: %v (%q); check: %s, exit %d, %v", other, died, errs, rep.verdict(), rep.status, rep.Nodes[0].Problems)
	}
}
