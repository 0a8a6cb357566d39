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
	if diff := cmp.Diff(CountGres(in), CountGres(got)); diff != "" {
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
	if diff := cmp.Diff(want, CountGres(recs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := NodeLine("n1", CountGres(recs)); got != "NodeName=n1 Gres=gpu:a100:2,gpu:a100_1g.10gb:2,gpu:A100:1" {
		t.Errorf("NodeLine = %q", got)
	}
	if got := NodeLine("", CountGres(recs[:1])); got != "Gres=gpu:a100:2" {
		t.Errorf("NodeLine without node = %q", got)
	}
	if got := NodeLine("n1", nil); got != "NodeName=n1" {
		t.Errorf("NodeLine without GRES = %q", got)
	}
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
