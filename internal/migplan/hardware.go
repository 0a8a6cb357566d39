package migplan

import "github.com/slurm-mig/slurm-mig/internal/model"

// Hardware is nodes declared to have the GPUs of one snapshot's node: the
// same number, models and profile tables. What Make makes of a config
// then depends on nothing else of a node, as long as the config's
// entries take every MIG-capable GPU (OwnLayout), so one snapshot serves
// a whole rack instead of one a node.
type Hardware struct {
	Spec     string // how messages name the declaration
	Nodes    []string
	Snapshot *model.Node
}

// OwnLayout is the first GPU that p leaves in the node's own layout: a
// GPU that could have MIG devices and that no entry of the config takes.
// Its counts are then each node's own, which a snapshot standing for
// several nodes (Hardware) does not know. A GPU without MIG is whole on
// every node, and is no such GPU. Nil when there is none. It reads
// p.Node, so it is asked before a caller drops that.
func (p *Plan) OwnLayout() *model.GPU {
	for i, gp := range p.GPUs {
		g := &p.Node.GPUs[i] // as it is now: no entry changed it
		if gp.Entry == nil && (g.Profiles != nil || g.MigEnabled) {
			return g
		}
	}
	return nil
}
