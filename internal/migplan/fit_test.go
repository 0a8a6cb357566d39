package migplan

import (
	"errors"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// fits resolves and fits devices on g, as Make does for an entry.
func fits(g model.GPU, devices map[string]int) error {
	reqs, err := resolve(&g, devices)
	if err != nil {
		return err
	}
	return fit(reqs)
}

func TestFit(t *testing.T) {
	for _, c := range []struct {
		name    string
		gpu     model.GPU
		devices map[string]int
		refused string // "" when it fits; else what the refusal says
	}{
		{"all-1g.10gb", h100(0), map[string]int{"1g.10gb": 7}, ""},
		{"eight 1g.10gb", h100(0), map[string]int{"1g.10gb": 8}, "1g.10gb: 8 asked, and the GPU holds at most 7"},
		{"all-1g.20gb", h100(0), map[string]int{"1g.20gb": 4}, ""},
		{"all-2g.20gb", h100(0), map[string]int{"2g.20gb": 3}, ""},
		{"all-3g.40gb", h100(0), map[string]int{"3g.40gb": 2}, ""},
		{"three 3g.40gb", h100(0), map[string]int{"3g.40gb": 3}, "3g.40gb: 3 asked, and the GPU holds at most 2"},
		{"all-4g.40gb", h100(0), map[string]int{"4g.40gb": 1}, ""},
		{"all-7g.80gb", h100(0), map[string]int{"7g.80gb": 1}, ""},
		// NVIDIA's all-balanced for the H100: 2x1g, 1x2g, 1x3g.
		{"all-balanced", h100(0), map[string]int{"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, ""},
		{"balanced on H200", h200(0), map[string]int{"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}, ""},
		{"3g + 4g", h100(0), map[string]int{"3g.40gb": 1, "4g.40gb": 1}, ""},
		// 8 memory slices, yet the second 1g has no start left: the 4g
		// takes 0-3, the 2g 4-5, one 1g 6, and 7 starts no 1g.
		{"4g + 2g + 2x1g", h100(0), map[string]int{"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2},
			"4g.40gb + 2g.20gb + 2x1g.10gb: no set of placements without overlap holds them all"},
		{"4g + 2g + 1g", h100(0), map[string]int{"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}, ""},
		{"4g + 3x1g", h100(0), map[string]int{"4g.40gb": 1, "1g.10gb": 3}, ""},
		{"4g + 4x1g", h100(0), map[string]int{"4g.40gb": 1, "1g.10gb": 4},
			"4g.40gb + 4x1g.10gb: no set of placements without overlap holds them all"},
		{"7g + 1g", h100(0), map[string]int{"7g.80gb": 1, "1g.10gb": 1},
			"7g.80gb + 1g.10gb: no set of placements without overlap holds them all"},
		{"1g.10gb+me with six 1g.10gb", h100(0), map[string]int{"1g.10gb+me": 1, "1g.10gb": 6}, ""},
		{"two 1g.10gb+me", h100(0), map[string]int{"1g.10gb+me": 2}, "1g.10gb+me: 2 asked, and the GPU holds at most 1"},
		{"1g.10gb+me with seven 1g.10gb", h100(0), map[string]int{"1g.10gb+me": 1, "1g.10gb": 7},
			"7x1g.10gb + 1g.10gb+me: no set of placements without overlap holds them all"},
		{"1g.20gb with 3g", h100(0), map[string]int{"1g.20gb": 2, "3g.40gb": 1}, ""},
		{"three 1g.20gb with 3g", h100(0), map[string]int{"1g.20gb": 3, "3g.40gb": 1},
			"3g.40gb + 3x1g.20gb: no set of placements without overlap holds them all"},
		// Compute instances share the GI mig-parted made for the one
		// before while they fit.
		{"3x1c.3g.40gb in one GI", h100(0), map[string]int{"1c.3g.40gb": 3}, ""},
		{"6x1c.3g.40gb in two GIs", h100(0), map[string]int{"1c.3g.40gb": 6}, ""},
		{"7x1c.3g.40gb", h100(0), map[string]int{"1c.3g.40gb": 7}, "1c.3g.40gb: 7 asked, and the GPU holds at most 6"},
		{"2c and 1c share 3g GIs", h100(0), map[string]int{"2c.3g.40gb": 2, "1c.3g.40gb": 2}, ""},
		{"3g.40gb and 1c.3g.40gb", h100(0), map[string]int{"3g.40gb": 1, "1c.3g.40gb": 3}, ""},
		{"two 3g.40gb and 1c.3g.40gb", h100(0), map[string]int{"3g.40gb": 2, "1c.3g.40gb": 1},
			"2x3g.40gb + 1c.3g.40gb: takes 7 compute slices, and 2 3g.40gb GPU instances have 6"},
		{"1c.7g.80gb x7", h100(0), map[string]int{"1c.7g.80gb": 7}, ""},
		{"4c + 3c of 7g", h100(0), map[string]int{"4c.7g.80gb": 1, "3c.7g.80gb": 1}, ""},
		{"A100 name on an H100", h100(0), map[string]int{"1g.5gb": 7}, "1g.5gb: this GPU has no such profile (it has 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)"},
		{"H100 name on an H200", h200(0), map[string]int{"3g.40gb": 1}, "3g.40gb: this GPU has no such profile"},
		{"no 5c of a 7g", h100(0), map[string]int{"5c.7g.80gb": 1}, "5c.7g.80gb: a 7g.80gb GPU instance has no compute instance of 5 slices"},
		// A zero count asks nothing of the GPU; whether mig-parted can
		// read the name at all is the node's question (unread, TestMixes).
		{"a zero count asks nothing of the GPU", h100(0), map[string]int{"1g.5gb": 0, "7g.80gb": 1}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := fits(c.gpu, c.devices)
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused != "" && err == nil:
				t.Fatalf("fits; want refused: %s", c.refused)
			case c.refused != "" && !strings.HasPrefix(err.Error(), c.refused):
				t.Fatalf("refused:\n %v\nwant:\n %s", err, c.refused)
			}
			var unfit *Unfit
			if err != nil && !errors.As(err, &unfit) {
				t.Fatalf("%v is not an *Unfit naming the profile", err)
			}
		})
	}
}

// TestPlaceOrder: a 4g with placement {0} and a 3g with {0,4} fit only as
// 4g at 0 and 3g at 4, whichever comes first in the search.
func TestPlaceOrder(t *testing.T) {
	g := h100(0)
	g4, g3 := giProfile(&g, "4g.40gb"), giProfile(&g, "3g.40gb")
	for _, order := range [][]*model.GIProfile{{g4, g3}, {g3, g4}} {
		if !place(order, 0, 0, -1) {
			t.Errorf("%s then %s: no placement found", order[0].Name, order[1].Name)
		}
	}
	if place([]*model.GIProfile{g4, g3, g3}, 0, 0, -1) {
		t.Error("4g and two 3g placed on 8 slices")
	}
}
