package snapshot

import (
	"bytes"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/testkit/synth"
)

// BenchmarkParse reads nodes of plan's synthetic fleet (eight H100s), as
// plan and rebalance read 10,000 of them, with one reader: a node in no
// MIG mode (node 0), and one of 56 MIG devices (node 6, seven 1g.10gb a
// GPU). The reader has met the profile table after the first round, as
// it has after a fleet's first snapshot.
func BenchmarkParse(b *testing.B) {
	for _, c := range []struct {
		name string
		node int
	}{{"no-mig", 0}, {"56-mig", 6}} {
		b.Run(c.name, func(b *testing.B) {
			var data bytes.Buffer
			if err := Write(&data, synth.PlanSnapshot(c.node)); err != nil {
				b.Fatal(err)
			}
			r := NewReader(nil)
			b.SetBytes(int64(data.Len()))
			for b.Loop() {
				if _, err := r.Parse(data.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
