// Package holder is the claim holder, a re-exec of slurm-mig that keeps a
// job's claim files open until the job ends, and the protocol that hands
// it them. What the files are and how they are locked is internal/claim's.
package holder

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Arg is the hidden first argument that makes slurm-mig a claim holder
// (see Hold). It is not a command of the CLI.
const Arg = "__claim-holder"

// MaxFiles bounds the claim files one call hands a holder.
const MaxFiles = 256

// Job is the process whose end ends the claims a holder keeps. ID names it
// (pid and start time in clock ticks after boot); Pidfd is nil where the
// kernel has none (the holder then polls Alive).
type Job interface {
	ID() (pid int, start uint64)
	Pidfd() (*os.File, error)
	Alive() bool
}

// One connection per claim: the caller sends request with the files'
// descriptors (SCM_RIGHTS), the holder answers ack, the caller sends commit
// once the devices are handed out; a connection that ends first gives them back.
const (
	ackByte    = 'k'
	commitByte = 'c'
)

func request(job Job) []byte {
	pid, start := job.ID()
	return fmt.Appendf(nil, "claim %d %d", pid, start)
}

// address is the abstract unix socket of the holder of this user's claims
// for job, in this pid namespace. Anyone may bind it first: both ends check
// the other's uid (SO_PEERCRED).
func address(job Job) string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	pid, start := job.ID()
	return fmt.Sprintf("@slurm-mig/claim-holder/%d/%s/%d/%d", os.Geteuid(), ns, pid, start)
}

// Handover is a claim the job's holder has: it keeps it once Commit says
// the devices were handed out, and until the job ends.
type Handover struct{ conn int }

// Commit tells the holder to keep the claim: this process may end.
func (h *Handover) Commit() error {
	defer unix.Close(h.conn)
	if _, err := unix.Write(h.conn, []byte{commitByte}); err != nil {
		return fmt.Errorf("the claim's holder has ended: %w", err)
	}
	return nil
}

// Abort gives the claim back: nobody learnt its devices. (Ending
// without Commit does the same.)
func (h *Handover) Abort() { unix.Close(h.conn) }

// errNoHolder: no holder listens at the job's address, or the one that did
// ended (idle) before it took the claim.
var errNoHolder = errors.New("no holder")

// errBacklogFull: the listener at the job's holder address has as many
// connections waiting as it allows.
var errBacklogFull = errors.New("the job's claim holder address has a full backlog")

// foreignError: another user's process listens at the job's holder
// address. Nothing is sent to it.
type foreignError struct{ uid int }

func (e *foreignError) Error() string {
	return fmt.Sprintf("the job's claim holder address is uid %d's", e.uid)
}
