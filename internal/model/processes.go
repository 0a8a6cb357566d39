package model

// Process is a compute process on a MIG device, as NVML reports it.
type Process struct {
	PID           uint32
	UsedMemoryMiB uint64
}
