package slurmconf

import (
	"fmt"
	"strings"
)

// This file is the one model of how slurmd of a release reads one node:
// ReadNode takes the node's gres.conf and slurm.conf and gives its GRES
// records in slurmd's order, its GPU indices and every problem slurmd
// and slurmctld would have (GresFile.CheckNode holds the rules). env,
// jobmap, check, diff, gen, node and merge all ask it; nothing else
// numbers GPUs or merges declarations.

// GPUIndex is one index of the node's GPUs as slurmd numbers them: the
// global GRES index that SLURM_JOB_GPUS, SLURM_STEP_GPUS and `scontrol
// show job -d` (IDX:) name, with the device files slurmd gives a job
// for it.
type GPUIndex struct {
	Index int
	Type  string   // as slurmd prints it; "" for a Gres=gpu:N without type
	Files []string // one file, a MultipleFiles= record's files, or none
	Pos   string   // file:line of its gres.conf record
}

// gpuIndices numbers the GPU records as slurmd's GRES bitmap does: a
// record takes as many indices as its count, in record order; a
// MultipleFiles= record (kept whole) is one index with all its files,
// each file of a File= record one index, a record without files its
// count of indices with none.
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

// ReadNode reads node as slurmd of release v reads it (v not known: the
// newest rules, with ReleaseMatters set where an older release reads it
// otherwise): its records from the gres.conf at gresPath, its Gres= from
// the slurm.conf at slurmPath ("" for none). The error is a file that
// cannot be read, or a slurm.conf that declares the node not once (see
// ReadSlurmNode); what slurmd dies of is the NodeCheck's Fatal problem.
func ReadNode(gresPath, slurmPath, node string, v Version) (NodeCheck, error) {
	type read struct {
		f   *GresFile
		err error
	}
	// The two files are read at once: a task waits on this (env runs
	// before every task), and slurm.conf can be thousands of lines.
	done := make(chan read, 1)
	go func() {
		f, err := ReadGresFile(gresPath)
		done <- read{f, err}
	}()
	var decl *SlurmNode
	var declErr error
	if slurmPath != "" {
		decl, declErr = ReadSlurmNode(slurmPath, node)
	}
	g := <-done
	if declErr != nil {
		return NodeCheck{Node: node}, declErr
	}
	if g.err != nil {
		return NodeCheck{Node: node}, g.err
	}
	return g.f.CheckNode(node, v, decl), nil
}

// Line is a gres.conf record already read and checked (a RecordReader's),
// with its NodeName= as written and where it is.
type Line struct {
	Record GresRecord
	Nodes  string
	Pos    string // file:line
}

// ReadLines reads node from records already read (a fragment of merge)
// as slurmd of release v reads them with the slurm.conf line decl: the
// model ReadNode asks, for lines that are no file to read again.
func ReadLines(lines []Line, node string, v Version, decl *SlurmNode) NodeCheck {
	f := &GresFile{lines: make([]gresLine, 0, len(lines))}
	for _, l := range lines {
		units, err := l.Record.Units()
		f.lines = append(f.lines, gresLine{rec: ParsedRecord{GresRecord: l.Record, Nodes: l.Nodes, Pos: l.Pos},
			checked: true, units: units, checkErr: err})
	}
	return f.CheckNode(node, v, decl)
}

// ReadSlurmNode is node's NodeName= line of a slurm.conf (following
// Includes), with what it inherits from NodeName=DEFAULT (FindNode).
func ReadSlurmNode(path, node string) (*SlurmNode, error) {
	lines, err := ReadSlurmNodes(path)
	if err != nil {
		return nil, err
	}
	return FindNode(lines, path, node)
}

// FindNode is the one place that decides which NodeName= line declares
// node. A node that no line names is an error that says which names the
// lines use. A node that two lines name is the error slurmctld and slurmd
// die of ("fatal: Duplicated NodeName ... in the config file", or
// NodeHostName where both lines give the same host: tried, 22.05); a
// *FatalError, at the second line.
func FindNode(lines []SlurmNode, path, node string) (*SlurmNode, error) {
	var (
		found  *SlurmNode
		others OtherNodes
	)
	for i := range lines {
		l := &lines[i]
		ok, err := hostlistHas(l.Nodes, node)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: NodeName=: %v", l.Pos, err)
		case ok && found != nil:
			return nil, DeclaredTwice(path, node, found.Pos, l.Pos)
		case ok:
			found = l
		default:
			if err := others.note(l.Nodes, node); err != nil {
				return nil, fmt.Errorf("%s: NodeName=: %v", l.Pos, err)
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no NodeName= line names %s%s", confName(path), node, others.Said(node))
	}
	return found, nil
}

// DeclaredTwice is what slurmctld and slurmd die of where two NodeName=
// lines of path name node, at first and second.
func DeclaredTwice(path, node, first, second string) *FatalError {
	return fatalf(second, "%s is declared twice, at %s and %s; slurmctld and slurmd do not start (\"Duplicated NodeName %s in the config file\")", node, first, second, node)
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
