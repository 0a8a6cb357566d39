package model

import "fmt"

// Hardware is the node's CPUs and memory as `slurmd -C` counts them (the
// hardware part of its line), for node --full; internal/topology reads
// it from the node's sysfs and /proc/meminfo.
type Hardware struct {
	CPUs            int
	Boards          int
	SocketsPerBoard int
	CoresPerSocket  int
	ThreadsPerCore  int
	RealMemoryMiB   uint64
}

// String renders the hardware as slurmd -C prints it, in its key order:
// "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=1 ThreadsPerCore=2 RealMemory=23989".
func (h Hardware) String() string {
	return fmt.Sprintf("CPUs=%d Boards=%d SocketsPerBoard=%d CoresPerSocket=%d ThreadsPerCore=%d RealMemory=%d",
		h.CPUs, h.Boards, h.SocketsPerBoard, h.CoresPerSocket, h.ThreadsPerCore, h.RealMemoryMiB)
}
