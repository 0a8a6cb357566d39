// Package v2 is the wire form of a snapshot file of schemas 1 and 2, read
// and never written: schema 3's, except that each GPU carries its own
// profile table (mig_profiles, schema 2) and no node-wide table. Schema 1
// lacks pci_device_id and mig_profiles, which are optional here.
package v2

import v3 "github.com/slurm-mig/slurm-mig/internal/api/snapshot/v3"

// Node is one host's snapshot.
type Node struct {
	SchemaVersion *int         `json:"schema_version"`
	Hostname      string       `json:"hostname"`
	DriverVersion string       `json:"driver_version"`
	GPUs          []GPU        `json:"gpus"`
	Hardware      *v3.Hardware `json:"hardware,omitempty"`
}

// GPU is schema 3's GPU with its profile table inline.
type GPU struct {
	v3.GPU
	MigProfiles []v3.GIProfile `json:"mig_profiles,omitempty"`
}
