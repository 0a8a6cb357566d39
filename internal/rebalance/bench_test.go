package rebalance

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPropose10k is the scale: 10,000 nodes (a quarter of
// them busy, the rest in the four layouts of h100) and 100,000 pending
// jobs of four types (one no layout offers), changes up to 1,000 nodes
// (the idle whole GPUs, which no job asks for, are free to change). The figure is quoted in
// docs/rebalance.md.
func BenchmarkPropose10k(b *testing.B) {
	var nodes []Node
	for i := range 10000 {
		o := h100.Configs[i%len(h100.Configs)]
		why := ""
		if i%4 == 0 {
			why = "busy"
		}
		nodes = append(nodes, Node{Name: fmt.Sprintf("gpu%05d", i), Current: o.Counts, Why: why, Options: h100})
	}
	types := []string{"h100_1g.10gb", "h100_3g.40gb", "h100_2g.20gb", "h100_7g.80gb"}
	var js []Job
	for i := range 100000 {
		js = append(js, Job{ID: fmt.Sprint(1000000 + i), Submit: now.Add(-time.Duration(i%7200) * time.Second), Nodes: 1,
			GPU: []Request{{Type: types[i%len(types)], Count: 1 + i%2}}})
	}
	l := Limits{MaxNodes: 1000, MinWait: 10 * time.Minute, Now: now}
	b.ResetTimer()
	for range b.N {
		p := Propose(nodes, js, l)
		if len(p.Changes) == 0 {
			b.Fatal("no changes")
		}
	}
}
