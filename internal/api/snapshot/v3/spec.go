// Package v3 is the wire form of a snapshot file, schema 3: the JSON that
// `slurm-mig snapshot` writes and `--from` reads (docs/snapshot.md). Each
// MIG profile table is given once, under the PCI device id of its GPUs,
// and a GPU refers to its table by that id. Keys a reader must see are
// pointers, so that a missing one is told from a zero.
package v3

// Version is the schema_version of this form.
const Version = 3

// Node is one host's snapshot.
type Node struct {
	SchemaVersion *int   `json:"schema_version"`
	Hostname      string `json:"hostname"`
	DriverVersion string `json:"driver_version"`
	GPUs          []GPU  `json:"gpus"`
	// ProfileTables are the GPUs' MIG profile tables by PCI device id
	// (pci_device_id of the GPUs that have it).
	ProfileTables map[string][]GIProfile `json:"profile_tables,omitempty"`
	Hardware      *Hardware              `json:"hardware,omitempty"`
}

// GPU is one physical GPU.
type GPU struct {
	Index       *int        `json:"index"`
	Minor       *int        `json:"minor"`
	UUID        string      `json:"uuid"`
	Name        *string     `json:"name"`
	PCIBusID    string      `json:"pci_bus_id"`
	MemoryMiB   uint64      `json:"memory_mib"`
	MigEnabled  bool        `json:"mig_enabled"`
	MigPending  bool        `json:"mig_pending"`
	CPUAffinity string      `json:"cpu_affinity,omitempty"`
	Cores       string      `json:"cores,omitempty"`
	NVLinks     []NVLink    `json:"nvlinks,omitempty"`
	MigDevices  []MigDevice `json:"mig_devices,omitempty"`
	// PCIDeviceID is mig-parted's form of the PCI id ("0x233010DE"), and
	// the key of the GPU's table in ProfileTables, if it has one.
	PCIDeviceID string `json:"pci_device_id,omitempty"`
}

// GIProfile is a GPU-instance profile of a table.
type GIProfile struct {
	ID         int         `json:"id"`
	Name       string      `json:"name"`
	Instances  int         `json:"instances"`
	MemoryMiB  uint64      `json:"memory_mib"`
	Slices     int         `json:"slices"`
	Placements []Placement `json:"placements"`
	CIProfiles []CIProfile `json:"ci_profiles,omitempty"`
}

// Placement is a GPU instance's start and size, in memory slices.
type Placement struct {
	Start int `json:"start"`
	Size  int `json:"size"`
}

// CIProfile is a compute-instance profile inside a GPU instance.
type CIProfile struct {
	ID        int    `json:"id"`
	Name      string `json:"name"`
	Slices    int    `json:"slices"`
	Instances int    `json:"instances"`
}

// NVLink is a count of active NVLinks to one remote PCI device.
type NVLink struct {
	RemotePCIBusID string `json:"remote_pci_bus_id"`
	Links          int    `json:"links"`
}

// MigDevice is one MIG device: a compute instance in a GPU instance.
type MigDevice struct {
	GPUInstanceID     *int      `json:"gpu_instance_id"`
	ComputeInstanceID *int      `json:"compute_instance_id"`
	UUID              string    `json:"uuid"`
	Profile           *string   `json:"profile"`
	GISlices          int       `json:"gi_slices,omitempty"`
	MemoryMiB         uint64    `json:"memory_mib,omitempty"`
	GICapMinor        *uint32   `json:"gi_cap_minor,omitempty"`
	CICapMinor        *uint32   `json:"ci_cap_minor,omitempty"`
	Processes         []Process `json:"processes,omitempty"`
}

// Process is a compute process on a MIG device.
type Process struct {
	PID           uint32 `json:"pid"`
	UsedMemoryMiB uint64 `json:"used_memory_mib,omitempty"`
}

// Hardware is the node's CPU and memory layout as `slurmd -C` gives it.
type Hardware struct {
	CPUs            int    `json:"cpus"`
	Boards          int    `json:"boards"`
	SocketsPerBoard int    `json:"sockets_per_board"`
	CoresPerSocket  int    `json:"cores_per_socket"`
	ThreadsPerCore  int    `json:"threads_per_core"`
	RealMemoryMiB   uint64 `json:"real_memory_mib"`
}
