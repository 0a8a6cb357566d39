// Package nvmlfake builds an nvml.Interface from a JSON description of a
// node, on go-nvml's generated mocks. It stands in for the hardware tests
// cannot have: MIG layouts, many GPUs, minors that differ from indices,
// old drivers and NVML faults. Any NVML call the description does not
// cover panics, as an unset mock does, so tests also catch unplanned calls.
package nvmlfake

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/slurm-mig/slurm-mig/topology"
)

// Fixture describes a node as NVML would report it.
type Fixture struct {
	DriverVersion string `json:"driver_version"`
	// InitError makes Init fail with this return code name
	// ("ERROR_LIBRARY_NOT_FOUND"); every later call then panics.
	InitError string `json:"init_error,omitempty"`
	// Errors makes library-level calls fail: method name -> return code
	// name ({"DeviceGetCount": "ERROR_UNKNOWN"}).
	Errors map[string]string `json:"errors,omitempty"`
	// Delays make every call of a method, on any GPU, answer slowly:
	// method name -> Go duration ({"GetMigMode": "3s"}), a hung driver.
	Delays map[string]string `json:"delays,omitempty"`
	GPUs   []GPU             `json:"gpus"`
}

// GPU is one GPU; its NVML index is its position in Fixture.GPUs.
type GPU struct {
	Minor     int    `json:"minor"`
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	PCIBusID  string `json:"pci_bus_id"`
	MemoryMiB uint64 `json:"memory_mib"`
	// MigMode is "unsupported" (GetMigMode fails with NOT_SUPPORTED),
	// "disabled" (the default), "enabled", or "current/pending" with each
	// side "enabled" or "disabled" ("disabled/enabled": enabled after reset).
	MigMode string `json:"mig_mode,omitempty"`
	// CPUs is the OS CPU list of the GPU's affinity; empty means NVML
	// answers NOT_SUPPORTED.
	CPUs string `json:"cpus,omitempty"`
	// NVLinks are the GPU's active NVLinks, numbered from 0 in this order;
	// none means NVML answers NOT_SUPPORTED, as for a PCIe card. Links
	// to an NVSwitch name the switch's bus id.
	NVLinks []NVLink `json:"nvlinks,omitempty"`
	// NVLinkDown is how many more links exist but are inactive.
	NVLinkDown int `json:"nvlink_down,omitempty"`
	// MaxMigDevices is GetMaxMigDeviceCount; 7 when MIG is on and unset.
	MaxMigDevices int         `json:"max_mig_devices,omitempty"`
	MigDevices    []MigDevice `json:"mig_devices,omitempty"`
	// Errors makes device calls fail: method name -> return code name.
	Errors map[string]string `json:"errors,omitempty"`
}

// NVLink is Count active links to the device at PCI bus id Remote.
type NVLink struct {
	Remote string `json:"remote"`
	Count  int    `json:"count"`
}

// MigDevice is one MIG device at a handle index of its GPU.
type MigDevice struct {
	HandleIndex int    `json:"handle_index"`
	GI          int    `json:"gi"`
	CI          int    `json:"ci"`
	UUID        string `json:"uuid"`
	// Profile in nvidia-smi form. It gives the defaults of the fields
	// below, as a current driver reports them.
	Profile string `json:"profile"`
	// Name is GetName's answer; by default "<GPU name> MIG <profile>".
	// Old drivers gave the parent's name, which makes discovery derive the
	// profile from attributes and the GI profile.
	Name      string `json:"name,omitempty"`
	MemoryMiB uint64 `json:"memory_mib,omitempty"`
	// GIProfileIndex is the nvml.GPU_INSTANCE_PROFILE_* of the GI.
	GIProfileIndex *int              `json:"gi_profile_index,omitempty"`
	Errors         map[string]string `json:"errors,omitempty"`
}

// Load reads a fixture file and builds the fake library.
func Load(path string) (nvml.Interface, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f Fixture
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields() // a typo in a fixture would silently test nothing
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	lib, err := New(&f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return lib, nil
}

// giProfileID is the profile id the fake reports for a GI profile index.
// Real ids differ from indices (H100: 1g.10gb is index 0, id 19); an offset
// keeps code from confusing the two.
func giProfileID(index int) uint32 { return uint32(100 + index) }

// New builds the fake library for f.
func New(f *Fixture) (nvml.Interface, error) {
	delays := map[string]time.Duration{}
	for method, d := range f.Delays {
		v, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("delays[%s]: %v", method, err)
		}
		delays[method] = v
	}
	var mu sync.Mutex
	inited := false
	// guard panics like the real library, which crashes when called
	// without a successful Init, and answers late where told to.
	guard := func(call string) {
		mu.Lock()
		ok := inited
		mu.Unlock()
		if !ok {
			panic("nvmlfake: " + call + " called without a successful Init")
		}
		time.Sleep(delays[call])
	}
	libErr, err := returns(f.Errors)
	if err != nil {
		return nil, err
	}
	initRet := nvml.SUCCESS
	if f.InitError != "" {
		if initRet, err = parseReturn(f.InitError); err != nil {
			return nil, err
		}
	}
	devices := make([]nvml.Device, len(f.GPUs))
	for i := range f.GPUs {
		if devices[i], err = newDevice(&f.GPUs[i], guard); err != nil {
			return nil, fmt.Errorf("gpus[%d]: %v", i, err)
		}
	}

	lib := &mock.Interface{
		InitFunc: func() nvml.Return {
			mu.Lock()
			defer mu.Unlock()
			inited = initRet == nvml.SUCCESS
			return initRet
		},
		ShutdownFunc: func() nvml.Return {
			guard("Shutdown")
			return nvml.SUCCESS
		},
		SystemGetDriverVersionFunc: func() (string, nvml.Return) {
			guard("SystemGetDriverVersion")
			return f.DriverVersion, libErr.of("SystemGetDriverVersion")
		},
		DeviceGetCountFunc: func() (int, nvml.Return) {
			guard("DeviceGetCount")
			if ret := libErr.of("DeviceGetCount"); ret != nvml.SUCCESS {
				return 0, ret
			}
			return len(devices), nvml.SUCCESS
		},
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			guard("DeviceGetHandleByIndex")
			if i < 0 || i >= len(devices) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			if ret := libErr.of("DeviceGetHandleByIndex"); ret != nvml.SUCCESS {
				return nil, ret
			}
			return devices[i], nvml.SUCCESS
		},
	}
	return lib, nil
}

func newDevice(g *GPU, guard func(string)) (nvml.Device, error) {
	errs, err := returns(g.Errors)
	if err != nil {
		return nil, err
	}
	current, pending, modeRet, err := migMode(g.MigMode)
	if err != nil {
		return nil, err
	}
	mask, err := cpuMask(g.CPUs)
	if err != nil {
		return nil, err
	}
	maxMig := g.MaxMigDevices
	if maxMig == 0 && current == nvml.DEVICE_MIG_ENABLE {
		maxMig = 7
	}
	migs := map[int]nvml.Device{}
	giProfile := map[int]int{} // GI id -> profile index
	for j := range g.MigDevices {
		m := &g.MigDevices[j]
		if _, dup := migs[m.HandleIndex]; dup {
			return nil, fmt.Errorf("mig_devices[%d]: handle_index %d used twice", j, m.HandleIndex)
		}
		if m.HandleIndex >= maxMig {
			return nil, fmt.Errorf("mig_devices[%d]: handle_index %d beyond max_mig_devices %d", j, m.HandleIndex, maxMig)
		}
		dev, index, err := newMigDevice(g, m, guard)
		if err != nil {
			return nil, fmt.Errorf("mig_devices[%d]: %v", j, err)
		}
		migs[m.HandleIndex] = dev
		giProfile[m.GI] = index
	}

	var linkRemote []string // by link number; "" for an inactive link
	for _, l := range g.NVLinks {
		for i := 0; i < l.Count; i++ {
			linkRemote = append(linkRemote, l.Remote)
		}
	}
	linkRemote = append(linkRemote, make([]string, g.NVLinkDown)...)
	if len(linkRemote) > nvml.NVLINK_MAX_LINKS {
		return nil, fmt.Errorf("%d NVLinks, more than NVML's %d", len(linkRemote), nvml.NVLINK_MAX_LINKS)
	}

	call := func(name string) nvml.Return {
		guard(name)
		return errs.of(name)
	}
	return &mock.Device{
		GetNvLinkStateFunc: func(link int) (nvml.EnableState, nvml.Return) {
			if ret := call("GetNvLinkState"); ret != nvml.SUCCESS {
				return 0, ret
			}
			switch {
			case len(linkRemote) == 0:
				return 0, nvml.ERROR_NOT_SUPPORTED
			case link < 0 || link >= len(linkRemote):
				return 0, nvml.ERROR_INVALID_ARGUMENT
			case linkRemote[link] == "":
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		},
		GetNvLinkRemotePciInfoFunc: func(link int) (nvml.PciInfo, nvml.Return) {
			if ret := call("GetNvLinkRemotePciInfo"); ret != nvml.SUCCESS {
				return nvml.PciInfo{}, ret
			}
			if link < 0 || link >= len(linkRemote) || linkRemote[link] == "" {
				return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
			}
			var pci nvml.PciInfo
			copy(pci.BusId[:len(pci.BusId)-1], cChars(linkRemote[link]))
			return pci, nvml.SUCCESS
		},
		GetMinorNumberFunc: func() (int, nvml.Return) { return g.Minor, call("GetMinorNumber") },
		GetUUIDFunc:        func() (string, nvml.Return) { return g.UUID, call("GetUUID") },
		GetNameFunc:        func() (string, nvml.Return) { return g.Name, call("GetName") },
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			var pci nvml.PciInfo
			copy(pci.BusId[:len(pci.BusId)-1], cChars(g.PCIBusID))
			return pci, call("GetPciInfo")
		},
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: g.MemoryMiB << 20}, call("GetMemoryInfo")
		},
		GetCpuAffinityFunc: func(int) ([]uint, nvml.Return) {
			if ret := call("GetCpuAffinity"); ret != nvml.SUCCESS {
				return nil, ret
			}
			if mask == nil {
				return nil, nvml.ERROR_NOT_SUPPORTED
			}
			return mask, nvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if ret := call("GetMigMode"); ret != nvml.SUCCESS {
				return 0, 0, ret
			}
			return current, pending, modeRet
		},
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return maxMig, call("GetMaxMigDeviceCount") },
		GetMigDeviceHandleByIndexFunc: func(j int) (nvml.Device, nvml.Return) {
			if ret := call("GetMigDeviceHandleByIndex"); ret != nvml.SUCCESS {
				return nil, ret
			}
			if j < 0 || j >= maxMig {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			dev, ok := migs[j]
			if !ok {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return dev, nvml.SUCCESS
		},
		GetGpuInstanceByIdFunc: func(id int) (nvml.GpuInstance, nvml.Return) {
			if ret := call("GetGpuInstanceById"); ret != nvml.SUCCESS {
				return nil, ret
			}
			index, ok := giProfile[id]
			if !ok {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return &mock.GpuInstance{GetInfoFunc: func() (nvml.GpuInstanceInfo, nvml.Return) {
				return nvml.GpuInstanceInfo{Id: uint32(id), ProfileId: giProfileID(index)}, call("GpuInstance.GetInfo")
			}}, nvml.SUCCESS
		},
		GetGpuInstanceProfileInfoFunc: func(index int) (nvml.GpuInstanceProfileInfo, nvml.Return) {
			if ret := call("GetGpuInstanceProfileInfo"); ret != nvml.SUCCESS {
				return nvml.GpuInstanceProfileInfo{}, ret
			}
			if index < 0 || index >= nvml.GPU_INSTANCE_PROFILE_COUNT {
				return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.GpuInstanceProfileInfo{Id: giProfileID(index)}, nvml.SUCCESS
		},
	}, nil
}

func newMigDevice(g *GPU, m *MigDevice, guard func(string)) (nvml.Device, int, error) {
	errs, err := returns(m.Errors)
	if err != nil {
		return nil, 0, err
	}
	p, err := parseProfile(m.Profile)
	if err != nil {
		return nil, 0, err
	}
	name := m.Name
	if name == "" {
		name = g.Name + " MIG " + m.Profile
	}
	mem := m.MemoryMiB
	if mem == 0 {
		mem = p.gb << 10
	}
	index := p.giProfileIndex
	if m.GIProfileIndex != nil {
		index = *m.GIProfileIndex
	}
	call := func(method string) nvml.Return {
		guard(method)
		return errs.of(method)
	}
	return &mock.Device{
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return m.GI, call("GetGpuInstanceId") },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return m.CI, call("GetComputeInstanceId") },
		GetUUIDFunc:              func() (string, nvml.Return) { return m.UUID, call("GetUUID") },
		GetNameFunc:              func() (string, nvml.Return) { return name, call("GetName") },
		GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
			return nvml.DeviceAttributes{
				GpuInstanceSliceCount:     p.g,
				ComputeInstanceSliceCount: p.c,
				MemorySizeMB:              mem,
			}, call("GetAttributes")
		},
	}, index, nil
}

// profile is what the fake derives from a profile name.
type profile struct {
	c, g           uint32
	gb             uint64
	giProfileIndex int
}

func parseProfile(s string) (profile, error) {
	body, attr, _ := strings.Cut(s, "+")
	neg := false
	if b, a, ok := strings.Cut(body, "-"); ok {
		body, attr, neg = b, a, true
	}
	var p profile
	f := strings.Split(body, ".")
	num := func(s, unit string) (uint64, error) {
		return strconv.ParseUint(strings.TrimSuffix(s, unit), 10, 32)
	}
	var c, g, gb uint64
	var e1, e2, e3 error
	switch len(f) {
	case 2:
		g, e1 = num(f[0], "g")
		gb, e2 = num(f[1], "gb")
		c = g
	case 3:
		c, e1 = num(f[0], "c")
		g, e2 = num(f[1], "g")
		gb, e3 = num(f[2], "gb")
	default:
		return p, fmt.Errorf("profile %q: want [<c>c.]<g>g.<gb>gb", s)
	}
	if e1 != nil || e2 != nil || e3 != nil {
		return p, fmt.Errorf("profile %q: bad number", s)
	}
	p.c, p.g, p.gb = uint32(c), uint32(g), gb
	plain := map[uint64]int{1: nvml.GPU_INSTANCE_PROFILE_1_SLICE, 2: nvml.GPU_INSTANCE_PROFILE_2_SLICE,
		3: nvml.GPU_INSTANCE_PROFILE_3_SLICE, 4: nvml.GPU_INSTANCE_PROFILE_4_SLICE,
		6: nvml.GPU_INSTANCE_PROFILE_6_SLICE, 7: nvml.GPU_INSTANCE_PROFILE_7_SLICE, 8: nvml.GPU_INSTANCE_PROFILE_8_SLICE}
	byAttr := map[string]map[uint64]int{
		"+me":     {1: nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, 2: nvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1},
		"+me.all": {1: nvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, 2: nvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME},
		"+gfx": {1: nvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, 2: nvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
			3: nvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX, 4: nvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX},
		"-me": {1: nvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 2: nvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME},
	}
	table := plain
	if attr != "" {
		key := "+" + attr
		if neg {
			key = "-" + attr
		}
		if table = byAttr[key]; table == nil {
			return p, fmt.Errorf("profile %q: unknown attribute", s)
		}
	}
	index, ok := table[g]
	if !ok {
		return p, fmt.Errorf("profile %q: no GPU instance profile of %d slices", s, g)
	}
	p.giProfileIndex = index
	return p, nil
}

func migMode(s string) (current, pending int, ret nvml.Return, err error) {
	mode := map[string]int{"enabled": nvml.DEVICE_MIG_ENABLE, "disabled": nvml.DEVICE_MIG_DISABLE}
	switch s {
	case "", "disabled":
		return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS, nil
	case "enabled":
		return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS, nil
	case "unsupported":
		return 0, 0, nvml.ERROR_NOT_SUPPORTED, nil
	}
	c, p, ok := strings.Cut(s, "/")
	cm, ok1 := mode[c]
	pm, ok2 := mode[p]
	if !ok || !ok1 || !ok2 {
		return 0, 0, 0, fmt.Errorf("mig_mode %q: want unsupported, disabled, enabled or current/pending", s)
	}
	return cm, pm, nvml.SUCCESS, nil
}

// cpuMask turns an OS CPU list into NVML's mask, 64 CPUs a word.
func cpuMask(list string) ([]uint, error) {
	if list == "" {
		return nil, nil
	}
	cpus, err := topology.ParseCPUList(list)
	if err != nil {
		return nil, fmt.Errorf("cpus: %v", err)
	}
	mask := make([]uint, 64)
	for _, cpu := range cpus {
		if cpu >= 64*len(mask) {
			return nil, fmt.Errorf("cpus %q: CPU %d is beyond the mask", list, cpu)
		}
		mask[cpu/64] |= 1 << (cpu % 64)
	}
	return mask, nil
}

func cChars(s string) []int8 {
	out := make([]int8, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int8(s[i])
	}
	return out
}

// returnCodes maps NVML return code names ("ERROR_GPU_IS_LOST") to codes.
// Without the real library loaded, Return.Error gives exactly these names.
func returnCodes() map[string]nvml.Return {
	codes := map[string]nvml.Return{}
	for r := nvml.Return(0); r < 1000; r++ {
		if name := r.Error(); strings.HasPrefix(name, "ERROR_") {
			codes[name] = r
		}
	}
	codes["SUCCESS"] = nvml.SUCCESS
	return codes
}

func parseReturn(name string) (nvml.Return, error) {
	r, ok := returnCodes()[name]
	if !ok {
		return 0, fmt.Errorf("unknown NVML return code %q", name)
	}
	return r, nil
}

// injected holds the return codes injected per method.
type injected map[string]nvml.Return

func (e injected) of(method string) nvml.Return {
	if r, ok := e[method]; ok {
		return r
	}
	return nvml.SUCCESS
}

func returns(names map[string]string) (injected, error) {
	out := injected{}
	for method, name := range names {
		r, err := parseReturn(name)
		if err != nil {
			return nil, fmt.Errorf("errors[%s]: %v", method, err)
		}
		out[method] = r
	}
	return out, nil
}
