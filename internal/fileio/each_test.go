package fileio

import (
	"sync/atomic"
	"testing"
)

// Each calls do once for every index, each call with a worker of its own
// goroutine, and makes no more workers than there are indices.
func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		var workers atomic.Int64
		calls := make([]int, n)
		Each(n, func() *int { workers.Add(1); return new(int) }, func(w *int, i int) {
			*w++ // a worker is one goroutine's alone: no race here under -race
			calls[i]++
		})
		for i, c := range calls {
			if c != 1 {
				t.Fatalf("n=%d: index %d called %d times", n, i, c)
			}
		}
		if w := workers.Load(); w > int64(max(n, 0)) || (n > 0 && w == 0) {
			t.Errorf("n=%d: %d workers", n, w)
		}
	}
}
