package capmap

import (
	"fmt"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// Resolve fills in the GI and CI cap minors a MIG device lacks, calling
// load only if one does; a device with no entry is an error (never a guess).
// Where it added minors it returns n.Check()'s error, as they may clash.
func Resolve(n *model.Node, load func() (*Map, error)) error {
	var caps *Map
	for i := range n.GPUs {
		g := &n.GPUs[i]
		for j := range g.MigDevices {
			m := &g.MigDevices[j]
			if m.GICapMinor != nil && m.CICapMinor != nil {
				continue
			}
			if caps == nil {
				var err error
				if caps, err = load(); err != nil {
					return fmt.Errorf("cap minors for %s: %w", m.Label(g), err)
				}
			}
			gpu, gi, ci := uint32(g.Minor), uint32(m.GPUInstanceID), uint32(m.ComputeInstanceID)
			if m.GICapMinor == nil {
				minor, ok := caps.GI(gpu, gi)
				if !ok {
					return fmt.Errorf("%s: %s has no entry gpu%d/gi%d/access", m.Label(g), caps.Source(), gpu, gi)
				}
				m.GICapMinor = &minor
			}
			if m.CICapMinor == nil {
				minor, ok := caps.CI(gpu, gi, ci)
				if !ok {
					return fmt.Errorf("%s: %s has no entry gpu%d/gi%d/ci%d/access", m.Label(g), caps.Source(), gpu, gi, ci)
				}
				m.CICapMinor = &minor
			}
		}
	}
	if caps == nil {
		return nil
	}
	return n.Check()
}
