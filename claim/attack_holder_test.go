package claim

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHolderClosesInherited: a holder keeps none of the descriptors that
// the call which started it inherited, such as the write end of a command
// substitution's pipe that the job script duplicated
// (`x=$( exec 9>&1; slurm-mig free; echo after )`): the shell reads that
// pipe until every writer has closed it, and would wait for the job's end,
// which is its own.
func TestHolderClosesInherited(t *testing.T) {
	d := openTestDir(t)
	th := newTestHolder(t, d)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// As a shell leaves it: inherited across exec(2).
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	th.claim("MIG-a", true)
	w.Close()
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("reading the pipe after the call closed its end: %d bytes, %v; want EOF (the holder keeps the inherited end: %v)", n, err, holderFds(holdersOf(th.job)))
	}
	if !held(t, d, "MIG-a") {
		t.Error("MIG-a is not held")
	}
	th.endJob()
}

// holderFds lists what the holders have open, for failure messages.
func holderFds(pids []int) []string {
	var open []string
	for _, pid := range pids {
		entries, _ := os.ReadDir(procPath(pid, "fd"))
		for _, e := range entries {
			target, _ := os.Readlink(procPath(pid, "fd/"+e.Name()))
			open = append(open, fmt.Sprintf("%d:%s=%s", pid, e.Name(), target))
		}
	}
	return open
}
