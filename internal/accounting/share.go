// Package accounting works out, as pure functions, the slurm.conf lines that
// make Slurm bill a MIG device by its share of its GPU times the GPU's
// weight: AccountingStorageTRES with every GPU type, and each partition's
// TRESBillingWeights; Check says what a site's lines leave out. Slurm counts
// a typed job under gres/gpu and gres/gpu:<type>, an untyped one under
// gres/gpu only, so GRES/gpu weighs the smallest billing of a partition's
// types and each type the rest of its own: never twice, never nothing. Under
// PriorityFlags=MAX_TRES each type weighs its whole billing instead.
package accounting

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// Basis is what a MIG device's share of its GPU is counted in.
type Basis string

const (
	// Compute counts compute slices: the g of 1g.10gb of the GPU's most
	// (7 on an A100 or H100). Seven 1g.10gb bill one GPU.
	Compute Basis = "compute"
	// Memory counts memory slices, the units of the GPU's placements (8
	// on an A100 or H100): a 1g.10gb is 1/8, a 1g.20gb 2/8.
	Memory Basis = "memory"
)

// ParseBasis reads a basis by its name.
func ParseBasis(s string) (Basis, error) {
	switch b := Basis(s); b {
	case Compute, Memory:
		return b, nil
	}
	return "", fmt.Errorf("unknown share %q (want compute or memory)", s)
}

// Type is one gpu GRES type and its share of its GPU.
type Type struct {
	Name string // the GRES type, as Gres= has it: a100_1g.10gb
	// Model is the type the GPU itself has when whole (a100): what a
	// weight per model is looked up by.
	Model   string
	Compute *big.Rat // share of the GPU's compute slices
	Memory  *big.Rat // share of the GPU's memory slices
}

// Share is the type's share by basis b.
func (t Type) Share(b Basis) *big.Rat {
	if b == Memory {
		return t.Memory
	}
	return t.Compute
}

// NodeTypes are the types of a node's devices (gresgen.DeviceTypes), each
// once, in the order first met, with their shares: a whole GPU is all of
// itself, a MIG device its profile's share of its GPU's profile table.
func NodeTypes(n *model.Node, devs []gresgen.DeviceType) ([]Type, error) {
	var out []Type
	seen := map[string]int{}
	for _, d := range devs {
		t := Type{Name: d.Type, Model: d.Model, Compute: big.NewRat(1, 1), Memory: big.NewRat(1, 1)}
		if d.Mig != nil {
			var err error
			if t.Compute, t.Memory, err = MigShare(d.GPU, d.Mig.Profile); err != nil {
				where := d.GPU.Label()
				if n.Snapshot != "" {
					where = n.Snapshot + ": " + where
				}
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
		if i, ok := seen[t.Name]; ok {
			if !same(out[i], t) {
				return nil, advice.Wrap(fmt.Errorf("type %s is %s of a %s GPU and %s of a %s one on this node",
					t.Name, shareWords(out[i]), out[i].Model, shareWords(t), t.Model), advice.TypeMap)
			}
			continue
		}
		seen[t.Name] = len(out)
		out = append(out, t)
	}
	return out, nil
}

func same(a, b Type) bool {
	return a.Model == b.Model && a.Compute.Cmp(b.Compute) == 0 && a.Memory.Cmp(b.Memory) == 0
}

func shareWords(t Type) string {
	return fmt.Sprintf("compute %s, memory %s", t.Compute.RatString(), t.Memory.RatString())
}

// ciProfile splits a compute-instance profile (1c.3g.40gb) into its
// compute slices and its GPU instance's profile (3g.40gb).
var ciProfile = regexp.MustCompile(`^([0-9]+)c\.(.+)$`)

// MigShare is a MIG device's compute and memory share of its GPU, by the
// profile table (an error without one): a GI's slices over the most of any
// profile or placement, and a CI c/g of its GI's share in both.
func MigShare(g *model.GPU, profile string) (compute, memory *big.Rat, err error) {
	if g.Profiles == nil {
		return nil, nil, advice.Hinted(fmt.Errorf("no MIG profile table to size %s by (a snapshot of schema 1?)", profile), "; take it again with this slurm-mig's snapshot")
	}
	gi, ci := profile, 0
	if m := ciProfile.FindStringSubmatch(profile); m != nil {
		gi = m[2]
		ci, _ = strconv.Atoi(m[1])
	}
	var found *model.GIProfile
	maxSlices, maxMem := 0, 0
	for i := range g.Profiles.Profiles {
		p := &g.Profiles.Profiles[i]
		maxSlices = max(maxSlices, p.Slices)
		for _, pl := range p.Placements {
			maxMem = max(maxMem, pl.Size)
		}
		if p.Name == gi {
			found = p
		}
	}
	if found == nil {
		return nil, nil, fmt.Errorf("profile %s is not in the GPU's MIG profile table", gi)
	}
	if found.Slices <= 0 || len(found.Placements) == 0 || found.Placements[0].Size <= 0 || maxSlices <= 0 || maxMem <= 0 {
		return nil, nil, fmt.Errorf("profile %s has no compute slices or placements in the GPU's MIG profile table", gi)
	}
	compute = big.NewRat(int64(found.Slices), int64(maxSlices))
	memory = big.NewRat(int64(found.Placements[0].Size), int64(maxMem))
	if ci > 0 {
		if ci > found.Slices {
			return nil, nil, fmt.Errorf("compute instance %s takes more compute slices than its GPU instance %s has", profile, gi)
		}
		part := big.NewRat(int64(ci), int64(found.Slices))
		compute.Mul(compute, part)
		memory.Mul(memory, part)
	}
	return compute, memory, nil
}
