package nodeload

import (
	"sync"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/nodeload/nvmlread"
)

// NVML is one run's NVML library and its lifecycle, timed for a
// short-lived process; nvmlread, like go-nvlib, never calls Init or
// Shutdown itself.
//
// Init can start in the background before the run knows what it will do:
// Init takes about 10 ms (H100, driver 580) and building the command-line
// parser 1-2 ms, so a run that will read NVML starts Init first and the two
// overlap. No other call is made when Init failed: the real library
// crashes the process then.
//
// A run that just prints its result never shuts NVML down: it exits
// moments later, and the driver frees the client when the process's
// descriptors close, 1.8 ms sooner than nvmlShutdown (7% of a whole run on
// the H100). A run that goes on to wait for something (a lock, fsync,
// slurmctld) calls Release first, so that it never holds the GPU open
// while it waits. free is of the first kind: each call holds the claims
// directory's lock for microseconds, and a Shutdown would add 2.5 ms to
// every call of a burst.
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
