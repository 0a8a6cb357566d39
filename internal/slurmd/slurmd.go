// Package slurmd is the one model of how slurmd of a release reads one
// node: ReadNode takes the node's gres.conf and slurm.conf and gives its
// GRES records in slurmd's order, its GPU indices and every problem slurmd
// and slurmctld would have (CheckNode holds the rules). Nothing else
// numbers GPUs or merges declarations; Slurm's syntax is slurmconf's.
package slurmd

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// GPUIndex is one of the node's GPU indices as slurmd numbers them: the
// global GRES index that SLURM_JOB_GPUS, SLURM_STEP_GPUS and `scontrol show
// job -d` (IDX:) name, with the device files slurmd gives a job for it.
type GPUIndex struct {
	Index int
	Type  string   // as slurmd prints it; "" for a Gres=gpu:N without type
	Files []string // one file, a MultipleFiles= record's files, or none
	Pos   string   // file:line of its gres.conf record
}

// gpuIndices numbers GPU records as slurmd's GRES bitmap does, in record
// order: a MultipleFiles= record is one index with all its files, a File=
// record one per file, and a record without files its count, with none.
func gpuIndices(recs []SlurmdRecord) []GPUIndex {
	var out []GPUIndex
	for _, r := range recs {
		if r.Name != "gpu" {
			continue
		}
		switch {
		case r.multiple && len(r.Files) > 1:
			out = append(out, GPUIndex{Index: len(out), Type: r.Type, Files: r.Files, Pos: r.Pos})
		case len(r.Files) > 0:
			for _, f := range r.Files {
				out = append(out, GPUIndex{Index: len(out), Type: r.Type, Files: []string{f}, Pos: r.Pos})
			}
		default:
			for range r.Count {
				out = append(out, GPUIndex{Index: len(out), Type: r.Type, Pos: r.Pos})
			}
		}
	}
	return out
}

// ReadNode reads node from gresPath and slurmPath ("" for none) as slurmd
// of release v does (unknown: the newest, see ReleaseMatters). The error is
// an unreadable file or a node not declared once, never what slurmd dies of.
func ReadNode(gresPath, slurmPath, node string, v slurmconf.Version) (NodeCheck, error) {
	type read struct {
		f   *slurmconf.GresFile
		err error
	}
	// The two files are read at once: a task waits on this (env runs
	// before every task), and slurm.conf can be thousands of lines.
	done := make(chan read, 1)
	go func() {
		f, err := slurmconf.ReadGresFile(gresPath)
		done <- read{f, err}
	}()
	var decl *slurmconf.SlurmNode
	var declErr error
	if slurmPath != "" {
		decl, declErr = slurmconf.ReadSlurmNode(slurmPath, node)
	}
	g := <-done
	if declErr != nil {
		return NodeCheck{Node: node}, declErr
	}
	if g.err != nil {
		return NodeCheck{Node: node}, g.err
	}
	return CheckNode(g.f, node, v, decl), nil
}

// Line is a gres.conf record already read and checked (a RecordReader's),
// with its NodeName= as written and where it is.
type Line struct {
	Record slurmconf.GresRecord
	Nodes  string
	Pos    string // file:line
}

// ReadLines reads node from records already read (a fragment of merge)
// as slurmd of release v reads them with the slurm.conf line decl: the
// model ReadNode asks, for lines that are no file to read again.
func ReadLines(lines []Line, node string, v slurmconf.Version, decl *slurmconf.SlurmNode) NodeCheck {
	recs := make([]slurmconf.ParsedRecord, len(lines))
	for i, l := range lines {
		recs[i] = slurmconf.ParsedRecord{GresRecord: l.Record, Nodes: l.Nodes, Pos: l.Pos}
	}
	return CheckNode(slurmconf.GresFileOf(recs), node, v, decl)
}

// Devices says the GPU indices in a line each: "0 a100_1g.10gb
// /dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,...", for messages and
// tests that compare two readings.
func Devices(gpus []GPUIndex) []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = fmt.Sprintf("%d %s %s", g.Index, g.Type, strings.Join(g.Files, ","))
	}
	return out
}
