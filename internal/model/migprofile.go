package model

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// MemorySlices is how many memory slices a MIG-capable GPU is cut into: 8
// on every part so far (A100, H100, H200, B200), whose 7g profile is placed
// at 0:8. A placement outside them is corrupt.
const MemorySlices = 8

// pciDeviceIDForm is mig-parted's form of a device id: its DeviceID.String
// prints "0x%X" of (device << 16 | vendor), which is 8 digits for any
// NVIDIA GPU (device ids are 0x1000 and up).
var pciDeviceIDForm = regexp.MustCompile(`^0x[0-9A-F]{1,8}$`)

// checkMigProfiles refuses a profile table no GPU can have: a malformed PCI
// id or name, an empty profile, a placement outside the slices, a repeated
// id or name. plan would make a corrupt one a wrong answer, not a refusal.
func checkMigProfiles(g *GPU, checked checkedTables) error {
	if g.PCIDeviceID != "" && !pciDeviceIDForm.MatchString(g.PCIDeviceID) {
		return fmt.Errorf("pci_device_id %q: want 0x and up to 8 hex digits, as mig-parted's device-filter names it (0x233010DE)", g.PCIDeviceID)
	}
	table := g.Profiles
	if table == nil {
		return nil
	}
	if g.PCIDeviceID == "" {
		return fmt.Errorf("mig_profiles but no pci_device_id: a profile table belongs to a GPU model")
	}
	if other, ok := checked.byID[g.PCIDeviceID]; ok && other != table && !slices.EqualFunc(other.Profiles, table.Profiles, equalGIProfile) {
		return fmt.Errorf("pci_device_id %s: a profile table unlike that of another GPU of the same id", g.PCIDeviceID)
	}
	checked.byID[g.PCIDeviceID] = table
	if checked.ok[table] {
		return nil
	}
	seenID := map[int]bool{}
	seenName := map[string]bool{}
	for i := range table.Profiles {
		p := &table.Profiles[i]
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
	checked.ok[table] = true
	return nil
}

// checkedTables are the profile tables a node's check has passed (a table
// shared by several GPUs is checked once), and each PCI device id's table.
type checkedTables struct {
	ok   map[*ProfileTable]bool
	byID map[string]*ProfileTable
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

// ProfileTable is the GPU-instance profiles a GPU offers: one table for
// every GPU of a model, made by Tables, so that two GPUs have equal
// tables exactly when they have the same *ProfileTable.
type ProfileTable struct {
	Profiles []GIProfile
}

// Find is the profile of that name, or nil.
func (t *ProfileTable) Find(name string) *GIProfile {
	for i := range t.Profiles {
		if t.Profiles[i].Name == name {
			return &t.Profiles[i]
		}
	}
	return nil
}

// Tables hands out one *ProfileTable for each distinct table it is
// given; the zero value is ready, and it is safe for several goroutines.
type Tables struct {
	mu   sync.Mutex
	seen []*ProfileTable
}

// Intern is the table equal to profiles, made on first sight; nil for no
// profiles. It keeps profiles, which the caller must not change after.
func (ts *Tables) Intern(profiles []GIProfile) *ProfileTable {
	if len(profiles) == 0 {
		return nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.seen {
		if slices.EqualFunc(t.Profiles, profiles, equalGIProfile) {
			return t
		}
	}
	t := &ProfileTable{Profiles: profiles}
	ts.seen = append(ts.seen, t)
	return t
}

func equalGIProfile(a, b GIProfile) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Instances == b.Instances && a.MemoryMiB == b.MemoryMiB &&
		a.Slices == b.Slices && slices.Equal(a.Placements, b.Placements) && slices.Equal(a.CIProfiles, b.CIProfiles)
}
