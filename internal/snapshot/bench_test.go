package snapshot

import (
	"bytes"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// BenchmarkParse reads one node of plan's synthetic fleet (eight H100s in
// seven 1g.10gb each), as plan and rebalance read 10,000 of them.
func BenchmarkParse(b *testing.B) {
	var data bytes.Buffer
	if err := Write(&data, synth.PlanSnapshot(1)); err != nil {
		b.Fatal(err)
	}
	r := NewReader(nil)
	b.SetBytes(int64(data.Len()))
	for b.Loop() {
		if _, err := r.Parse(data.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
