package model

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/cpulist"
)

// Bounds on what one node may hold: a GPU has at most a few dozen MIG
// devices (15 GPU instances of up to 8 compute instances on today's parts).
const (
	maxGPUs             = 1024
	maxMigDevicesPerGPU = 256
	// maxGPUMinor: the driver's device minors are 8 bits and it keeps
	// the top ones for its control devices (255 is /dev/nvidiactl).
	maxGPUMinor = 254
	// maxInstanceID: GI ids are 0-14 and CI ids 0-7 on every part so far
	// (mig-minors lists exactly those); an id past a byte is corrupt.
	maxInstanceID = 255
	// maxCapMinor: a Linux device minor has 20 bits (MINORBITS), so a
	// larger cap minor can name no /dev/nvidia-caps file.
	maxCapMinor = 1<<20 - 1
)

// Check finds what cannot be true of one node (duplicates, MIG devices
// with MIG off, a cap minor used twice, a UUID of another GPU or not in
// NVML's form), and names the GPU or device in its error.
func (n *Node) Check() error {
	if err := n.checkLayout(); err != nil {
		return err
	}
	return n.checkUUIDs()
}

// checkUUIDs finds a GPU or MIG device whose UUID is missing or not in
// NVML's form (ValidUUID). It runs after the layout checks, so a node
// that contradicts itself is told so first.
func (n *Node) checkUUIDs() error {
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if err := ValidUUID(g.UUID, false); err != nil {
			return fmt.Errorf("%s: %v", g.Label(), err)
		}
		for j := range g.MigDevices {
			m := &g.MigDevices[j]
			if err := ValidUUID(m.UUID, true); err != nil {
				return fmt.Errorf("%s: %v", m.Label(g), err)
			}
		}
	}
	return nil
}

// checkLayout finds duplicates, contradictions and values out of range.
func (n *Node) checkLayout() error {
	if len(n.GPUs) > maxGPUs {
		return fmt.Errorf("%d GPUs; no node has more than %d", len(n.GPUs), maxGPUs)
	}
	devices := len(n.GPUs) // a bound on the UUIDs and cap minors below
	for i := range n.GPUs {
		devices += min(len(n.GPUs[i].MigDevices), maxMigDevicesPerGPU)
	}
	seenIndex := make(map[int]bool, len(n.GPUs))
	seenMinor := make(map[int]bool, len(n.GPUs))
	seenUUID := make(map[string]owner, devices)
	tables := checkedTables{ok: map[*ProfileTable]bool{}, byID: map[string]*ProfileTable{}}
	capOwner := make(map[uint32]owner, 2*devices)
	claimCap := func(minor *uint32, o owner) error {
		if minor == nil {
			return nil
		}
		if prev, ok := capOwner[*minor]; ok && prev.key() != o.key() {
			return fmt.Errorf("cap minor %d given to both %s and %s", *minor, prev, o)
		}
		capOwner[*minor] = o
		return nil
	}
	claimUUID := func(uuid string, o owner) error {
		if uuid == "" {
			return nil
		}
		if prev, ok := seenUUID[uuid]; ok {
			return fmt.Errorf("UUID %s given to both %s and %s", uuid, prev, o)
		}
		seenUUID[uuid] = o
		return nil
	}

	if err := checkHardware(n.Hardware); err != nil {
		return err
	}
	for i := range n.GPUs {
		g := &n.GPUs[i]
		switch {
		case len(g.MigDevices) > maxMigDevicesPerGPU:
			return fmt.Errorf("%s: %d MIG devices; no GPU has more than %d", g.Label(), len(g.MigDevices), maxMigDevicesPerGPU)
		case g.Index < 0 || g.Minor < 0:
			return fmt.Errorf("%s: negative index or minor", g.Label())
		case g.Index >= maxGPUs:
			return fmt.Errorf("%s: index %d; NVML numbers at most %d GPUs from 0", g.Label(), g.Index, maxGPUs)
		case g.Minor > maxGPUMinor:
			return fmt.Errorf("%s: minor %d; the driver's GPU minors are 0 to %d", g.Label(), g.Minor, maxGPUMinor)
		case seenIndex[g.Index]:
			return fmt.Errorf("%s: index %d appears twice", g.Label(), g.Index)
		case seenMinor[g.Minor]:
			return fmt.Errorf("%s: minor %d appears twice", g.Label(), g.Minor)
		case strings.TrimSpace(g.Name) == "":
			return fmt.Errorf("%s: empty name", g.Label())
		case len(g.MigDevices) > 0 && !g.MigEnabled:
			return fmt.Errorf("%s: has MIG devices but mig_enabled is false", g.Label())
		}
		if g.Cores != "" {
			if err := cpulist.Check(g.Cores); err != nil {
				return fmt.Errorf("%s: cores: %v", g.Label(), err)
			}
		}
		if g.CPUAffinity != "" {
			if err := cpulist.Check(g.CPUAffinity); err != nil {
				return fmt.Errorf("%s: cpu_affinity: %v", g.Label(), err)
			}
		}
		for _, l := range g.NVLinks {
			if l.RemotePCIBusID == "" || l.Links <= 0 {
				return fmt.Errorf("%s: nvlinks: want a remote_pci_bus_id and a positive count of links", g.Label())
			}
		}
		if err := checkMigProfiles(g, tables); err != nil {
			return fmt.Errorf("%s: %v", g.Label(), err)
		}
		seenIndex[g.Index], seenMinor[g.Minor] = true, true
		if err := claimUUID(g.UUID, owner{gpu: g}); err != nil {
			return err
		}

		giCap := map[int]*uint32{} // GI id -> its cap minor, if known
		seenMig := map[[2]int]bool{}
		for j := range g.MigDevices {
			m := &g.MigDevices[j]
			if m.GPUInstanceID < 0 || m.ComputeInstanceID < 0 {
				return fmt.Errorf("%s: negative instance id", m.Label(g))
			}
			if m.GPUInstanceID > maxInstanceID || m.ComputeInstanceID > maxInstanceID {
				return fmt.Errorf("%s: instance ids run from 0 to %d", m.Label(g), maxInstanceID)
			}
			for _, c := range []struct {
				name  string
				minor *uint32
			}{{"gi_cap_minor", m.GICapMinor}, {"ci_cap_minor", m.CICapMinor}} {
				if c.minor != nil && *c.minor > maxCapMinor {
					return fmt.Errorf("%s: %s %d; a device minor is at most %d", m.Label(g), c.name, *c.minor, maxCapMinor)
				}
			}
			if err := ValidProfile(m.Profile); err != nil {
				return fmt.Errorf("%s: %v", m.Label(g), err)
			}
			if err := claimUUID(m.UUID, owner{gpu: g, mig: m}); err != nil {
				return err
			}
			if err := checkLegacyMigUUID(g, m); err != nil {
				return fmt.Errorf("%s: %v", m.Label(g), err)
			}
			if id := [2]int{m.GPUInstanceID, m.ComputeInstanceID}; seenMig[id] {
				return fmt.Errorf("%s appears twice", m.Label(g))
			} else {
				seenMig[id] = true
			}
			if prev, ok := giCap[m.GPUInstanceID]; ok && prev != nil && m.GICapMinor != nil && *prev != *m.GICapMinor {
				return fmt.Errorf("%s: gi_cap_minor %d, but another device of the same GPU instance says %d", m.Label(g), *m.GICapMinor, *prev)
			}
			if m.GICapMinor != nil {
				giCap[m.GPUInstanceID] = m.GICapMinor
			}
			if err := claimCap(m.GICapMinor, owner{gpu: g, mig: m, gi: true}); err != nil {
				return err
			}
			if err := claimCap(m.CICapMinor, owner{gpu: g, mig: m}); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHardware refuses hardware with a count missing or below 1:
// slurmd -C never says 0 of anything, and node --full prints these as
// they are.
func checkHardware(h *Hardware) error {
	if h == nil {
		return nil
	}
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"cpus", int64(h.CPUs)}, {"boards", int64(h.Boards)}, {"sockets_per_board", int64(h.SocketsPerBoard)},
		{"cores_per_socket", int64(h.CoresPerSocket)}, {"threads_per_core", int64(h.ThreadsPerCore)},
		{"real_memory_mib", int64(min(h.RealMemoryMiB, 1<<62))},
	} {
		switch {
		case f.value == 0:
			return fmt.Errorf("hardware: %s is missing or 0", f.name)
		case f.value < 0:
			return fmt.Errorf("hardware: %s is %d, less than 1", f.name, f.value)
		}
	}
	return nil
}

// owner is what a UUID or cap minor belongs to: a GPU, a MIG device, or
// (gi) the GPU instance of a MIG device. Its label is made only for an
// error message.
type owner struct {
	gpu *GPU
	mig *MigDevice
	gi  bool
}

func (o owner) key() [4]int {
	if o.mig == nil {
		return [4]int{o.gpu.Index, -1, -1, 0}
	}
	if o.gi {
		return [4]int{o.gpu.Index, o.mig.GPUInstanceID, -1, 1}
	}
	return [4]int{o.gpu.Index, o.mig.GPUInstanceID, o.mig.ComputeInstanceID, 2}
}

func (o owner) String() string {
	switch {
	case o.mig == nil:
		return o.gpu.Label()
	case o.gi:
		return fmt.Sprintf("GPU instance gpu%d/gi%d", o.gpu.Minor, o.mig.GPUInstanceID)
	}
	return o.mig.Label(o.gpu)
}

// checkLegacyMigUUID checks an old-style MIG UUID (drivers before
// 470.42.01: MIG-GPU-<gpu uuid>/<gi>/<ci>) against the device it labels.
// One not in that form is left to checkUUIDs.
func checkLegacyMigUUID(g *GPU, m *MigDevice) error {
	gpu, gi, ci, ok := parseLegacyMigUUID(m.UUID)
	if !ok {
		return nil
	}
	if gi != m.GPUInstanceID || ci != m.ComputeInstanceID {
		return fmt.Errorf("MIG UUID %q does not match gpu_instance_id %d, compute_instance_id %d", m.UUID, m.GPUInstanceID, m.ComputeInstanceID)
	}
	if g.UUID != "" && gpu != g.UUID {
		return fmt.Errorf("MIG UUID %q names another GPU than %s", m.UUID, g.UUID)
	}
	return nil
}
