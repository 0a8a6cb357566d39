// Package nvmlread reads a node's GPUs and MIG devices through nvml.Interface
// (real or fake) into the model, naming profiles with go-nvlib; like
// go-nvlib's device.New it never calls Init or Shutdown, the caller's.
package nvmlread

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/cpulist"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// cpuAffinityMaxCPUs bounds the CPU mask asked of NVML; 4096 CPUs covers
// any node Slurm runs on today.
const cpuAffinityMaxCPUs = 4096

// Read reads the node's GPUs and MIG devices through lib, initialised by
// the caller, with sysfs under fs; cap minors are left unresolved. What NVML
// cannot say that only refines the config comes back as warnings, in GPU order.
func Read(lib nvml.Interface, hostname string, fs hostfs.FS) (*model.Node, []error, error) {
	node := &model.Node{Hostname: hostname, GPUs: []model.GPU{}}
	driver, ret := lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return nil, nil, nvmlError("reading the driver version", ret)
	}
	node.DriverVersion = driver

	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, nil, nvmlError("counting GPUs", ret)
	}
	// GPUs are read in parallel, as NVML attaches to several at once
	// (docs/performance.md); results and warnings stay in index order, and
	// the error is the lowest index's.
	type result struct {
		gpu      model.GPU
		warnings []string
		err      error
	}
	nvlib := device.New(lib)
	results := make([]result, count)
	limit := make(chan struct{}, maxParallelGPUs)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		limit <- struct{}{}
		go func() {
			defer func() { <-limit; wg.Done() }()
			r := &results[i]
			dev, ret := lib.DeviceGetHandleByIndex(i)
			if ret != nvml.SUCCESS {
				r.err = nvmlError(fmt.Sprintf("GPU %d: getting its handle", i), ret)
				return
			}
			r.gpu, r.err = readGPU(nvlib, i, dev, fs, &r.warnings)
		}()
	}
	wg.Wait()
	var warnings []error
	for _, r := range results {
		if r.err != nil {
			return nil, nil, r.err
		}
		node.GPUs = append(node.GPUs, r.gpu)
		for _, w := range r.warnings {
			warnings = append(warnings, errors.New(w))
		}
	}
	return node, warnings, nil
}

// maxParallelGPUs bounds the GPUs read at once, each a thread blocked in
// NVML; more than a node has (8 or 16) gains nothing.
const maxParallelGPUs = 16

// readGPU reads one GPU. What only refines the config (CPU affinity,
// NVLinks) degrades to a warning when NVML fails; what decides which
// devices Slurm gets fails the run.
func readGPU(nvlib device.Interface, index int, dev nvml.Device, fs hostfs.FS, warnings *[]string) (gpu model.GPU, err error) {
	gpu.Index = index
	fail := func(what string, ret nvml.Return) (model.GPU, error) {
		return model.GPU{}, nvmlError(fmt.Sprintf("GPU %d: reading %s", index, what), ret)
	}

	var ret nvml.Return
	if gpu.Minor, ret = dev.GetMinorNumber(); ret != nvml.SUCCESS {
		return fail("its minor number", ret)
	}
	if gpu.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		return fail("its UUID", ret)
	}
	if gpu.Name, ret = dev.GetName(); ret != nvml.SUCCESS {
		return fail("its name", ret)
	}
	pci, ret := dev.GetPciInfo()
	if ret != nvml.SUCCESS {
		return fail("its PCI info", ret)
	}
	gpu.PCIBusID = cString(pci.BusId[:])
	gpu.PCIDeviceID = pciDeviceID(pci.PciDeviceId)
	nvlibDev, err := nvlib.NewDevice(knownPCI{dev, pci})
	if err != nil {
		return model.GPU{}, fmt.Errorf("%s: %w", gpu.Label(), err)
	}
	mem, ret := dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return fail("its memory size", ret)
	}
	gpu.MemoryMiB = mem.Total >> 20

	// The CPU affinity is the local_cpulist of the GPU's PCI device, which
	// sysfs answers far faster than NVML (docs/performance.md); NVML is asked
	// only without it.
	if cpus, ok := sysfsCPUAffinity(fs, nvlibDev); ok {
		gpu.CPUAffinity = cpus
	} else {
		mask, ret := dev.GetCpuAffinity(cpuAffinityMaxCPUs)
		switch ret {
		case nvml.SUCCESS:
			gpu.CPUAffinity = cpuList(mask)
		case nvml.ERROR_NOT_SUPPORTED: // e.g. no NUMA information; Cores= is then left out
		default:
			*warnings = append(*warnings, fmt.Sprintf("%s: reading its CPU affinity: %s; its Cores= is left out", gpu.Label(), ret.Error()))
		}
	}

	if links, lerr := readNVLinks(&gpu, dev); lerr != nil {
		*warnings = append(*warnings, lerr.Cause()+"; its NVLinks are not counted in Links=")
	} else {
		gpu.NVLinks = links
	}

	current, pending, ret := dev.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
		gpu.MigEnabled = current == nvml.DEVICE_MIG_ENABLE
		gpu.MigPending = pending == nvml.DEVICE_MIG_ENABLE
	case nvml.ERROR_NOT_SUPPORTED: // a GPU without MIG (V100 beside A100s) is a whole GPU
	default:
		return fail("its MIG mode", ret)
	}
	if !gpu.MigEnabled {
		return gpu, nil
	}

	migs, err := readMigDevices(nvlib, &gpu, dev, mem.Total)
	if err != nil {
		return model.GPU{}, err
	}
	gpu.MigDevices = migs
	return gpu, nil
}

// readNVLinks counts the GPU's active NVLinks per remote PCI device, as
// Slurm's NVML autodetect does (gpu_nvml.c, _nvml_get_nvlink_info).
func readNVLinks(gpu *model.GPU, dev nvml.Device) ([]model.NVLink, *NVMLError) {
	var links []model.NVLink
	for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
		state, ret := dev.GetNvLinkState(link)
		if ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret == nvml.ERROR_NOT_SUPPORTED {
			break
		}
		if ret != nvml.SUCCESS {
			return nil, &NVMLError{Op: fmt.Sprintf("%s: reading the state of NVLink %d", gpu.Label(), link), Ret: ret}
		}
		if state != nvml.FEATURE_ENABLED {
			continue
		}
		pci, ret := dev.GetNvLinkRemotePciInfo(link)
		if ret != nvml.SUCCESS {
			return nil, &NVMLError{Op: fmt.Sprintf("%s: reading the far end of NVLink %d", gpu.Label(), link), Ret: ret}
		}
		remote := cString(pci.BusId[:])
		i := 0
		for i < len(links) && links[i].RemotePCIBusID != remote {
			i++
		}
		if i == len(links) {
			links = append(links, model.NVLink{RemotePCIBusID: remote})
		}
		links[i].Links++
	}
	return links, nil
}

// readMigDevices enumerates the MIG devices of a MIG-enabled GPU. Handle
// indices have gaps whenever instances were destroyed, so every index up to
// the maximum is tried.
func readMigDevices(nvlib device.Interface, gpu *model.GPU, dev nvml.Device, gpuMemoryBytes uint64) ([]model.MigDevice, error) {
	max, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, nvmlError(fmt.Sprintf("%s: counting MIG devices", gpu.Label()), ret)
	}
	giProfiles := giProfileIndex{dev: dev}
	var migs []model.MigDevice
	for j := 0; j < max; j++ {
		mig, ret := dev.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("%s: getting MIG device handle %d", gpu.Label(), j), ret)
		}
		m, err := readMigDevice(nvlib, gpu, j, mig, gpuMemoryBytes, &giProfiles)
		if err != nil {
			return nil, err
		}
		migs = append(migs, m)
	}
	model.SortMigDevices(migs)
	return migs, nil
}

func readMigDevice(nvlib device.Interface, gpu *model.GPU, handleIndex int, mig nvml.Device, gpuMemoryBytes uint64, giProfiles *giProfileIndex) (model.MigDevice, error) {
	var m model.MigDevice
	fail := func(what string, ret nvml.Return) (model.MigDevice, error) {
		where := fmt.Sprintf("%s: MIG device handle %d", gpu.Label(), handleIndex)
		if m.UUID != "" {
			where = m.Label(gpu)
		}
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			// The handle was there a moment ago: instances are being
			// created or destroyed right now. A later run sees the result.
			return model.MigDevice{}, advice.Hinted(&NVMLError{Op: where + ": reading " + what, Ret: ret,
				Why: "the MIG device vanished while being read (is the MIG layout being changed?)"}, runAgain)
		}
		return model.MigDevice{}, nvmlError(where+": reading "+what, ret)
	}
	var ret nvml.Return
	if m.GPUInstanceID, ret = mig.GetGpuInstanceId(); ret != nvml.SUCCESS {
		return fail("its GPU instance id", ret)
	}
	if m.ComputeInstanceID, ret = mig.GetComputeInstanceId(); ret != nvml.SUCCESS {
		return fail("its compute instance id", ret)
	}
	uuid, ret := mig.GetUUID()
	if ret != nvml.SUCCESS {
		return fail("its UUID", ret)
	}
	m.UUID = uuid
	attrs, ret := mig.GetAttributes()
	if ret != nvml.SUCCESS {
		return fail("its attributes", ret)
	}
	m.GISlices = int(attrs.GpuInstanceSliceCount)
	m.MemoryMiB = attrs.MemorySizeMB

	name, ret := mig.GetName()
	if ret != nvml.SUCCESS {
		return fail("its name", ret)
	}
	if p, ok := profileFromName(name); ok {
		m.Profile = p
		return m, nil
	}
	// Older drivers name MIG devices like their parent; derive the profile.
	index, ret := giProfiles.of(m.GPUInstanceID)
	if ret != nvml.SUCCESS {
		return fail("its GPU instance profile", ret)
	}
	p, err := profileOf(nvlib, index, attrs, gpuMemoryBytes)
	if err != nil {
		return model.MigDevice{}, fmt.Errorf("%s: naming its profile: %w", m.Label(gpu), err)
	}
	m.Profile = p
	return m, nil
}

// giProfileIndex maps a GPU's instance ids to GPU instance profile indices
// (nvml.GPU_INSTANCE_PROFILE_*), which carry the +me/+gfx attributes. The
// profile table is read once per GPU and only when a name lacks the profile.
type giProfileIndex struct {
	dev     nvml.Device
	byID    map[uint32]int // profile id -> profile index
	hasRead bool
}

func (p *giProfileIndex) of(giID int) (int, nvml.Return) {
	gi, ret := p.dev.GetGpuInstanceById(giID)
	if ret != nvml.SUCCESS {
		return 0, ret
	}
	info, ret := gi.GetInfo()
	if ret != nvml.SUCCESS {
		return 0, ret
	}
	if !p.hasRead {
		p.byID = map[uint32]int{}
		for i := 0; i < nvml.GPU_INSTANCE_PROFILE_COUNT; i++ {
			pi, ret := p.dev.GetGpuInstanceProfileInfo(i)
			if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
				continue
			}
			if ret != nvml.SUCCESS {
				return 0, ret
			}
			p.byID[pi.Id] = i
		}
		p.hasRead = true
	}
	index, ok := p.byID[info.ProfileId]
	if !ok {
		return 0, nvml.ERROR_NOT_FOUND
	}
	return index, nvml.SUCCESS
}

// sysfsCPUAffinity reads sys/bus/pci/devices/<bus id>/local_cpulist, the
// bus id as sysfs writes it ("00000000:CA:00.0" is sysfs's "0000:ca:00.0",
// go-nvlib's GetPCIBusID).
func sysfsCPUAffinity(fs hostfs.FS, dev device.Device) (string, bool) {
	busID, err := dev.GetPCIBusID()
	if err != nil {
		return "", false
	}
	data, err := hostfs.ReadFileNoStat(fs.Path("sys/bus/pci/devices", busID, "local_cpulist"))
	if err != nil {
		return "", false
	}
	cpus, err := cpulist.Parse(string(data))
	if err != nil || len(cpus) == 0 {
		return "", false
	}
	return cpulist.Format(cpus), true
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// cpuList turns NVML's CPU mask (64 CPUs a word) into an OS CPU list.
func cpuList(mask []uint) string {
	var cpus []int
	for w, word := range mask {
		for word != 0 {
			bit := bits.TrailingZeros64(uint64(word))
			cpus = append(cpus, w*64+bit)
			word &= word - 1
		}
	}
	return cpulist.Format(cpus)
}

// knownPCI answers GetPciInfo with the answer already read, so that
// go-nvlib's GetPCIBusID asks NVML nothing more.
type knownPCI struct {
	nvml.Device
	pci nvml.PciInfo
}

func (d knownPCI) GetPciInfo() (nvml.PciInfo, nvml.Return) { return d.pci, nvml.SUCCESS }
