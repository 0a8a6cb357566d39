// Package jobenv is the job side of slurm-mig: it tells a Slurm task which
// devices it was given, by their CUDA UUIDs. It numbers the node's GPUs
// as slurmd does, reads which device has which UUID from the state file
// that gen writes, and decides from the task's environment what the
// TaskProlog prints.
package jobenv

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Device is one GPU index of a node, as slurmd numbers it: the global
// GRES index that SLURM_JOB_GPUS, SLURM_STEP_GPUS and `scontrol show job
// -d` (IDX:) name, with its device files.
type Device struct {
	Index int
	Files []string // one file, or a MultipleFiles= record's files
	Pos   string   // file:line of its gres.conf record
}

// IndexMap numbers the node's GPUs exactly as slurmd does without
// AutoDetect (Slurm's gres.c _merge_gres and gres_common.c
// common_node_config_load): for each type of the node's slurm.conf Gres=
// (gres, in the order written) it takes that type's gres.conf records in
// file order, records without NodeName= before those with it, until the
// type's count is reached; a record with more files than the count left
// is cut to its first files; records beyond it are dropped. Then, over
// the records taken, each MultipleFiles= record is one index and each
// file of a File= record is one; records without files get none.
//
// recs are the node's gres.conf records in file order (as
// slurmconf.ReadGresConf returns them); only Name=gpu records count.
func IndexMap(gres string, recs []slurmconf.ParsedRecord) ([]Device, error) {
	types, err := slurmconf.GresTypeCounts(gres, "gpu")
	if err != nil {
		return nil, err
	}
	untyped := false
	for _, t := range types {
		if t.Type == "" {
			untyped = true
		}
	}
	if untyped && len(types) > 1 {
		return nil, fmt.Errorf("Gres=%s mixes typed and untyped gpu counts; slurmd's numbering of that is not defined", gres)
	}

	// Records without NodeName= first (slurmd collects them as one
	// array, then the NodeName= lines), each group in file order.
	var pool []slurmconf.ParsedRecord
	for _, withNode := range []bool{false, true} {
		for _, r := range recs {
			if strings.EqualFold(r.Name, "gpu") && (r.Nodes != "") == withNode {
				pool = append(pool, r)
			}
		}
	}
	taken := make([]bool, len(pool))

	var devs []Device
	add := func(r slurmconf.ParsedRecord, files []string) {
		if len(r.MultipleFiles) > 0 {
			devs = append(devs, Device{Index: len(devs), Files: r.MultipleFiles, Pos: r.Pos})
			return
		}
		for _, f := range files {
			devs = append(devs, Device{Index: len(devs), Files: []string{f}, Pos: r.Pos})
		}
	}
	for _, t := range types {
		left := t.Count
		for i := range pool {
			if left <= 0 {
				break
			}
			r := pool[i]
			// Typed counts take records of that type (compared without
			// case); an untyped count takes any record.
			if taken[i] || (t.Type != "" && !strings.EqualFold(r.Type, t.Type)) {
				continue
			}
			taken[i] = true
			files, err := recordFiles(r)
			if err != nil {
				return nil, err
			}
			units := len(files) // a File= record: a unit a file
			if files == nil {
				if units, err = r.Units(); err != nil {
					return nil, fmt.Errorf("%s: %v", r.Pos, err)
				}
			}
			if units > left {
				units = left
				if len(files) > left {
					files = files[:left]
				}
			}
			left -= units
			add(r, files)
		}
	}
	return devs, nil
}

// recordFiles expands a File= record's names; a MultipleFiles= record or
// one without files gives none (MultipleFiles is one unit, kept whole).
func recordFiles(r slurmconf.ParsedRecord) ([]string, error) {
	if len(r.MultipleFiles) > 0 || r.File == "" {
		return nil, nil
	}
	files, err := slurmconf.ExpandHostlist(r.File)
	if err != nil {
		return nil, fmt.Errorf("%s: File=%s: %v", r.Pos, r.File, err)
	}
	return files, nil
}
