package nodeload

import (
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/kongrun"

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

// StartNVML makes the run's library and, when args will read it
// (ReadsNVML of cli, a kong command-line struct), starts its Init now, to
// overlap building the command-line parser.
func StartNVML(newLib func() nvml.Interface, args []string, cli any) *NVML {
	l := NewNVML(newLib)
	if ReadsNVML(args, cli) {
		l.Start()
	}
	return l
}

// ReadsNVML guesses, before a command line is parsed, whether the run
// will read NVML: args name a command of cli (a kong command-line struct)
// whose field is tagged nvml:"", with no --from (a snapshot), --help or
// --version. The tags are read with reflect in microseconds, while kong
// takes 1-2 ms to build its parser, which Init then overlaps. The guess
// only decides when Init starts; the parser alone decides what runs. A
// wrong "no" costs the overlap; a wrong "yes" (flag values that look like
// commands, a command line the parser rejects) costs one unused Init,
// never a different result.
func ReadsNVML(args []string, cli any) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--from" || strings.HasPrefix(a, "--from=") {
			return false
		}
	}
	return NVMLCommands(cli)[kongrun.Named(args, cli)]
}

// NVMLCommands are the names of cli's commands tagged nvml:"" (single
// words: the field's name in lower case).
func NVMLCommands(cli any) map[string]bool {
	names := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(cli)) {
		if _, ok := f.Tag.Lookup("nvml"); ok {
			names[strings.ToLower(f.Name)] = true
		}
	}
	return names
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
