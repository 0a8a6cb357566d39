package snapshot

import (
	"encoding/json"
	"fmt"
	"io"

	v3 "github.com/slurm-mig/slurm-mig/internal/api/snapshot/v3"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// Write writes n as an indented schema 3 snapshot, the same bytes for the
// same node. A GPU with a profile table must have a PCI device id, and
// GPUs of one id one table: the file keys tables by it.
func Write(w io.Writer, n *model.Node) error {
	wire, err := toV3(n)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(wire, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

func toV3(n *model.Node) (*v3.Node, error) {
	version := v3.Version
	w := &v3.Node{SchemaVersion: &version, Hostname: n.Hostname, DriverVersion: n.DriverVersion, GPUs: []v3.GPU{}}
	if n.Hardware != nil {
		h := v3.Hardware(*n.Hardware)
		w.Hardware = &h
	}
	byID := map[string]*model.ProfileTable{}
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if g.Profiles != nil {
			switch t, seen := byID[g.PCIDeviceID]; {
			case g.PCIDeviceID == "":
				return nil, fmt.Errorf("%s: a MIG profile table but no PCI device id to file it under", g.Label())
			case seen && t != g.Profiles:
				return nil, fmt.Errorf("%s: a MIG profile table unlike that of another GPU of PCI device id %s", g.Label(), g.PCIDeviceID)
			case !seen:
				byID[g.PCIDeviceID] = g.Profiles
				if w.ProfileTables == nil {
					w.ProfileTables = map[string][]v3.GIProfile{}
				}
				w.ProfileTables[g.PCIDeviceID] = wireProfiles(g.Profiles.Profiles)
			}
		}
		w.GPUs = append(w.GPUs, wireGPU(g))
	}
	return w, nil
}

func wireGPU(g *model.GPU) v3.GPU {
	index, minor, name := g.Index, g.Minor, g.Name
	w := v3.GPU{Index: &index, Minor: &minor, UUID: g.UUID, Name: &name, PCIBusID: g.PCIBusID, MemoryMiB: g.MemoryMiB,
		MigEnabled: g.MigEnabled, MigPending: g.MigPending, CPUAffinity: g.CPUAffinity, Cores: g.Cores, PCIDeviceID: g.PCIDeviceID}
	for _, l := range g.NVLinks {
		w.NVLinks = append(w.NVLinks, v3.NVLink(l))
	}
	for _, m := range g.MigDevices {
		gi, ci, profile := m.GPUInstanceID, m.ComputeInstanceID, m.Profile
		wm := v3.MigDevice{GPUInstanceID: &gi, ComputeInstanceID: &ci, UUID: m.UUID, Profile: &profile,
			GISlices: m.GISlices, MemoryMiB: m.MemoryMiB, GICapMinor: m.GICapMinor, CICapMinor: m.CICapMinor}
		for _, p := range m.Processes {
			wm.Processes = append(wm.Processes, v3.Process(p))
		}
		w.MigDevices = append(w.MigDevices, wm)
	}
	return w
}

func wireProfiles(ps []model.GIProfile) []v3.GIProfile {
	out := make([]v3.GIProfile, len(ps))
	for i, p := range ps {
		out[i] = v3.GIProfile{ID: p.ID, Name: p.Name, Instances: p.Instances, MemoryMiB: p.MemoryMiB, Slices: p.Slices,
			Placements: []v3.Placement{}}
		for _, pl := range p.Placements {
			out[i].Placements = append(out[i].Placements, v3.Placement(pl))
		}
		for _, c := range p.CIProfiles {
			out[i].CIProfiles = append(out[i].CIProfiles, v3.CIProfile(c))
		}
	}
	return out
}

// Files expands FILE and DIR arguments into the snapshot files to read: a
// file as given, a directory as its *.json files (not those starting with
// '.'), in name order.
func Files(args []string) ([]string, error) {
	return fileio.Expand(args, ".json", "*.json snapshots")
}
