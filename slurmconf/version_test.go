package slurmconf

import (
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{
		"slurm-wlm 20.11.4\n": "20.11.4", // Debian's: bullseye (slurmtest/testdata/*/slurmd-V.txt)
		"slurm-wlm 22.05.8\n": "22.05.8", // bookworm
		"slurm-wlm 24.11.5\n": "24.11.5", // trixie
		"slurm-wlm 26.05.5\n": "26.05.5", // sid
		"slurm 24.11.5":       "24.11.5", // upstream's
		"21.08":               "21.08",
		"26.05.0-0rc1":        "26.05.0",
		"  23.02.7  ":         "23.02.7",
	} {
		v, err := ParseVersion(in)
		if err != nil || v.String() != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %s", in, v, err, want)
		}
	}
	for _, in := range []string{"", "slurm", "20", "x.11", "20.x", "20.13", "0.1", "20.11.x", "-1.5"} {
		if v, err := ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error", in, v)
		}
	}
}

func TestVersionBefore(t *testing.T) {
	v2011 := Version{20, 11, 4}
	for _, c := range []struct {
		v, r Version
		want bool
	}{
		{v2011, SharedFilesSince, true},
		{v2011, MultipleFilesSince, false},
		{Version{21, 8, 0}, SharedFilesSince, false},
		{Version{21, 8, 8}, SharedFilesSince, false},
		{Version{20, 2, 7}, MultipleFilesSince, true},
		{Version{}, SharedFilesSince, false}, // unknown: nothing refused
	} {
		if got := c.v.Before(c.r); got != c.want {
			t.Errorf("%v.Before(%v) = %v, want %v", c.v, c.r, got, c.want)
		}
	}
}

// migRecords are two MIG devices of one GPU, in each file style: the
// MultipleFiles= records share /dev/nvidia2.
func migRecords(node string) (multiple, ci []GresRecord) {
	multiple = []GresRecord{
		{NodeName: node, Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"}},
		{NodeName: node, Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap31"}},
	}
	ci = []GresRecord{
		{NodeName: node, Name: "gpu", Type: "a100_1g.10gb", File: "/dev/nvidia-caps/nvidia-cap22"},
		{NodeName: node, Name: "gpu", Type: "a100_1g.10gb", File: "/dev/nvidia-caps/nvidia-cap31"},
	}
	return multiple, ci
}

func TestCheckGresSharedFiles(t *testing.T) {
	multiple, ci := migRecords("n1")
	v2011, v2108, v2411 := Version{20, 11, 4}, Version{21, 8, 0}, Version{24, 11, 5}

	err := CheckGres(v2011, multiple)
	if err == nil || err.Error() != `Slurm 20.11.4 would refuse this gres.conf: two MultipleFiles= records of node n1 (a100_1g.10gb) share /dev/nvidia2, which Slurm allows from 21.08 on` ||
		!err.(*RefusedError).SharedFiles || err.(*RefusedError).File != "/dev/nvidia2" {
		t.Errorf("20.11 on MIG devices sharing their GPU's file: %v", err)
	}
	for _, v := range []Version{v2108, v2411, {}} {
		if err := CheckGres(v, multiple); err != nil {
			t.Errorf("%v on MultipleFiles= sharing a file: %v, want accepted", v, err)
		}
	}
	for _, v := range []Version{v2011, v2411} {
		if err := CheckGres(v, ci); err != nil {
			t.Errorf("%v on File= of CI caps: %v, want accepted", v, err)
		}
	}
	// One MIG device per GPU shares nothing: 20.11 takes it.
	if err := CheckGres(v2011, multiple[:1]); err != nil {
		t.Errorf("20.11 on one MIG device: %v", err)
	}
	// Records of two nodes never clash.
	other, _ := migRecords("n2")
	if err := CheckGres(v2011, append(multiple[:1:1], other[1])); err != nil {
		t.Errorf("20.11 on one MIG device on each of two nodes: %v", err)
	}
	// ... unless the node names overlap as hostlists.
	ranged, _ := migRecords("n[1-2]")
	if err := CheckGres(v2011, append(multiple[:1:1], ranged[1])); err == nil || !strings.Contains(err.Error(), "of node n1") {
		t.Errorf("20.11 on n1 and n[1-2] sharing /dev/nvidia2: %v", err)
	}
	// A record for every node joins each node's.
	global, _ := migRecords("")
	if err := CheckGres(v2011, append(multiple[:1:1], global[1])); err == nil {
		t.Error("20.11 on a node's record and a global one sharing /dev/nvidia2: accepted")
	}
	if err := CheckGres(v2011, global); err == nil || strings.Contains(err.Error(), "of node") {
		t.Errorf("20.11 on two global records sharing /dev/nvidia2: %v", err)
	}
	// A File= in two records: every release refuses it.
	dup := []GresRecord{{NodeName: "n1", Name: "gpu", File: "/dev/nvidia[0-1]"}, {NodeName: "n1", Name: "gpu", File: "/dev/nvidia1"}}
	for _, v := range []Version{v2011, v2411} {
		if err := CheckGres(v, dup); err == nil || err.Error() != "Slurm "+v.String()+` would refuse this gres.conf ("duplicate device file name"): /dev/nvidia1 is in two records of node n1` || err.(*RefusedError).SharedFiles {
			t.Errorf("%v on File=/dev/nvidia1 twice: %v", v, err)
		}
	}
	// Other GRES names are checked apart.
	mps := []GresRecord{{NodeName: "n1", Name: "gpu", File: "/dev/nvidia0"}, {NodeName: "n1", Name: "mps", File: "/dev/nvidia0", Count: 100}}
	if err := CheckGres(v2011, mps); err != nil {
		t.Errorf("gpu and mps on one file: %v", err)
	}
}

func TestCheckGresMultipleFilesKey(t *testing.T) {
	multiple, _ := migRecords("n1")
	err := CheckGres(Version{20, 2, 7}, multiple[:1])
	if err == nil || !strings.Contains(err.Error(), "Slurm 20.02.7 would refuse this gres.conf: it knows no MultipleFiles= (that came in 20.11)") {
		t.Errorf("20.02 on MultipleFiles=: %v", err)
	}
	if r, _ := err.(*RefusedError); r == nil || !r.CIFilesRead {
		t.Errorf("20.02 on MultipleFiles=: %+v, want CIFilesRead", r)
	}
}

func TestCheckGresFlags(t *testing.T) {
	rec := func(flags string) []GresRecord {
		return []GresRecord{{NodeName: "n1", Name: "gpu", File: "/dev/nvidia0", Flags: flags}}
	}
	for _, c := range []struct {
		v     Version
		flags string
		want  string // "" accepted
	}{
		{Version{20, 11, 4}, "CountOnly", ""},
		{Version{20, 11, 4}, "nvidia_gpu_env", "Slurm 20.11.4 does not know Flags=nvidia_gpu_env (that came in 21.08)"},
		{Version{22, 5, 8}, "nvidia_gpu_env,one_sharing", ""},
		{Version{22, 5, 8}, "nvidia_gpu_env,explicit", "does not know Flags=explicit (that came in 23.02)"},
		{Version{24, 11, 5}, "NVIDIA_GPU_ENV,Explicit", ""},
		{Version{24, 11, 5}, "nvidia_gpu_env,env_uuid", "Slurm 24.11.5 does not know Flags=env_uuid (that came in 26.05)"},
		{Version{26, 5, 5}, "nvidia_gpu_env,env_uuid", ""},
		{Version{}, "env_uuid", ""},
	} {
		err := CheckGres(c.v, rec(c.flags))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v with Flags=%s: %v, want %q", c.v, c.flags, err, c.want)
		}
	}
}
