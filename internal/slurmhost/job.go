package slurmhost

// This file asks slurmctld which GPUs a job has on a node, through
// scontrol, and reads its answer.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// JobGPUTimeout is how long JobGPUs waits for scontrol: a Prolog that
// waits on it holds the job back.
const JobGPUTimeout = 10 * time.Second

// JobGPUs runs `scontrol show job -d -o ID` and returns the job's GPU
// indices on node (IDX: of its GRES=), sorted. An scontrol silent for
// JobGPUTimeout is killed, with its children, and that is the error.
func JobGPUs(id, node string) ([]int, error) {
	return jobGPUs(id, node, JobGPUTimeout)
}

func jobGPUs(id, node string, timeout time.Duration) ([]int, error) {
	out, err := scontrol(timeout, "scontrol show job -d "+id, "show", "job", "-d", "-o", id)
	if err != nil {
		return nil, err
	}
	return ParseJobGPUs(id, node, out)
}

// gpuIdx is one gpu entry of a GRES= word of `scontrol show job -d`:
// gpu:a100:1(IDX:3) or gpu:2(IDX:0-1,4); other GRES (shard, mps) count
// and index otherwise and are left out.
var gpuIdx = regexp.MustCompile(`(?:^|,)gpu(?::[^,()]*)*\(IDX:([^)]*)\)`)

// ParseJobGPUs reads `scontrol show job -d -o ID`: a "Nodes=HOSTLIST ...
// GRES=gpu:a100:1(IDX:3),..." group per set of nodes alike. It returns the
// GPU indices of node's group, sorted; none where no group or gpu is there.
func ParseJobGPUs(id, node, out string) ([]int, error) {
	var idx []int
	inNode := false
	for _, word := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(word, "Nodes="); ok {
			hosts, err := slurmconf.ExpandHostlist(v)
			if err != nil {
				return nil, fmt.Errorf("scontrol show job -d %s: Nodes=%s: %v", id, v, err)
			}
			inNode = slices.Contains(hosts, node)
			continue
		}
		v, ok := strings.CutPrefix(word, "GRES=")
		if !ok || !inNode {
			continue
		}
		for _, m := range gpuIdx.FindAllStringSubmatch(v, -1) {
			if m[1] == "N/A" { // a GRES without devices
				continue
			}
			list, err := parseIdx(m[1])
			if err != nil {
				return nil, fmt.Errorf("scontrol show job -d %s: GRES=%s: %v", id, v, err)
			}
			idx = append(idx, list...)
		}
		inNode = false
	}
	slices.Sort(idx)
	return slices.Compact(idx), nil
}

// parseIdx reads an IDX: list: "3", "0-1,4".
func parseIdx(s string) ([]int, error) {
	var out []int
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		first, err := strconv.Atoi(lo)
		last := first
		if err == nil && isRange {
			last, err = strconv.Atoi(hi)
		}
		if err != nil || first < 0 || last < first || last-first > 1<<16 {
			return nil, fmt.Errorf("IDX:%s: not a list of indices", s)
		}
		for i := first; i <= last; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
