package main

import (
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// earlyNVML is the run's NVML library with its Init started in the
// background; Init waits for that call and returns its result.
//
// Init takes about 10 ms (H100, driver 580) and building the command-line
// parser 1-2 ms; a run that will read NVML starts Init before parsing, so
// the two overlap. Nothing else about the library changes: discovery still
// calls Init first, and no other call when it failed.
type earlyNVML struct {
	nvml.Interface
	done chan struct{}
	ret  nvml.Return
}

func startNVML(lib nvml.Interface) *earlyNVML {
	l := &earlyNVML{Interface: lib, done: make(chan struct{})}
	go func() {
		l.ret = lib.Init()
		close(l.done)
	}()
	return l
}

func (l *earlyNVML) Init() nvml.Return {
	<-l.done
	return l.ret
}

// nvml gives the run's library, starting its Init now if that was not
// done before parsing.
func (e *env) nvml() *earlyNVML {
	if e.early == nil {
		e.early = startNVML(e.newNVML())
	}
	return e.early
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
		case a == "gen" || a == "node" || a == "diff" || a == "list" || a == "snapshot":
			command = true
		}
	}
	return command
}
