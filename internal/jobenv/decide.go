package jobenv

import (
	"fmt"
	"strconv"
	"strings"
)

// Request is what a task's environment asks of env: nothing (Leave), or
// the UUIDs of the devices at Indices, in that order.
type Request struct {
	Leave   bool
	Node    string // SLURMD_NODENAME
	From    string // the variable the indices come from
	Indices []int
	// Narrowed says Slurm bound the task to part of the step's GPUs
	// (--gpu-bind, --gpus-per-task): fewer indices than
	// SLURM_GPUS_ON_NODE, the step's count.
	Narrowed bool
}

// Decide reads the task's global GRES indices from SLURM_STEP_GPUS, or
// SLURM_JOB_GPUS in the batch step, never CUDA_VISIBLE_DEVICES (maybe local).
// No GPUs, or UUIDs there: left alone; a bad list or no SLURMD_NODENAME errs.
func Decide(lookup func(string) (string, bool)) (Request, error) {
	// Slurm never sets these empty; an empty one is taken for unset.
	getenv := func(k string) (string, bool) {
		v, ok := lookup(k)
		return v, ok && v != ""
	}
	if cvd, ok := getenv("CUDA_VISIBLE_DEVICES"); ok && hasUUID(cvd) {
		return Request{Leave: true}, nil // CUDA_VISIBLE_DEVICES already holds UUIDs
	}
	from := "SLURM_STEP_GPUS"
	list, ok := getenv(from)
	if !ok {
		if !isBatchStep(getenv) || !hasGPUEnv(getenv) {
			return Request{Leave: true}, nil // the step has no GPUs
		}
		from = "SLURM_JOB_GPUS"
		if list, ok = getenv(from); !ok {
			return Request{Leave: true}, nil // the job has no GPUs
		}
	}
	indices, err := ParseIndices(list)
	if err != nil {
		return Request{}, fmt.Errorf("%s=%s: %v", from, list, err)
	}
	if len(indices) == 0 {
		return Request{Leave: true}, nil // the list is empty
	}
	node, _ := getenv("SLURMD_NODENAME")
	if node == "" {
		return Request{}, fmt.Errorf("%s is set but SLURMD_NODENAME is not: not a Slurm task?", from)
	}
	narrowed := false
	if on, ok := getenv("SLURM_GPUS_ON_NODE"); ok {
		n, err := strconv.Atoi(on)
		narrowed = err == nil && n > len(indices)
	}
	return Request{Node: node, From: from, Indices: indices, Narrowed: narrowed}, nil
}

// isBatchStep reports whether the task is a batch script: Slurm before 26.05
// sets SLURM_STEP_ID only for numbered steps (env.c setup_env), so the batch
// step and salloc's interactive step have none.
func isBatchStep(getenv func(string) (string, bool)) bool {
	id, ok := getenv("SLURM_STEP_ID")
	if !ok {
		id, ok = getenv("SLURM_STEPID")
	}
	// 26.05 sets it in the batch step too, to the batch script's step id
	// (SLURM_BATCH_SCRIPT, printed as -5); numbered steps are 0 and up.
	return !ok || strings.HasPrefix(id, "-")
}

// hasGPUEnv reports whether Slurm set this step's GPU variables. It sets
// SLURM_GPUS_ON_NODE and (by default) CUDA_VISIBLE_DEVICES in a step with
// GPUs and unsets both in one without, which may inherit SLURM_JOB_GPUS.
func hasGPUEnv(getenv func(string) (string, bool)) bool {
	_, on := getenv("SLURM_GPUS_ON_NODE")
	_, cvd := getenv("CUDA_VISIBLE_DEVICES")
	return on || cvd
}

// hasUUID reports whether a CUDA_VISIBLE_DEVICES value names a device by
// UUID (GPU-..., MIG-...), as Slurm writes a record's unique id.
func hasUUID(v string) bool {
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if strings.HasPrefix(f, "GPU-") || strings.HasPrefix(f, "MIG-") {
			return true
		}
	}
	return false
}

// maxIndex bounds a GPU index: Slurm keeps them in a bitmap of the
// node's GPUs, a few hundred at most.
const maxIndex = 1 << 16

// ParseIndices reads Slurm's list of GRES indices: decimal numbers
// separated by commas ("2,3"), each once. Empty is no index.
func ParseIndices(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n >= maxIndex || f != strconv.Itoa(n) {
			return nil, fmt.Errorf("%q is not a GPU index", f)
		}
		if seen[n] {
			return nil, fmt.Errorf("index %d given twice", n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}
