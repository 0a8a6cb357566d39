package nvmlread

import (
	"fmt"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// pciDeviceID is NVML's PciDeviceId (the device id above the vendor's,
// 0x233010DE for an H100 80GB HBM3) in the form mig-parted's device-filter
// uses: its types.DeviceID builds the same number from PCI config space,
// device << 16 | vendor, and prints it as "0x%X". Zero, which NVML gives
// for no device, is none.
func pciDeviceID(id uint32) string {
	if id == 0 {
		return ""
	}
	return fmt.Sprintf("0x%X", id)
}

// ReadMigProfiles fills in each GPU's MIG profile table through lib,
// which the caller has initialised: every GPU-instance profile NVML
// offers, whether MIG is on or off, with its placements and the
// compute-instance profiles a GPU instance of it offers. A GPU without
// MIG answers NOT_SUPPORTED for every profile and has no table. Only
// snapshot needs the table, so it is a pass of its own, as the processes
// are. On an error the node is left as it was.
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

// readGPUProfiles reads one GPU's GPU-instance profiles, in NVML's profile
// index order (nvml.GPU_INSTANCE_PROFILE_*), asking for every index as
// go-nvlib's VisitMigProfiles does: the indices a GPU lacks answer
// NOT_SUPPORTED, and those the driver does not know INVALID_ARGUMENT.
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

// giProfile is one GPU-instance profile of the table, named by go-nvlib's
// MigProfile as nvidia-smi names it ("1g.10gb", "1g.10gb+me"): the slices
// and attributes from the profile index, the memory rounded up to eighths
// of the GPU's.
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

// ciSliceCounts are the compute slices of NVML's compute-instance
// profiles (nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE to _8_SLICE), smallest
// first. COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 and _7_SLICE_NVL repeat a
// count, and name the same profile.
var ciSliceCounts = []int{1, 2, 3, 4, 6, 7, 8}

// offersCI reports whether a GPU instance of g slices offers compute
// instances of c slices. NVML lists a GPU instance's compute-instance
// profiles (GpuInstance.GetComputeInstanceProfileInfo) only for a GPU
// instance that exists, and one cannot be made with MIG off, nor
// anywhere by a read-only command. So the rule is go-nvlib's
// (pkg/nvlib/device/device.go, VisitMigProfiles, which mig-parted uses to
// resolve names): c up to g, and a c smaller than g only when 2c <= g+1.
// It gives what nvidia-smi mig -lcip shows on an H100: 1, 2, 3, 4 and 7
// for a 7g instance, 1, 2 and 4 for a 4g, 1, 2 and 3 for a 3g. A GPU
// instance holds g/c of them (3 of 2c in a 7g).
func offersCI(g, c int) bool {
	return c == g || (c < g && 2*c <= g+1)
}

// migProfileName is go-nvlib's name of a GI profile index with a CI
// profile index, checked against nvidia-smi's grammar: "<g>g.<gb>gb" when
// the compute instance takes the whole GPU instance, "<c>c.<g>g.<gb>gb"
// otherwise, with the GI profile's attributes ("+me").
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
