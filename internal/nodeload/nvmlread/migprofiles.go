package nvmlread

import (
	"fmt"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// pciDeviceID is NVML's PciDeviceId as mig-parted's device-filter prints
// it (device << 16 | vendor, "0x%X": 0x233010DE for an H100 80GB HBM3);
// zero is none.
func pciDeviceID(id uint32) string {
	if id == 0 {
		return ""
	}
	return fmt.Sprintf("0x%X", id)
}

// ReadMigProfiles fills in each GPU's MIG profile table through lib (with
// MIG on or off; a GPU without MIG has none), a pass of its own for
// snapshot; on an error the node is left as it was.
func ReadMigProfiles(lib nvml.Interface, node *model.Node) error {
	nvlib := device.New(lib)
	tables := make([][]model.GIProfile, len(node.GPUs))
	for i := range node.GPUs {
		gpu := &node.GPUs[i]
		dev, ret := lib.DeviceGetHandleByIndex(gpu.Index)
		if ret != nvml.SUCCESS {
			return nvmlError(fmt.Sprintf("%s: getting its handle", gpu.Label()), ret)
		}
		var err error
		if tables[i], err = readGPUProfiles(nvlib, gpu, dev); err != nil {
			return err
		}
	}
	var interned model.Tables
	for i := range node.GPUs {
		node.GPUs[i].Profiles = interned.Intern(tables[i])
	}
	return nil
}

// readGPUProfiles reads one GPU's GPU-instance profiles in NVML's index
// order, asking every index as go-nvlib's VisitMigProfiles does.
func readGPUProfiles(nvlib device.Interface, gpu *model.GPU, dev nvml.Device) ([]model.GIProfile, error) {
	var table []model.GIProfile
	for index := 0; index < nvml.GPU_INSTANCE_PROFILE_COUNT; index++ {
		info, ret := dev.GetGpuInstanceProfileInfo(index)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("%s: reading GPU instance profile %d", gpu.Label(), index), ret)
		}
		// The memory size is asked only now: a GPU without MIG never
		// gets here.
		if table == nil {
			table = []model.GIProfile{}
		}
		mem, ret := dev.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("%s: reading its memory size", gpu.Label()), ret)
		}
		placements, ret := dev.GetGpuInstancePossiblePlacements(&info)
		if ret != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("%s: reading the placements of GPU instance profile %d", gpu.Label(), info.Id), ret)
		}
		p, err := giProfile(nvlib, index, info, placements, mem.Total)
		if err != nil {
			return nil, fmt.Errorf("%s: GPU instance profile %d: %w", gpu.Label(), info.Id, err)
		}
		table = append(table, p)
	}
	return table, nil
}

// giProfile is one GPU-instance profile, named as nvidia-smi names it
// (go-nvlib's MigProfile), its memory rounded up to eighths of the GPU's.
func giProfile(nvlib device.Interface, index int, info nvml.GpuInstanceProfileInfo, placements []nvml.GpuInstancePlacement, gpuMemoryBytes uint64) (model.GIProfile, error) {
	whole, ok := ciProfileIndex(info.SliceCount)
	if !ok {
		return model.GIProfile{}, fmt.Errorf("no compute instance profile has its %d slices", info.SliceCount)
	}
	name, err := migProfileName(nvlib, index, whole, info.MemorySizeMB, gpuMemoryBytes)
	if err != nil {
		return model.GIProfile{}, err
	}
	p := model.GIProfile{ID: int(info.Id), Name: name, Instances: int(info.InstanceCount), MemoryMiB: info.MemorySizeMB,
		Slices: int(info.SliceCount), Placements: []model.Placement{}}
	for _, pl := range placements {
		p.Placements = append(p.Placements, model.Placement{Start: int(pl.Start), Size: int(pl.Size)})
	}
	for _, c := range ciSliceCounts {
		if !offersCI(int(info.SliceCount), c) {
			continue
		}
		ci, _ := ciProfileIndex(uint32(c))
		ciName, err := migProfileName(nvlib, index, ci, info.MemorySizeMB, gpuMemoryBytes)
		if err != nil {
			return model.GIProfile{}, err
		}
		p.CIProfiles = append(p.CIProfiles, model.CIProfile{ID: ci, Name: ciName, Slices: c, Instances: int(info.SliceCount) / c})
	}
	return p, nil
}

// ciSliceCounts are the compute slices of NVML's compute-instance profiles,
// smallest first (the _REV1 and _NVL variants repeat a count).
var ciSliceCounts = []int{1, 2, 3, 4, 6, 7, 8}

// offersCI reports whether a g-slice GPU instance offers c-slice compute
// instances, by go-nvlib's rule (NVML says so only of an existing instance):
// c <= g, and c < g only when 2c <= g+1, as nvidia-smi mig -lcip shows.
func offersCI(g, c int) bool {
	return c == g || (c < g && 2*c <= g+1)
}

// migProfileName is go-nvlib's name of a GI and CI profile index, checked
// against nvidia-smi's grammar: "<g>g.<gb>gb" or "<c>c.<g>g.<gb>gb", +attributes.
func migProfileName(nvlib device.Interface, giIndex, ciIndex int, memoryMiB, gpuMemoryBytes uint64) (string, error) {
	p, err := nvlib.NewMigProfile(giIndex, ciIndex, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, memoryMiB, gpuMemoryBytes)
	if err != nil {
		return "", err
	}
	name := p.String()
	if err := model.ValidProfile(name); err != nil {
		return "", err
	}
	return name, nil
}
