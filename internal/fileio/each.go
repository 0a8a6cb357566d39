package fileio

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls do(w, i) for every i from 0 to n-1, on as many goroutines as
// Go may run at once, and returns when all calls are done. Each goroutine
// makes its worker w once with newWorker (a reader that keeps its buffer
// or what it decoded from one file to the next) and takes the next index
// as it finishes one. A fleet's thousands of small files are read this
// way, since one at a time leaves cores idle; do keeps its results by
// index, so their order is the input's whatever order they finish in.
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
