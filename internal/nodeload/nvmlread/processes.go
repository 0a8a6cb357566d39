package nvmlread

import (
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// ReadProcesses fills in each MIG device's compute processes through its own
// handle; a device gone or not told is an error (use is never guessed), and
// the node is then left as it was.
func ReadProcesses(lib nvml.Interface, node *model.Node) error {
	errs := make([]error, len(node.GPUs))
	procs := make([]map[string][]model.Process, len(node.GPUs)) // by MIG UUID
	var wg sync.WaitGroup
	for i := range node.GPUs {
		if len(node.GPUs[i].MigDevices) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i], errs[i] = readGPUProcesses(lib, &node.GPUs[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the node is left as it was
		}
	}
	for i := range node.GPUs {
		for j := range node.GPUs[i].MigDevices {
			m := &node.GPUs[i].MigDevices[j]
			m.Processes = procs[i][m.UUID]
		}
	}
	return nil
}

// readGPUProcesses walks the GPU's MIG device handles again, matching
// them to the model by UUID.
func readGPUProcesses(lib nvml.Interface, gpu *model.GPU) (map[string][]model.Process, error) {
	dev, ret := lib.DeviceGetHandleByIndex(gpu.Index)
	if ret != nvml.SUCCESS {
		return nil, nvmlError(fmt.Sprintf("%s: getting its handle", gpu.Label()), ret)
	}
	max, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, nvmlError(fmt.Sprintf("%s: counting MIG devices", gpu.Label()), ret)
	}
	byUUID := map[string]*model.MigDevice{}
	for j := range gpu.MigDevices {
		byUUID[gpu.MigDevices[j].UUID] = &gpu.MigDevices[j]
	}
	out := map[string][]model.Process{}
	found := 0
	for j := 0; j < max && found < len(byUUID); j++ {
		mig, ret := dev.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("%s: getting MIG device handle %d", gpu.Label(), j), ret)
		}
		uuid, ret := mig.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("%s: MIG device handle %d: reading its UUID", gpu.Label(), j), ret)
		}
		m := byUUID[uuid]
		if m == nil {
			continue // created since discovery; not offered
		}
		procs, ret := mig.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("%s: reading its compute processes", m.Label(gpu)), ret)
		}
		for _, p := range procs {
			used := p.UsedGpuMemory
			if used == ^uint64(0) { // NVML_VALUE_NOT_AVAILABLE
				used = 0 // NVML does not say
			}
			out[uuid] = append(out[uuid], model.Process{PID: p.Pid, UsedMemoryMiB: used >> 20})
		}
		found++
	}
	if found < len(byUUID) {
		return nil, advice.Hinted(&NVMLError{Op: gpu.Label() + ": reading compute processes", Ret: nvml.ERROR_NOT_FOUND,
			Why: "a MIG device vanished since discovery (is the MIG layout being changed?)"}, runAgain)
	}
	return out, nil
}
