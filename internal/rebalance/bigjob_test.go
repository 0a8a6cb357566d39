package rebalance

import (
	"testing"
)

// A fleet of a 2-GPU node and 1-GPU nodes: gpu01 (two H100s, four
// 3g.40gb) is busy; gpu02 (one H100, whole) is idle. Job A, the oldest,
// asks three 3g.40gb of one node: only gpu01 can ever hold it (slurmctld
// accepted it for that node), and it waits for gpu01's jobs to end. Job
// B, younger, asks one 3g.40gb.
//
// Changing gpu02 to all-3g.40gb starts B at once: Slurm's backfill starts
// a younger job on a node the older one cannot use, since that does not
// delay the older job (A can never run on gpu02, whose configs give at
// most two 3g.40gb). Propose weighed each change by the jobs it starts
// "oldest first, stopping at the first that does not fit", and A never
// fits a one-GPU node: the change started nothing, and the admin saw
// "nothing to do ... 2 that no change on an idle node would start" for
// as long as A waited, every later 3g.40gb job stuck behind it. A job
// more than any eligible node holds is now unserved and holds up none.
func TestBigJobDoesNotBlockItsType(t *testing.T) {
	nodes := []Node{
		{Name: "gpu01", Current: gres("h100_3g.40gb:4"), Why: "4 GPUs in use by running jobs"},
		node("gpu02", "h100:1", ""),
	}
	js := []Job{job("A", "h100_3g.40gb", 3, 60), job("B", "h100_3g.40gb", 1, 30)}
	p := Propose(nodes, js, lim)
	check(t, p, "gpu02=all-3g.40gb[B]")
}
