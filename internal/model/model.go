// Package model is the node model every command works on: a node's GPUs
// and MIG devices (Node, GPU, MigDevice), their profile tables, and what
// must hold of them (Check). It reads nothing: nvmlread fills it from NVML,
// and internal/snapshot from a snapshot file, whose wire form is
// internal/api/snapshot.
package model

import (
	"fmt"
	"sort"
	"strconv"
)

// Node is everything discovery found on one host.
type Node struct {
	// SchemaVersion is the snapshot schema the node was read from; 0 for
	// a node read through NVML.
	SchemaVersion int
	Hostname      string
	DriverVersion string
	GPUs          []GPU
	// Hardware is the node's CPU and memory layout as slurmd -C gives it
	// (for node --full); nil until read from the node's sysfs.
	Hardware *Hardware
	// Snapshot is the file the node was read from, empty if from NVML.
	// A snapshot's node is another host's: what it lacks is never filled
	// in from this one, and messages about it name this file.
	Snapshot string
}

// GPU is one physical GPU, in NVML index order within Node.GPUs.
type GPU struct {
	Index     int
	Minor     int // N of /dev/nvidiaN and of gpuN in mig-minors
	UUID      string
	Name      string
	PCIBusID  string
	MemoryMiB uint64
	// MigEnabled is the current MIG mode, MigPending the mode after the
	// next GPU reset. Both are false for a GPU that does not support MIG.
	MigEnabled bool
	MigPending bool
	// CPUAffinity is the OS CPU list NVML reports as near the GPU
	// ("0-15,32-47"); empty when unknown.
	CPUAffinity string
	// Cores is CPUAffinity in Slurm's abstract core ids ("0-15"), the
	// value of Cores=; empty until resolved from the node's CPU topology.
	Cores string
	// NVLinks are the GPU's active NVLinks, counted per remote device.
	NVLinks    []NVLink
	MigDevices []MigDevice
	// PCIDeviceID is the GPU's PCI device and vendor id in the form
	// mig-parted's device-filter uses ("0x233010DE" for an H100 80GB
	// HBM3); empty where it is not known (a snapshot of schema 1).
	PCIDeviceID string
	// Profiles is the GPU's MIG profile table, whether MIG is on or off;
	// nil without MIG or where unknown (schema 1). Shared and read only:
	// equal tables are one pointer (Tables).
	Profiles *ProfileTable
}

// MigProfiles are the GPU-instance profiles of the GPU's table; nil where
// it has none.
func (g *GPU) MigProfiles() []GIProfile {
	if g.Profiles == nil {
		return nil
	}
	return g.Profiles.Profiles
}

// GIProfile is a GPU-instance profile a MIG-capable GPU offers, as NVML's
// GetGpuInstanceProfileInfo and GetGpuInstancePossiblePlacements give it
// (nvidia-smi mig -lgip and -lgipp print the same).
type GIProfile struct {
	ID   int    // the profile id (19 for 1g.10gb on an H100)
	Name string // as nvidia-smi and mig-parted name it: "1g.10gb", "1g.10gb+me"
	// Instances is how many GPU instances of the profile the GPU holds
	// at most.
	Instances int
	MemoryMiB uint64
	// Slices is the profile's compute slices (the g of 1g.10gb).
	Slices int
	// Placements are where an instance may start, and how many memory
	// slices it takes from there; a layout fits only when every instance
	// has a placement and no two overlap.
	Placements []Placement
	// CIProfiles are the compute-instance profiles a GPU instance of this
	// profile offers.
	CIProfiles []CIProfile
}

// Placement is a GPU instance's start and size, in memory slices.
type Placement struct {
	Start int
	Size  int
}

// CIProfile is a compute-instance profile inside a GPU instance.
type CIProfile struct {
	ID   int
	Name string // "1c.3g.40gb", or the GI's own name when it takes the whole GI
	// Slices is the compute slices it takes (the c of 1c.3g.40gb).
	Slices int
	// Instances is how many such compute instances one GPU instance holds
	// at most.
	Instances int
}

// NVLink is a number of active NVLinks to the device at a PCI bus id: a
// GPU of the node, or an NVSwitch.
type NVLink struct {
	RemotePCIBusID string
	Links          int
}

// MigDevice is one MIG device: a compute instance inside a GPU instance.
type MigDevice struct {
	GPUInstanceID     int
	ComputeInstanceID int
	UUID              string
	// Profile is the nvidia-smi name: 1g.10gb, 1c.3g.40gb, 1g.10gb+me.
	Profile   string
	GISlices  int
	MemoryMiB uint64
	// Minors of /dev/nvidia-caps/nvidia-cap<M> for the GI and the CI; nil
	// until resolved from mig-minors (see capmap.Resolve).
	GICapMinor *uint32
	CICapMinor *uint32
	// Processes are the compute processes running on it, read only when
	// asked (see ReadProcesses): free and exec, and snapshots.
	Processes []Process
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
