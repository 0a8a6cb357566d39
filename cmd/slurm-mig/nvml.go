package main

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// runNVML is the run's NVML library, timed for a short-lived process.
//
// Init starts in the background: it takes about 10 ms (H100, driver 580)
// and building the command-line parser 1-2 ms, so a run that will read
// NVML starts Init before parsing and the two overlap. Discovery's Init
// waits for that call and returns its result; it still makes no other
// call when Init failed.
//
// Discovery's Shutdown only marks NVML as no longer needed. A run that
// just prints its result exits moments later, and the driver frees the
// client when the process's descriptors close, 1.8 ms sooner than
// nvmlShutdown (7% of a whole run on the H100). A run that goes on to
// wait for something (a lock, fsync, slurmctld) calls releaseNVML first,
// so that it never holds the GPU open while it waits.
type runNVML struct {
	nvml.Interface
	initDone chan struct{}
	initRet  nvml.Return
	done     atomic.Bool // discovery has finished with NVML
	shutdown sync.Once
}

func startNVML(lib nvml.Interface) *runNVML {
	l := &runNVML{Interface: lib, initDone: make(chan struct{})}
	go func() {
		l.initRet = lib.Init()
		close(l.initDone)
	}()
	return l
}

func (l *runNVML) Init() nvml.Return {
	<-l.initDone
	return l.initRet
}

// Shutdown is called by discovery only after a successful Init.
func (l *runNVML) Shutdown() nvml.Return {
	l.done.Store(true)
	return nvml.SUCCESS
}

// nvml gives the run's library, starting its Init now if that was not
// done before parsing.
func (e *env) nvml() *runNVML {
	if e.nvmlLib == nil {
		e.nvmlLib = startNVML(e.newNVML())
	}
	return e.nvmlLib
}

// releaseNVML shuts NVML down if discovery used it and is done with it.
func (e *env) releaseNVML() {
	if l := e.nvmlLib; l != nil && l.done.Load() {
		l.shutdown.Do(func() { l.Interface.Shutdown() })
	}
}

// readsNVML guesses, before the command line is parsed, whether the run
// will read NVML: a command that does, with no --from, --help or
// --version. The guess only decides when Init starts; kong's parse alone
// decides what runs. A wrong "no" costs the overlap; a wrong "yes" (flag
// values that look like commands, a command line kong rejects) costs one
// unused Init, never a different result.
func readsNVML(args []string) bool {
	command := false
	for _, a := range args {
		switch {
		case a == "--":
			return command
		case a == "-h" || a == "--help" || a == "--version" || a == "--from" || strings.HasPrefix(a, "--from="):
			return false
		case a == "gen" || a == "node" || a == "diff" || a == "list" || a == "snapshot" ||
			a == "free" || a == "exec":
			command = true
		}
	}
	return command
}
