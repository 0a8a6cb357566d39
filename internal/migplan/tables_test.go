package migplan

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// The profile tables of the lent H100 and H200 (driver 580.159.04, MIG
// off; nvidia-smi mig -lgip and -lgipp), written out by hand.

func places(size int, starts ...int) []model.Placement {
	out := make([]model.Placement, len(starts))
	for i, s := range starts {
		out[i] = model.Placement{Start: s, Size: size}
	}
	return out
}

// table is the H100's or H200's table under its own memory names: the
// 1g, 1g+me, 1g (two slices), 2g, 3g, 4g and 7g profiles.
func table(mem1, mem1x2, mem3, mem7 string) []model.GIProfile {
	ci := func(g int, mem string) []model.CIProfile {
		var out []model.CIProfile
		for c := 1; c <= g; c++ {
			if c < g && 2*c > g+1 {
				continue // no 3c of a 4g, no 5c or 6c of a 7g (go-nvlib's rule, and NVML's table)
			}
			name := strconv.Itoa(c) + "c." + strconv.Itoa(g) + "g." + mem
			if c == g {
				name = strconv.Itoa(g) + "g." + mem
			}
			out = append(out, model.CIProfile{Name: name, Slices: c, Instances: g / c})
		}
		return out
	}
	return []model.GIProfile{
		{ID: 19, Name: "1g." + mem1, Instances: 7, Slices: 1, Placements: places(1, 0, 1, 2, 3, 4, 5, 6), CIProfiles: ci(1, mem1)},
		{ID: 20, Name: "1g." + mem1 + "+me", Instances: 1, Slices: 1, Placements: places(1, 0, 1, 2, 3, 4, 5, 6), CIProfiles: ci(1, mem1+"+me")},
		{ID: 15, Name: "1g." + mem1x2, Instances: 4, Slices: 1, Placements: places(2, 0, 2, 4, 6), CIProfiles: ci(1, mem1x2)},
		{ID: 14, Name: "2g." + mem1x2, Instances: 3, Slices: 2, Placements: places(2, 0, 2, 4), CIProfiles: ci(2, mem1x2)},
		{ID: 9, Name: "3g." + mem3, Instances: 2, Slices: 3, Placements: places(4, 0, 4), CIProfiles: ci(3, mem3)},
		{ID: 5, Name: "4g." + mem3, Instances: 1, Slices: 4, Placements: places(4, 0), CIProfiles: ci(4, mem3)},
		{ID: 0, Name: "7g." + mem7, Instances: 1, Slices: 7, Placements: places(8, 0), CIProfiles: ci(7, mem7)},
	}
}

func h100(index int) model.GPU {
	return model.GPU{Index: index, Minor: index, Name: "NVIDIA H100 80GB HBM3", PCIDeviceID: "0x233010DE",
		Profiles: &model.ProfileTable{Profiles: table("10gb", "20gb", "40gb", "80gb")}}
}

func h200(index int) model.GPU {
	return model.GPU{Index: index, Minor: index, Name: "NVIDIA H200", PCIDeviceID: "0x233510DE",
		Profiles: &model.ProfileTable{Profiles: table("18gb", "35gb", "71gb", "141gb")}}
}

// TestHandTablesAreReal holds the tables written out above to the real
// ones captured in testdata/real (all but memory sizes and compute-instance
// ids, which they leave out), so that the tests that use them test the
// GPUs that exist.
func TestHandTablesAreReal(t *testing.T) {
	for _, c := range []struct {
		hand     model.GPU
		snapshot string
	}{{h100(0), "h100-snapshot-v2"}, {h200(0), "h200-snapshot-v2"}} {
		real := realGPU(t, c.snapshot, 0)
		if c.hand.Name != real.Name || c.hand.PCIDeviceID != real.PCIDeviceID {
			t.Errorf("%s: hand %s %s, real %s %s", c.snapshot, c.hand.Name, c.hand.PCIDeviceID, real.Name, real.PCIDeviceID)
		}
		byID := cmpopts.SortSlices(func(a, b model.GIProfile) bool { return a.ID < b.ID })
		ignore := cmp.Options{byID, cmpopts.IgnoreFields(model.GIProfile{}, "MemoryMiB"), cmpopts.IgnoreFields(model.CIProfile{}, "ID"),
			cmpopts.SortSlices(func(a, b model.CIProfile) bool { return a.Slices < b.Slices })}
		if diff := cmp.Diff(real.MigProfiles(), c.hand.MigProfiles(), ignore); diff != "" {
			t.Errorf("%s: hand table (-real +hand):\n%s", c.snapshot, diff)
		}
	}
}
