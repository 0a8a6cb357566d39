package slurmconf

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGresRecordString(t *testing.T) {
	for _, c := range []struct {
		r    GresRecord
		want string
	}{
		{GresRecord{NodeName: "n1", Name: "gpu", Type: "a100", File: "/dev/nvidia0"}, "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0"},
		{GresRecord{Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap336", "/dev/nvidia-caps/nvidia-cap337"}},
			"Name=gpu Type=a100_1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337"},
		{GresRecord{Name: "gpu", File: "/dev/nvidia[0-3]"}, "Name=gpu File=/dev/nvidia[0-3]"},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestCompact(t *testing.T) {
	mig := GresRecord{Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap201", "/dev/nvidia-caps/nvidia-cap202"}}
	in := []GresRecord{
		{Name: "gpu", Type: "a100", File: "/dev/nvidia0"},
		mig,
		{Name: "gpu", Type: "h100", File: "/dev/nvidia2"},
		{Name: "gpu", Type: "a100", File: "/dev/nvidia3"},
		{Name: "gpu", Type: "a100", File: "/dev/nvidia4"},
		mig,
		{Name: "gpu", Type: "1g.10gb", File: "/dev/nvidia-caps/nvidia-cap337"},
		{Name: "gpu", Type: "1g.10gb", File: "/dev/nvidia-caps/nvidia-cap346"},
		{Name: "gpu", Type: "1g.10gb", File: "/dev/nvidia-caps/nvidia-cap355"},
		{NodeName: "n2", Name: "gpu", Type: "a100", File: "/dev/nvidia5"},
	}
	want := []GresRecord{
		{Name: "gpu", Type: "a100", File: "/dev/nvidia[0,3-4]"},
		mig,
		{Name: "gpu", Type: "h100", File: "/dev/nvidia2"},
		mig,
		{Name: "gpu", Type: "1g.10gb", File: "/dev/nvidia-caps/nvidia-cap[337,346,355]"},
		{NodeName: "n2", Name: "gpu", Type: "a100", File: "/dev/nvidia5"},
	}
	got := Compact(in)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Compaction never changes what Slurm counts.
	if diff := cmp.Diff(mustCount(t, in), mustCount(t, got)); diff != "" {
		t.Errorf("counts changed (-before +after):\n%s", diff)
	}
}

func TestCountAndNodeLine(t *testing.T) {
	recs := []GresRecord{
		{Name: "gpu", Type: "a100", File: "/dev/nvidia[0-1]"},
		{Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap336", "/dev/nvidia-caps/nvidia-cap337"}},
		{Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap345", "/dev/nvidia-caps/nvidia-cap346"}},
		{Name: "gpu", Type: "A100", File: "/dev/nvidia3"},
	}
	want := []GresCount{{"gpu", "a100", 2}, {"gpu", "a100_1g.10gb", 2}, {"gpu", "A100", 1}}
	if diff := cmp.Diff(want, mustCount(t, recs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := NodeLine("n1", mustCount(t, recs)); got != "NodeName=n1 Gres=gpu:a100:2,gpu:a100_1g.10gb:2,gpu:A100:1" {
		t.Errorf("NodeLine = %q", got)
	}
	if got := NodeLine("", mustCount(t, recs[:1])); got != "Gres=gpu:a100:2" {
		t.Errorf("NodeLine without node = %q", got)
	}
	if got := NodeLine("n1", nil); got != "NodeName=n1" {
		t.Errorf("NodeLine without GRES = %q", got)
	}
	// slurmd -C's hardware goes between NodeName= and Gres=.
	if got := NodeLine("n1", mustCount(t, recs[:1]), "CPUs=2", "Boards=1"); got != "NodeName=n1 CPUs=2 Boards=1 Gres=gpu:a100:2" {
		t.Errorf("NodeLine with hardware = %q", got)
	}
	if got := NodeLine("", nil, "CPUs=2"); got != "CPUs=2" {
		t.Errorf("NodeLine with hardware alone = %q", got)
	}
}

// A File= that is no file range Slurm reads is refused, not counted as
// one device.
func TestUnitsRefusesBadFile(t *testing.T) {
	bad := GresRecord{Name: "gpu", Type: "a100", File: "/dev/nvidia[3-1]"}
	if n, err := bad.Units(); err == nil {
		t.Errorf("Units of File=%s = %d, want an error", bad.File, n)
	}
	if _, err := CountGres([]GresRecord{{Name: "gpu", File: "/dev/nvidia0"}, bad}); err == nil {
		t.Errorf("CountGres accepted File=%s", bad.File)
	}
	if _, err := SplitUnits([]GresRecord{bad}); err == nil {
		t.Errorf("SplitUnits accepted File=%s", bad.File)
	}
}

func TestGresNameAndFlags(t *testing.T) {
	if got := GresName("gpu", "a100_1g.10gb"); got != "gpu:a100_1g.10gb" {
		t.Errorf("GresName = %q", got)
	}
	if got := GresName("shard", ""); got != "shard" {
		t.Errorf("GresName without type = %q", got)
	}
	if err := ValidFlags("nvidia_gpu_env,CountOnly"); err != nil {
		t.Errorf("ValidFlags: %v", err)
	}
	if err := ValidFlags("NVIDIA_GPU_ENV"); err != nil {
		t.Errorf("ValidFlags is case-blind as Slurm: %v", err)
	}
	for _, bad := range []string{"gpu_magic", "nvidia_gpu_env,", "nvidia_gpu_env gpu"} {
		if ValidFlags(bad) == nil {
			t.Errorf("ValidFlags(%q) accepted", bad)
		}
	}
}

func mustCount(t *testing.T, recs []GresRecord) []GresCount {
	t.Helper()
	counts, err := CountGres(recs)
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

func TestWriteGresConf(t *testing.T) {
	var buf bytes.Buffer
	err := WriteGresConf(&buf, []string{"written by test"}, []GresRecord{{Name: "gpu", Type: "a100", File: "/dev/nvidia0"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "# written by test\nName=gpu Type=a100 File=/dev/nvidia0\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestValidType(t *testing.T) {
	for _, ok := range []string{"a100", "a100_1g.10gb+me", "nvidia_a100-sxm4-80gb", "1c.3g.40gb"} {
		if err := ValidType(ok); err != nil {
			t.Errorf("ValidType(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a,b", "a:b", "a=b", "a#b"} {
		if ValidType(bad) == nil {
			t.Errorf("ValidType(%q) accepted", bad)
		}
	}
}
