package model

import (
	"fmt"
	"regexp"
	"strings"
)

// MemorySlices is how many memory slices a MIG-capable GPU is cut into:
// 8 on every part NVIDIA has made so far (A100, H100, H200, B200), whose
// whole-GPU profile (7g) is placed at 0:8. A placement outside them is
// corrupt.
const MemorySlices = 8

// pciDeviceIDForm is mig-parted's form of a device id: its DeviceID.String
// prints "0x%X" of (device << 16 | vendor), which is 8 digits for any
// NVIDIA GPU (device ids are 0x1000 and up).
var pciDeviceIDForm = regexp.MustCompile(`^0x[0-9A-F]{1,8}$`)

// checkMigProfiles finds what no GPU's profile table can hold: a PCI
// device id not in mig-parted's form, a name not in nvidia-smi's, a
// profile of no instance or slice, a placement outside the GPU's memory
// slices, or two profiles with one id or one name. plan decides layouts
// from this table, so a corrupt one would be a wrong answer, not a
// refusal.
func checkMigProfiles(g *GPU, checked checkedTables) error {
	if g.PCIDeviceID != "" && !pciDeviceIDForm.MatchString(g.PCIDeviceID) {
		return fmt.Errorf("pci_device_id %q: want 0x and up to 8 hex digits, as mig-parted's device-filter names it (0x233010DE)", g.PCIDeviceID)
	}
	if len(g.MigProfiles) == 0 {
		return nil
	}
	table := tableID{&g.MigProfiles[0], len(g.MigProfiles)}
	if checked[table] {
		return nil
	}
	seenID := map[int]bool{}
	seenName := map[string]bool{}
	for i := range g.MigProfiles {
		p := &g.MigProfiles[i]
		if err := ValidProfile(p.Name); err != nil {
			return fmt.Errorf("mig_profiles: profile %d: %v", p.ID, err)
		}
		if isCIProfileName(p.Name) {
			return fmt.Errorf("mig_profiles: profile %d: %q is a compute-instance profile's name, not a GPU instance's", p.ID, p.Name)
		}
		if seenID[p.ID] {
			return fmt.Errorf("mig_profiles: profile id %d appears twice", p.ID)
		}
		if seenName[p.Name] {
			return fmt.Errorf("mig_profiles: profile name %q appears twice", p.Name)
		}
		seenID[p.ID], seenName[p.Name] = true, true
		if err := checkGIProfile(p); err != nil {
			return fmt.Errorf("mig_profiles: profile %d (%s): %v", p.ID, p.Name, err)
		}
	}
	checked[table] = true
	return nil
}

// checkedTables are the profile tables a node's check has passed. GPUs
// read from a snapshot share one table where theirs are the same
// (GPU.MigProfiles), and a table shared is checked once.
type checkedTables map[tableID]bool

// tableID is a profile table by its memory: its first profile and length.
type tableID struct {
	first *GIProfile
	n     int
}

// checkGIProfile checks one GPU-instance profile's counts, placements and
// compute-instance profiles.
func checkGIProfile(p *GIProfile) error {
	switch {
	case p.Instances < 1:
		return fmt.Errorf("instances %d; a profile holds at least 1", p.Instances)
	case p.Slices < 1 || p.Slices > MemorySlices:
		return fmt.Errorf("slices %d; a profile takes 1 to %d", p.Slices, MemorySlices)
	}
	for _, pl := range p.Placements {
		switch {
		case pl.Size < 1:
			return fmt.Errorf("placement %d:%d takes no memory slice", pl.Start, pl.Size)
		case pl.Start < 0 || pl.Start > MemorySlices-pl.Size:
			return fmt.Errorf("placement %d:%d runs past the GPU's %d memory slices", pl.Start, pl.Size, MemorySlices)
		}
	}
	seenID := map[int]bool{}
	for _, c := range p.CIProfiles {
		if err := ValidProfile(c.Name); err != nil {
			return fmt.Errorf("compute-instance profile %d: %v", c.ID, err)
		}
		switch {
		case seenID[c.ID]:
			return fmt.Errorf("compute-instance profile id %d appears twice", c.ID)
		case c.Slices < 1 || c.Slices > p.Slices:
			return fmt.Errorf("compute-instance profile %d (%s): slices %d; it takes 1 to the GPU instance's %d", c.ID, c.Name, c.Slices, p.Slices)
		case c.Instances < 1:
			return fmt.Errorf("compute-instance profile %d (%s): instances %d; a profile holds at least 1", c.ID, c.Name, c.Instances)
		}
		seenID[c.ID] = true
	}
	return nil
}

// isCIProfileName reports whether a valid profile name has a compute part
// ("1c.3g.40gb"): nvidia-smi names a GPU instance "<g>g.<mem>gb" only.
func isCIProfileName(p string) bool {
	body, _, _ := strings.Cut(p, "+")
	body, _, _ = strings.Cut(body, "-")
	return strings.Count(body, ".") == 2
}
