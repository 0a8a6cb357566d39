package migplan

import "github.com/slurm-mig/slurm-mig/internal/model"

// Hardware is nodes declared to have the GPUs of one snapshot's node: the
// same number, models and profile tables. As long as a config takes every
// MIG-capable GPU (OwnLayout), what Make makes of it is the same for all.
type Hardware struct {
	Spec     string // how messages name the declaration
	Nodes    []string
	Snapshot *model.Node
}

// OwnLayout is the first MIG-capable GPU that no entry of p's config takes,
// whose counts are then each node's own, which a Hardware snapshot does not
// know; nil when none. It reads p.Node, so ask it before dropping that.
func (p *Plan) OwnLayout() *model.GPU {
	for i, gp := range p.GPUs {
		g := &p.Node.GPUs[i] // as it is now: no entry changed it
		if gp.Entry == nil && (g.Profiles != nil || g.MigEnabled) {
			return g
		}
	}
	return nil
}
