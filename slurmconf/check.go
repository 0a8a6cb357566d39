package slurmconf

import (
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/cpulist"
)

// SlurmdRecord is one record as `slurmd -G` prints it once it has read
// gres.conf for a node: one device (a file of File=, or a MultipleFiles=
// record with all its files), or a count of a GRES without files.
type SlurmdRecord struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	Count uint64   `json:"count"`
	Files []string `json:"files"`
	Cores string   `json:"cores"`
	Links string   `json:"links"`
	Flags string   `json:"flags"`
	Pos   string   `json:"-"` // file:line of the record it came from
}

// NodeCheck is what slurmd of one release makes of a node's gres.conf
// lines, and what slurmctld of its slurm.conf line: the records slurmd
// -G prints, in its order, and every problem, each with its severity.
// A fatal problem comes last: slurmd reads no further.
type NodeCheck struct {
	Node     string
	Records  []SlurmdRecord
	Problems []Problem
}

// Fatal reports whether slurmd dies on the node's config.
func (c *NodeCheck) Fatal() bool {
	return len(c.Problems) > 0 && c.Problems[len(c.Problems)-1].Severity == Fatal
}

// Releases where what slurmd reads of gres.conf changed (docs/check.md).
var (
	// autoDetectNvidiaSince: AutoDetect=nvidia (the nvidia gpu plugin,
	// without NVML) is a value slurmd knows.
	autoDetectNvidiaSince = Version{24, 11, -1}
	// autoDetectLoggedSince: slurmd logs an AutoDetect= value it does
	// not know; 20.11 ignores it without a word (tried; 21.08 not).
	autoDetectLoggedSince = Version{21, 8, -1}
	// autoDetectOneAPISince: AutoDetect=oneapi.
	autoDetectOneAPISince = Version{22, 5, -1}
	// multipleFilesKeptSince: a MultipleFiles= record beside mps or
	// shard lines stays one GPU ("Do not split GRES with MultipleFiles",
	// 23.02.7); before, slurmd splits it into one GPU per file.
	multipleFilesKeptSince = Version{23, 2, 7}
)

// beforeMicro is Version.Before with micro releases counted; a release
// given as X.Y alone is taken as its first, X.Y.0.
func beforeMicro(v, r Version) bool {
	if !v.Known() {
		return false
	}
	if v.Major != r.Major || v.Minor != r.Minor {
		return v.Before(r)
	}
	return max(v.Micro, 0) < r.Micro
}

// CheckNode reads the file for node as slurmd of release v would (v not
// known: the newest rules), with its slurm.conf line decl (nil: none
// given, and the records are taken as slurm.conf had declared them).
func (f *GresFile) CheckNode(node string, v Version, decl *SlurmNode) NodeCheck {
	out := NodeCheck{Node: node}
	conf, err := f.Node(node)
	out.Problems = append(out.Problems, conf.Problems...)
	if err == nil {
		err = conf.checkNode()
	}
	if err != nil {
		out.Problems = append(out.Problems, asFatal(err).Problem)
		return out
	}
	checkAutoDetect(&out, conf, v)
	recs := slurmdRecords(&out, conf, v, decl)
	if decl != nil {
		checkCores(&out, conf, decl)
		checkCounts(&out, recs, decl)
	}
	out.Records = recs
	return out
}

// checkAutoDetect: slurmd logs "unknown autodetect flag" for a value it
// does not know (it looks for each known word in the value) and goes on
// as if none were given.
func checkAutoDetect(out *NodeCheck, conf *GresConf, v Version) {
	if conf.AutoDetect == "" || v.Before(autoDetectLoggedSince) {
		return
	}
	val := strings.ToLower(conf.AutoDetect)
	known := []string{"nvml", "rsmi", "off"}
	if !v.Before(autoDetectOneAPISince) {
		known = append(known, "oneapi")
	}
	if !v.Before(autoDetectNvidiaSince) {
		known = append(known, "nvidia")
	}
	for _, k := range known {
		if strings.Contains(val, k) {
			return
		}
	}
	out.Problems = append(out.Problems, Problem{Pos: conf.AutoDetectPos, Severity: Error,
		Message: fmt.Sprintf("AutoDetect=%s: slurmd %s logs \"unknown autodetect flag\" and ignores it (it knows %s)", conf.AutoDetect, v, strings.Join(known, ", "))})
}

// slurmdRecords are the node's records as slurmd -G prints them: records
// for every node before the node's own (slurmd reads them in that order),
// each file of File= one record, a MultipleFiles= record one (split per
// file before 23.02.7 where mps or shard lines are beside it), GPU records
// without files dropped; with a slurm.conf line, the GPUs in the order of
// its Gres= types, as many of each as it declares.
func slurmdRecords(out *NodeCheck, conf *GresConf, v Version, decl *SlurmNode) []SlurmdRecord {
	// slurmd splits MultipleFiles= records where a shared GRES is
	// configured: in slurm.conf's GresTypes=, or, without slurm.conf,
	// where the node has mps or shard lines.
	shared := false
	if decl != nil {
		for _, t := range strings.Split(decl.GresTypes, ",") {
			shared = shared || SharingGres(strings.TrimSpace(t))
		}
	} else {
		for i := range conf.Records {
			shared = shared || SharingGres(conf.Records[i].Name)
		}
	}
	split := shared && beforeMicro(v, multipleFilesKeptSince)
	var gpus, others []SlurmdRecord
	for pass := 0; pass < 2; pass++ {
		for i := range conf.Records {
			r := &conf.Records[i]
			if (r.Nodes == "") != (pass == 0) {
				continue
			}
			base := SlurmdRecord{Name: r.Name, Type: r.Type, Cores: r.Cores, Links: r.Links, Flags: r.Flags, Pos: r.Pos}
			isGPU := strings.EqualFold(r.Name, "gpu")
			var files [][]string
			switch {
			case len(r.MultipleFiles) > 0 && split:
				out.Problems = append(out.Problems, Problem{Pos: r.Pos, Severity: Error,
					Message: fmt.Sprintf("MultipleFiles= where mps or shard is configured: slurmd %s splits the record into %d GPUs, one per file (kept one from %s)", v, len(r.MultipleFiles), multipleFilesKeptSince)})
				files = [][]string{r.MultipleFiles}
			case len(r.MultipleFiles) > 0:
				files = [][]string{r.MultipleFiles}
			case r.File != "":
				names, _ := ExpandHostlist(r.File) // checked when read
				for _, f := range names {
					files = append(files, []string{f})
				}
			}
			if files == nil {
				if isGPU {
					out.Problems = append(out.Problems, Problem{Pos: r.Pos, Severity: Error,
						Message: "a GPU record without File=: slurmd drops it (\"SHARING configuration lacks File specification\")"})
					continue
				}
				rec := base
				rec.Files = []string{}
				rec.Count = r.Count
				if rec.Count == 0 {
					rec.Count = 1
				}
				others = append(others, rec)
				continue
			}
			for _, fs := range files {
				rec := base
				rec.Count, rec.Files = 1, fs
				if isGPU {
					gpus = append(gpus, rec)
				} else {
					others = append(others, rec)
				}
			}
		}
	}
	if decl != nil {
		gpus = mergeDeclared(gpus, decl)
	}
	if split {
		// After the merge: each file of a MultipleFiles= record one GPU.
		var each []SlurmdRecord
		for _, g := range gpus {
			for _, f := range g.Files {
				one := g
				one.Files = []string{f}
				each = append(each, one)
			}
		}
		gpus = each
	}
	return append(gpus, others...)
}

// mergeDeclared orders the GPU records as slurmd merges them with the
// node's slurm.conf Gres=: type by type in its order, each type's records
// (compared without case) as many as it declares; a Gres=gpu:N without a
// type takes every GPU, which slurmd then prints without a type.
func mergeDeclared(gpus []SlurmdRecord, decl *SlurmNode) []SlurmdRecord {
	counts, err := GresTypeCounts(decl.Gres, "gpu")
	if err != nil || len(counts) == 0 {
		return nil
	}
	var out []SlurmdRecord
	for _, c := range counts {
		n := 0
		for _, g := range gpus {
			if n == c.Count {
				break
			}
			if c.Type == "" {
				g.Type = ""
			} else if !strings.EqualFold(g.Type, c.Type) {
				continue
			}
			out = append(out, g)
			n++
		}
	}
	return out
}

// checkCores: slurmd logs "Invalid GRES data for gpu, Cores=..." for
// cores the node does not have, and keeps the record.
func checkCores(out *NodeCheck, conf *GresConf, decl *SlurmNode) {
	cores := decl.Cores()
	if cores <= 0 {
		return
	}
	for i := range conf.Records {
		r := &conf.Records[i]
		if r.Cores == "" {
			continue
		}
		ids, err := cpulist.Parse(strings.NewReplacer("[", "", "]", "", " ", "").Replace(r.Cores))
		bad := err != nil
		for _, id := range ids {
			if id >= cores {
				bad = true
			}
		}
		if bad {
			out.Problems = append(out.Problems, Problem{Pos: r.Pos, Severity: Error,
				Message: fmt.Sprintf("Cores=%s: the node has cores 0-%d (%s); slurmd logs \"Invalid GRES data for %s\" and keeps the record", r.Cores, cores-1, decl.Pos, r.Name)})
		}
	}
}

// checkCounts: slurmctld drains a node that registers fewer GPUs of a
// type than its Gres= declares; more are ignored, with a warning.
func checkCounts(out *NodeCheck, recs []SlurmdRecord, decl *SlurmNode) {
	counts, err := GresTypeCounts(decl.Gres, "gpu")
	if err != nil {
		out.Problems = append(out.Problems, Problem{Pos: decl.Pos, Severity: Drain, Message: err.Error()})
		return
	}
	for _, c := range counts {
		have := 0
		for _, r := range recs {
			if c.Type == "" && r.Type == "" || c.Type != "" && strings.EqualFold(r.Type, c.Type) {
				have += int(r.Count)
			}
		}
		name := "gpu"
		if c.Type != "" {
			name += ":" + c.Type
		}
		switch {
		case have == 0:
			out.Problems = append(out.Problems, Problem{Pos: decl.Pos, Severity: Drain,
				Message: fmt.Sprintf("Gres=%s:%d declared, but no record has that type; slurmctld drains the node (\"gres/gpu count reported lower than configured\")", name, c.Count)})
		case have < c.Count:
			out.Problems = append(out.Problems, Problem{Pos: decl.Pos, Severity: Drain,
				Message: fmt.Sprintf("Gres=%s:%d declared, but the records have %d; slurmctld drains the node (\"gres/gpu count reported lower than configured (%d < %d)\")", name, c.Count, have, have, c.Count)})
		}
	}
}
