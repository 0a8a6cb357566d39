package main

import (
	"errors"
	"testing"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// A refusal is one line that says nothing was written and gives the fix,
// as its hint; which command said the release only where it was not
// --slurm-version.
func TestRefusal(t *testing.T) {
	multiple := []slurmconf.GresRecord{
		{NodeName: "gpu01", Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap301", "/dev/nvidia-caps/nvidia-cap302"}},
		{NodeName: "gpu01", Name: "gpu", Type: "a100_1g.10gb", MultipleFiles: []string{"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap310", "/dev/nvidia-caps/nvidia-cap311"}},
	}
	for from, want := range map[string]string{
		"":          "Slurm 20.11.4 would refuse this gres.conf: two MultipleFiles= records of node gpu01 (a100_1g.10gb) share /dev/nvidia2, which Slurm allows from 21.08 on; nothing was written; --files ci writes what every Slurm reads",
		"slurmd -V": "Slurm 20.11.4 would refuse this gres.conf: two MultipleFiles= records of node gpu01 (a100_1g.10gb) share /dev/nvidia2, which Slurm allows from 21.08 on; nothing was written; --files ci writes what every Slurm reads (slurmd -V said 20.11.4; --slurm-version X.Y names the Slurm that reads it)",
	} {
		err := slurmconf.CheckGres(slurmconf.Version{Major: 20, Minor: 11, Micro: 4}, multiple)
		var refused *slurmconf.RefusedError
		if !errors.As(err, &refused) {
			t.Fatalf("CheckGres: %v, want a refusal", err)
		}
		refused.From = from
		got := refusal(err)
		if said := say(got); said != want {
			t.Errorf("refusal (from %q):\n%s\nwant\n%s", from, said, want)
		}
		if got.Error() != err.Error() || !errors.Is(got, err) {
			t.Errorf("refusal (from %q) says %q and wraps %v: want the refusal's own message, wrapped", from, got, err)
		}
	}
	flags := slurmconf.CheckGres(slurmconf.Version{Major: 20, Minor: 11, Micro: 4}, []slurmconf.GresRecord{{Name: "gpu", File: "/dev/nvidia0", Flags: "explicit"}})
	want := "Slurm 20.11.4 does not know Flags=explicit (that came in 23.02) and would drop the line's other *_env flags with it; nothing was written"
	if got := say(refusal(flags)); got != want {
		t.Errorf("refusal of a flag:\n%s\nwant\n%s", got, want)
	}
	other := errors.New("other")
	if got := refusal(other); got != other {
		t.Errorf("refusal of another error: %v", got)
	}
}
