package nvmlread

import (
	"errors"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVMLError is an NVML call that failed, with what was being done.
type NVMLError struct {
	Op  string
	Ret nvml.Return
	Why string // a readable cause; the NVML error string when empty
}

func (e *NVMLError) Error() string { return "nvml: " + e.Cause() }

// Cause is the error without its "nvml: " prefix: what was being done and
// why it failed, for a warning that says what was left out instead.
func (e *NVMLError) Cause() string {
	why := e.Why
	if why == "" {
		why = e.Ret.Error()
	}
	return e.Op + ": " + why
}

// runAgain is the hint of a MIG device that vanished while read: the
// layout is being changed, and a later run reads the result.
const runAgain = "; run again when it is done"

func nvmlError(op string, ret nvml.Return) error { return &NVMLError{Op: op, Ret: ret} }

// NoNVMLLibrary reports whether err is NVML's library missing: a host
// without the NVIDIA driver, where only a snapshot can describe a node.
func NoNVMLLibrary(err error) bool {
	var nerr *NVMLError
	return errors.As(err, &nerr) && nerr.Ret == nvml.ERROR_LIBRARY_NOT_FOUND
}
