package nodeload

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/nodeload/nvmlread"
)

// NVML is one run's NVML library and its lifecycle, owned by cmd: Init
// once, Release deferred (and before a wait); nothing else is called
// after a failed Init, which would crash the real library.
type NVML struct {
	newLib   func() nvml.Interface
	start    sync.Once
	lib      nvml.Interface
	initDone chan struct{}
	initRet  nvml.Return
	used     atomic.Bool // a read has finished with the initialised library
	shutdown sync.Once
}

// NewNVML makes the run's library from newLib when it is first needed.
func NewNVML(newLib func() nvml.Interface) *NVML {
	return &NVML{newLib: newLib, initDone: make(chan struct{})}
}

// Start begins Init in the background; only the first call does anything.
func (l *NVML) Start() {
	l.start.Do(func() {
		l.lib = l.newLib()
		go func() {
			l.initRet = l.lib.Init()
			close(l.initDone)
		}()
	})
}

// use waits for Init and, if it succeeded, reads with the library; no
// other call is made after a failed Init.
func (l *NVML) use(read func(nvml.Interface) error) error {
	l.Start()
	<-l.initDone
	if l.initRet != nvml.SUCCESS {
		return initError(l.initRet)
	}
	defer l.used.Store(true)
	return read(l.lib)
}

// Release shuts NVML down if a read used it (after a successful Init) and
// is done with it.
func (l *NVML) Release() {
	if l.used.Load() {
		l.shutdown.Do(func() { l.lib.Shutdown() })
	}
}

// initError explains the usual reasons NVML does not start.
func initError(ret nvml.Return) error {
	var why string
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		why = "libnvidia-ml.so.1 not found; is the NVIDIA driver installed?"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		why = "the NVIDIA kernel driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		why = "no permission to open the GPU device files (/dev/nvidiactl)"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		why = "libnvidia-ml.so.1 and the loaded kernel driver differ in version (reboot or reload the driver)"
	default:
		why = ret.Error()
	}
	return &nvmlread.NVMLError{Op: "initialising NVML", Ret: ret, Why: why}
}

// timeoutError is NVML not answering within the run's --timeout.
type timeoutError struct{ timeout time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("nvml: no answer within %s (a hung GPU or driver?)", e.timeout)
}

// withNVML is the one way a read reaches NVML: after Init, in a goroutine
// given up at the timeout; the read's result is the caller's only on nil.
func (l *Loader) withNVML(read func(nvml.Interface) error) error {
	done := make(chan error, 1)
	go func() { done <- l.NVML.use(read) }()
	select {
	case err := <-done:
		return err
	case <-time.After(l.Timeout):
		return &timeoutError{l.Timeout}
	}
}
