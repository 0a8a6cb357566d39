// Package nvmlfake builds an nvml.Interface from a JSON description of a
// node. It stands in for the hardware tests cannot have: MIG layouts, many
// GPUs, minors that differ from indices, old drivers and NVML faults. Any
// NVML call the fake does not cover panics, so tests also catch unplanned
// calls.
package nvmlfake

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/cpulist"
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
	// PCIDeviceID is GetPciInfo's PciDeviceId, the device id above the
	// vendor's, as mig-parted writes it ("0x233010DE" for an H100 80GB
	// HBM3); empty gives 0.
	PCIDeviceID string `json:"pci_device_id,omitempty"`
	// MigProfiles is the GPU-instance profile table, as nvidia-smi mig
	// -lgip and -lgipp show it; GetGpuInstanceProfileInfo answers
	// NOT_SUPPORTED for the indices it lacks, as a GPU without MIG does.
	MigProfiles []GIProfile `json:"mig_profiles,omitempty"`
	// Errors makes device calls fail: method name -> return code name.
	Errors map[string]string `json:"errors,omitempty"`
}

// GIProfile is one GPU-instance profile of a GPU's table.
type GIProfile struct {
	// Index is the nvml.GPU_INSTANCE_PROFILE_* it answers for, which
	// nvidia-smi does not show (on an H100, 1g.20gb is
	// GPU_INSTANCE_PROFILE_1_SLICE_REV2, 9).
	Index     int    `json:"index"`
	ID        uint32 `json:"id"`
	Instances uint32 `json:"instances"`
	Slices    uint32 `json:"slices"`
	MemoryMiB uint64 `json:"memory_mib"`
	// Placements are GetGpuInstancePossiblePlacements's answer in
	// nvidia-smi mig -lgipp's form: "{0,2,4}:2".
	Placements string `json:"placements"`
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
	GIProfileIndex *int `json:"gi_profile_index,omitempty"`
	// Processes are the compute processes GetComputeRunningProcesses
	// reports on the MIG device; a test makes them appear and vanish by
	// changing the fixture between runs.
	Processes []Process         `json:"processes,omitempty"`
	Errors    map[string]string `json:"errors,omitempty"`
}

// Process is a compute process on a MIG device.
type Process struct {
	PID           uint32 `json:"pid"`
	UsedMemoryMiB uint64 `json:"used_memory_mib,omitempty"`
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
	lib := &library{driverVersion: f.DriverVersion, initRet: nvml.SUCCESS, delays: map[string]time.Duration{}}
	for method, d := range f.Delays {
		v, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("delays[%s]: %v", method, err)
		}
		lib.delays[method] = v
	}
	var err error
	if lib.errs, err = returns(f.Errors); err != nil {
		return nil, err
	}
	if f.InitError != "" {
		if lib.initRet, err = parseReturn(f.InitError); err != nil {
			return nil, err
		}
	}
	lib.devices = make([]nvml.Device, len(f.GPUs))
	for i := range f.GPUs {
		if lib.devices[i], err = newDevice(&f.GPUs[i], lib); err != nil {
			return nil, fmt.Errorf("gpus[%d]: %v", i, err)
		}
	}
	return lib, nil
}

// The fake's types embed the nvml interface they implement, left nil: a call
// the fake does not cover panics. go-nvml's mocks would too, but benchmarks
// would then measure their locks and call records, not discovery.

// library is the fake nvml.Interface.
type library struct {
	nvml.Interface
	driverVersion string
	devices       []nvml.Device
	initRet       nvml.Return
	inited        atomic.Bool
	errs          injected
	delays        map[string]time.Duration
}

// guard panics like the real library, which crashes when called without a
// successful Init, and answers late where told to.
func (l *library) guard(call string) {
	if !l.inited.Load() {
		panic("nvmlfake: " + call + " called without a successful Init")
	}
	if d := l.delays[call]; d > 0 {
		time.Sleep(d)
	}
}

func (l *library) Init() nvml.Return {
	l.inited.Store(l.initRet == nvml.SUCCESS)
	return l.initRet
}

func (l *library) Shutdown() nvml.Return {
	l.guard("Shutdown")
	return nvml.SUCCESS
}

func (l *library) SystemGetDriverVersion() (string, nvml.Return) {
	l.guard("SystemGetDriverVersion")
	return l.driverVersion, l.errs.of("SystemGetDriverVersion")
}

func (l *library) DeviceGetCount() (int, nvml.Return) {
	l.guard("DeviceGetCount")
	if ret := l.errs.of("DeviceGetCount"); ret != nvml.SUCCESS {
		return 0, ret
	}
	return len(l.devices), nvml.SUCCESS
}

func (l *library) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	l.guard("DeviceGetHandleByIndex")
	if i < 0 || i >= len(l.devices) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	if ret := l.errs.of("DeviceGetHandleByIndex"); ret != nvml.SUCCESS {
		return nil, ret
	}
	return l.devices[i], nvml.SUCCESS
}

// caller answers a device's calls: late where the library is told to,
// with the error injected for the method, if any.
type caller struct {
	lib  *library
	errs injected
}

func (c caller) call(method string) nvml.Return {
	c.lib.guard(method)
	return c.errs.of(method)
}

// device is a fake GPU.
type device struct {
	nvml.Device
	caller
	g                *GPU
	current, pending int
	modeRet          nvml.Return
	mask             []uint
	maxMig           int
	migs             map[int]nvml.Device // by handle index
	pciDeviceID      uint32
	profiles         map[int]nvml.GpuInstanceProfileInfo    // by profile index
	placements       map[uint32][]nvml.GpuInstancePlacement // by profile id
	giProfile        map[int]int                            // GI id -> GI profile index
	linkRemote       []string                               // by link number; "" for an inactive link
}

func newDevice(g *GPU, lib *library) (nvml.Device, error) {
	errs, err := returns(g.Errors)
	if err != nil {
		return nil, err
	}
	d := &device{caller: caller{lib, errs}, g: g, migs: map[int]nvml.Device{}, giProfile: map[int]int{}}
	if d.current, d.pending, d.modeRet, err = migMode(g.MigMode); err != nil {
		return nil, err
	}
	if d.mask, err = cpuMask(g.CPUs); err != nil {
		return nil, err
	}
	if g.PCIDeviceID != "" {
		id, err := strconv.ParseUint(g.PCIDeviceID, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("pci_device_id %q: %v", g.PCIDeviceID, err)
		}
		d.pciDeviceID = uint32(id)
	}
	d.profiles = map[int]nvml.GpuInstanceProfileInfo{}
	d.placements = map[uint32][]nvml.GpuInstancePlacement{}
	for i, p := range g.MigProfiles {
		if _, dup := d.profiles[p.Index]; dup {
			return nil, fmt.Errorf("mig_profiles[%d]: index %d listed twice", i, p.Index)
		}
		if p.Index < 0 || p.Index >= nvml.GPU_INSTANCE_PROFILE_COUNT {
			return nil, fmt.Errorf("mig_profiles[%d]: index %d is no nvml.GPU_INSTANCE_PROFILE_*", i, p.Index)
		}
		if d.placements[p.ID], err = parsePlacements(p.Placements); err != nil {
			return nil, fmt.Errorf("mig_profiles[%d]: %v", i, err)
		}
		d.profiles[p.Index] = nvml.GpuInstanceProfileInfo{Id: p.ID, InstanceCount: p.Instances, SliceCount: p.Slices, MemorySizeMB: p.MemoryMiB}
	}
	d.maxMig = g.MaxMigDevices
	if d.maxMig == 0 && d.current == nvml.DEVICE_MIG_ENABLE {
		d.maxMig = 7
	}
	for j := range g.MigDevices {
		m := &g.MigDevices[j]
		if _, dup := d.migs[m.HandleIndex]; dup {
			return nil, fmt.Errorf("mig_devices[%d]: handle_index %d used twice", j, m.HandleIndex)
		}
		if m.HandleIndex >= d.maxMig {
			return nil, fmt.Errorf("mig_devices[%d]: handle_index %d beyond max_mig_devices %d", j, m.HandleIndex, d.maxMig)
		}
		mig, err := newMigDevice(g, m, lib)
		if err != nil {
			return nil, fmt.Errorf("mig_devices[%d]: %v", j, err)
		}
		d.migs[m.HandleIndex] = mig
		d.giProfile[m.GI] = mig.giProfileIndex
	}
	for _, l := range g.NVLinks {
		for i := 0; i < l.Count; i++ {
			d.linkRemote = append(d.linkRemote, l.Remote)
		}
	}
	d.linkRemote = append(d.linkRemote, make([]string, g.NVLinkDown)...)
	if len(d.linkRemote) > nvml.NVLINK_MAX_LINKS {
		return nil, fmt.Errorf("%d NVLinks, more than NVML's %d", len(d.linkRemote), nvml.NVLINK_MAX_LINKS)
	}
	return d, nil
}

func (d *device) GetNvLinkState(link int) (nvml.EnableState, nvml.Return) {
	if ret := d.call("GetNvLinkState"); ret != nvml.SUCCESS {
		return 0, ret
	}
	switch {
	case len(d.linkRemote) == 0:
		return 0, nvml.ERROR_NOT_SUPPORTED
	case link < 0 || link >= len(d.linkRemote):
		return 0, nvml.ERROR_INVALID_ARGUMENT
	case d.linkRemote[link] == "":
		return nvml.FEATURE_DISABLED, nvml.SUCCESS
	}
	return nvml.FEATURE_ENABLED, nvml.SUCCESS
}

func (d *device) GetNvLinkRemotePciInfo(link int) (nvml.PciInfo, nvml.Return) {
	if ret := d.call("GetNvLinkRemotePciInfo"); ret != nvml.SUCCESS {
		return nvml.PciInfo{}, ret
	}
	if link < 0 || link >= len(d.linkRemote) || d.linkRemote[link] == "" {
		return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	return pciInfo(d.linkRemote[link]), nvml.SUCCESS
}

func (d *device) GetMinorNumber() (int, nvml.Return) { return d.g.Minor, d.call("GetMinorNumber") }
func (d *device) GetUUID() (string, nvml.Return)     { return d.g.UUID, d.call("GetUUID") }
func (d *device) GetName() (string, nvml.Return)     { return d.g.Name, d.call("GetName") }

func (d *device) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	pci := pciInfo(d.g.PCIBusID)
	pci.PciDeviceId = d.pciDeviceID
	return pci, d.call("GetPciInfo")
}

func (d *device) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	return nvml.Memory{Total: d.g.MemoryMiB << 20}, d.call("GetMemoryInfo")
}

func (d *device) GetCpuAffinity(int) ([]uint, nvml.Return) {
	if ret := d.call("GetCpuAffinity"); ret != nvml.SUCCESS {
		return nil, ret
	}
	if d.mask == nil {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	return d.mask, nvml.SUCCESS
}

func (d *device) GetMigMode() (int, int, nvml.Return) {
	if ret := d.call("GetMigMode"); ret != nvml.SUCCESS {
		return 0, 0, ret
	}
	return d.current, d.pending, d.modeRet
}

func (d *device) GetMaxMigDeviceCount() (int, nvml.Return) {
	return d.maxMig, d.call("GetMaxMigDeviceCount")
}

func (d *device) GetMigDeviceHandleByIndex(j int) (nvml.Device, nvml.Return) {
	if ret := d.call("GetMigDeviceHandleByIndex"); ret != nvml.SUCCESS {
		return nil, ret
	}
	if j < 0 || j >= d.maxMig {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	mig, ok := d.migs[j]
	if !ok {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return mig, nvml.SUCCESS
}

func (d *device) GetGpuInstanceById(id int) (nvml.GpuInstance, nvml.Return) {
	if ret := d.call("GetGpuInstanceById"); ret != nvml.SUCCESS {
		return nil, ret
	}
	index, ok := d.giProfile[id]
	if !ok {
		return nil, nvml.ERROR_NOT_FOUND
	}
	profileID := giProfileID(index)
	if p, ok := d.profiles[index]; ok {
		profileID = p.Id
	}
	return &gpuInstance{caller: d.caller, info: nvml.GpuInstanceInfo{Id: uint32(id), ProfileId: profileID}}, nvml.SUCCESS
}

func (d *device) GetGpuInstanceProfileInfo(index int) (nvml.GpuInstanceProfileInfo, nvml.Return) {
	if ret := d.call("GetGpuInstanceProfileInfo"); ret != nvml.SUCCESS {
		return nvml.GpuInstanceProfileInfo{}, ret
	}
	if index < 0 || index >= nvml.GPU_INSTANCE_PROFILE_COUNT {
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	p, ok := d.profiles[index]
	if !ok {
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	return p, nvml.SUCCESS
}

func (d *device) GetGpuInstancePossiblePlacements(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstancePlacement, nvml.Return) {
	if ret := d.call("GetGpuInstancePossiblePlacements"); ret != nvml.SUCCESS {
		return nil, ret
	}
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	placements, ok := d.placements[info.Id]
	if !ok {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return append([]nvml.GpuInstancePlacement{}, placements...), nvml.SUCCESS
}

// gpuInstance is a fake GPU instance; only its info is asked for.
type gpuInstance struct {
	nvml.GpuInstance
	caller
	info nvml.GpuInstanceInfo
}

func (gi *gpuInstance) GetInfo() (nvml.GpuInstanceInfo, nvml.Return) {
	return gi.info, gi.call("GpuInstance.GetInfo")
}

// migDevice is a fake MIG device.
type migDevice struct {
	nvml.Device
	caller
	m              *MigDevice
	name           string
	attrs          nvml.DeviceAttributes
	giProfileIndex int
}

func newMigDevice(g *GPU, m *MigDevice, lib *library) (*migDevice, error) {
	errs, err := returns(m.Errors)
	if err != nil {
		return nil, err
	}
	p, err := parseProfile(m.Profile)
	if err != nil {
		return nil, err
	}
	d := &migDevice{caller: caller{lib, errs}, m: m, name: m.Name, giProfileIndex: p.giProfileIndex}
	if d.name == "" {
		d.name = g.Name + " MIG " + m.Profile
	}
	d.attrs = nvml.DeviceAttributes{GpuInstanceSliceCount: p.g, ComputeInstanceSliceCount: p.c, MemorySizeMB: m.MemoryMiB}
	if d.attrs.MemorySizeMB == 0 {
		d.attrs.MemorySizeMB = p.gb << 10
	}
	if m.GIProfileIndex != nil {
		d.giProfileIndex = *m.GIProfileIndex
	}
	return d, nil
}

func (d *migDevice) GetGpuInstanceId() (int, nvml.Return) { return d.m.GI, d.call("GetGpuInstanceId") }
func (d *migDevice) GetComputeInstanceId() (int, nvml.Return) {
	return d.m.CI, d.call("GetComputeInstanceId")
}
func (d *migDevice) GetUUID() (string, nvml.Return) { return d.m.UUID, d.call("GetUUID") }
func (d *migDevice) GetName() (string, nvml.Return) { return d.name, d.call("GetName") }

func (d *migDevice) GetAttributes() (nvml.DeviceAttributes, nvml.Return) {
	return d.attrs, d.call("GetAttributes")
}

func (d *migDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	if ret := d.call("GetComputeRunningProcesses"); ret != nvml.SUCCESS {
		return nil, ret
	}
	procs := make([]nvml.ProcessInfo, len(d.m.Processes))
	for i, p := range d.m.Processes {
		procs[i] = nvml.ProcessInfo{Pid: p.PID, UsedGpuMemory: p.UsedMemoryMiB << 20,
			GpuInstanceId: uint32(d.m.GI), ComputeInstanceId: uint32(d.m.CI)}
	}
	return procs, nvml.SUCCESS
}

func pciInfo(busID string) nvml.PciInfo {
	var pci nvml.PciInfo
	for i := 0; i < len(busID) && i < len(pci.BusId)-1; i++ {
		pci.BusId[i] = int8(busID[i])
	}
	return pci
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
		return p, fmt.Errorf("profile %q: no GPU instance profile of %d slice(s)", s, g)
	}
	p.giProfileIndex = index
	return p, nil
}

// parsePlacements reads placements in nvidia-smi mig -lgipp's form:
// "{0,2,4}:2" is three placements of 2 memory slices, at 0, 2 and 4.
func parsePlacements(s string) ([]nvml.GpuInstancePlacement, error) {
	starts, size, ok := strings.Cut(s, "}:")
	starts, open := strings.CutPrefix(starts, "{")
	n, err := strconv.ParseUint(size, 10, 32)
	if !ok || !open || err != nil {
		return nil, fmt.Errorf("placements %q: want {start,...}:size", s)
	}
	var out []nvml.GpuInstancePlacement
	for _, f := range strings.Split(starts, ",") {
		start, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("placements %q: start %q is not a number", s, f)
		}
		out = append(out, nvml.GpuInstancePlacement{Start: uint32(start), Size: uint32(n)})
	}
	return out, nil
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
	cpus, err := cpulist.Parse(list)
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
