// Package model is the node model every command works on: a node's GPUs
// and MIG devices (Node, GPU, MigDevice), what must hold of them (Check),
// and their JSON form, the snapshot (schema v2; v1 is still read). It reads nothing from the
// node itself: package nvmlread fills it from NVML, and package nodeload
// from a snapshot or NVML plus the node's files.
package model

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/slurm-mig/slurm-mig/internal/topology"
)

// SchemaVersion is the snapshot schema this package writes. Schema 2 added
// each GPU's PCI device id and MIG profile table; it reads schemas
// OldestSchemaVersion to SchemaVersion, the older ones lacking only
// fields that are optional in the newer.
const SchemaVersion = 2

// OldestSchemaVersion is the oldest snapshot schema this package reads.
const OldestSchemaVersion = 1

// Node is everything discovery found on one host. Its JSON form is the
// snapshot format, documented in docs/snapshot.md.
type Node struct {
	SchemaVersion int    `json:"schema_version"`
	Hostname      string `json:"hostname"`
	DriverVersion string `json:"driver_version"`
	GPUs          []GPU  `json:"gpus"`
	// Hardware is the node's CPU and memory layout as slurmd -C gives it
	// (for node --full); nil until read from the node's sysfs.
	Hardware *topology.NodeHardware `json:"hardware,omitempty"`
	// Snapshot is the file the node was read from, empty when it was
	// read through NVML. A snapshot's node is another host's: what it
	// lacks is never filled in from this one (nodeload), and messages
	// about it name this file.
	Snapshot string `json:"-"`
}

// GPU is one physical GPU, in NVML index order within Node.GPUs.
type GPU struct {
	Index     int    `json:"index"`
	Minor     int    `json:"minor"` // N of /dev/nvidiaN and of gpuN in mig-minors
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	PCIBusID  string `json:"pci_bus_id"`
	MemoryMiB uint64 `json:"memory_mib"`
	// MigEnabled is the current MIG mode, MigPending the mode after the
	// next GPU reset. Both are false for a GPU that does not support MIG.
	MigEnabled bool `json:"mig_enabled"`
	MigPending bool `json:"mig_pending"`
	// CPUAffinity is the OS CPU list NVML reports as near the GPU
	// ("0-15,32-47"); empty when unknown.
	CPUAffinity string `json:"cpu_affinity,omitempty"`
	// Cores is CPUAffinity in Slurm's abstract core ids ("0-15"), the
	// value of Cores=; empty until resolved from the node's CPU topology.
	Cores string `json:"cores,omitempty"`
	// NVLinks are the GPU's active NVLinks, counted per remote device.
	NVLinks    []NVLink    `json:"nvlinks,omitempty"`
	MigDevices []MigDevice `json:"mig_devices,omitempty"`
	// PCIDeviceID is the GPU's PCI device and vendor id in the form
	// mig-parted's device-filter uses ("0x233010DE" for an H100 80GB
	// HBM3); empty where it is not known (a snapshot of schema 1).
	PCIDeviceID string `json:"pci_device_id,omitempty"`
	// MigProfiles are the GPU-instance profiles the GPU offers, whether
	// MIG is on or off: what a MIG layout may be made of (plan). Empty
	// for a GPU without MIG, and where not known (schema 1). Read only:
	// GPUs read from snapshots share one table where theirs are the same
	// (SnapshotReader), as a fleet's 80,000 GPUs of a few models do.
	MigProfiles []GIProfile `json:"mig_profiles,omitempty"`
}

// GIProfile is a GPU-instance profile a MIG-capable GPU offers, as NVML's
// GetGpuInstanceProfileInfo and GetGpuInstancePossiblePlacements give it
// (nvidia-smi mig -lgip and -lgipp print the same).
type GIProfile struct {
	ID   int    `json:"id"`   // the profile id (19 for 1g.10gb on an H100)
	Name string `json:"name"` // as nvidia-smi and mig-parted name it: "1g.10gb", "1g.10gb+me"
	// Instances is how many GPU instances of the profile the GPU holds
	// at most.
	Instances int    `json:"instances"`
	MemoryMiB uint64 `json:"memory_mib"`
	// Slices is the profile's compute slices (the g of 1g.10gb).
	Slices int `json:"slices"`
	// Placements are where an instance may start, and how many memory
	// slices it takes from there; a layout fits only when every instance
	// has a placement and no two overlap.
	Placements []Placement `json:"placements"`
	// CIProfiles are the compute-instance profiles a GPU instance of this
	// profile offers.
	CIProfiles []CIProfile `json:"ci_profiles,omitempty"`
}

// Placement is a GPU instance's start and size, in memory slices.
type Placement struct {
	Start int `json:"start"`
	Size  int `json:"size"`
}

// CIProfile is a compute-instance profile inside a GPU instance.
type CIProfile struct {
	ID   int    `json:"id"`
	Name string `json:"name"` // "1c.3g.40gb", or the GI's own name when it takes the whole GI
	// Slices is the compute slices it takes (the c of 1c.3g.40gb).
	Slices int `json:"slices"`
	// Instances is how many such compute instances one GPU instance holds
	// at most.
	Instances int `json:"instances"`
}

// NVLink is a number of active NVLinks to the device at a PCI bus id: a
// GPU of the node, or an NVSwitch.
type NVLink struct {
	RemotePCIBusID string `json:"remote_pci_bus_id"`
	Links          int    `json:"links"`
}

// MigDevice is one MIG device: a compute instance inside a GPU instance.
type MigDevice struct {
	GPUInstanceID     int    `json:"gpu_instance_id"`
	ComputeInstanceID int    `json:"compute_instance_id"`
	UUID              string `json:"uuid"`
	// Profile is the nvidia-smi name: 1g.10gb, 1c.3g.40gb, 1g.10gb+me.
	Profile   string `json:"profile"`
	GISlices  int    `json:"gi_slices,omitempty"`
	MemoryMiB uint64 `json:"memory_mib,omitempty"`
	// Minors of /dev/nvidia-caps/nvidia-cap<M> for the GI and the CI; nil
	// until resolved from mig-minors (see capmap.Resolve).
	GICapMinor *uint32 `json:"gi_cap_minor,omitempty"`
	CICapMinor *uint32 `json:"ci_cap_minor,omitempty"`
	// Processes are the compute processes running on it, read only when
	// asked (see ReadProcesses): free and exec, and snapshots.
	Processes []Process `json:"processes,omitempty"`
}

// MigChangePending reports whether the MIG mode changes at the next reset.
func (g *GPU) MigChangePending() bool { return g.MigEnabled != g.MigPending }

// DevicePath is the GPU's device file, named by its minor (not its index).
func (g *GPU) DevicePath() string { return "/dev/nvidia" + strconv.Itoa(g.Minor) }

// Files are the device files a job of the whole GPU is given: its own,
// or none in MIG mode, where only its MIG devices are usable.
func (g *GPU) Files() []string {
	if g.MigEnabled {
		return nil
	}
	return []string{g.DevicePath()}
}

// Files are the device files a job of the MIG device is given: its GPU's,
// its GI cap's and its CI cap's. Its cap minors must be resolved.
func (m *MigDevice) Files(gpu *GPU) []string {
	return []string{gpu.DevicePath(), CapPath(*m.GICapMinor), CapPath(*m.CICapMinor)}
}

// Label names the GPU in messages the way an admin finds it: NVML index,
// minor and PCI bus id.
func (g *GPU) Label() string {
	if g.PCIBusID == "" {
		return fmt.Sprintf("GPU %d (minor %d)", g.Index, g.Minor)
	}
	return fmt.Sprintf("GPU %d (minor %d, %s)", g.Index, g.Minor, g.PCIBusID)
}

// Label names a MIG device in messages as the mig-minors file does.
func (m *MigDevice) Label(gpu *GPU) string {
	return fmt.Sprintf("MIG device gpu%d/gi%d/ci%d (%s)", gpu.Minor, m.GPUInstanceID, m.ComputeInstanceID, gpu.Label())
}

// CapPath is the device file of a capability minor.
func CapPath(minor uint32) string {
	return "/dev/nvidia-caps/nvidia-cap" + strconv.FormatUint(uint64(minor), 10)
}

// Sort puts GPUs in NVML index order and MIG devices in (GI, CI) order,
// the order every output follows.
func (n *Node) Sort() {
	sort.Slice(n.GPUs, func(a, b int) bool { return n.GPUs[a].Index < n.GPUs[b].Index })
	for i := range n.GPUs {
		SortMigDevices(n.GPUs[i].MigDevices)
	}
}

// SortMigDevices puts a GPU's MIG devices in (GI, CI) order.
func SortMigDevices(migs []MigDevice) {
	sort.Slice(migs, func(a, b int) bool {
		if migs[a].GPUInstanceID != migs[b].GPUInstanceID {
			return migs[a].GPUInstanceID < migs[b].GPUInstanceID
		}
		return migs[a].ComputeInstanceID < migs[b].ComputeInstanceID
	})
}
