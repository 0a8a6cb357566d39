package fileio

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls do(w, i) for every i in [0, n) on up to GOMAXPROCS goroutines,
// each with its own worker from newWorker, and returns when all are done.
// Calls finish in any order, so do should keep its results by index.
func Each[W any](n int, newWorker func() W, do func(w W, i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorker()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				do(w, i)
			}
		}()
	}
	wg.Wait()
}
