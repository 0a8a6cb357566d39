package slurmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/cpulist"
	"github.com/slurm-mig/slurm-mig/slurmconf"
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
	// multiple: from a MultipleFiles= record, whose files slurmd leaves
	// out of its duplicate check; splitLater: one that it splits per
	// file once merged.
	multiple, splitLater bool
}

// NodeCheck is what slurmd of one release makes of a node's gres.conf and
// slurmctld of its slurm.conf line: slurmd -G's records, in its order, and
// every problem with its severity; a fatal one comes last, as slurmd stops.
type NodeCheck struct {
	Node     string
	Records  []SlurmdRecord
	Problems []slurmconf.Problem
	// GPUs are the node's GPU indices, as slurmd numbers them (GPUs).
	GPUs []GPUIndex
	// Misread are the Problems where slurmd reads the lines as other
	// devices than written (a record split or ignored, a GPU record
	// dropped), so that a job's indices name devices the lines do not.
	Misread []slurmconf.Problem
	// Decl is the node's slurm.conf line; nil where none was given.
	Decl *slurmconf.SlurmNode
	// Elsewhere, where gres.conf has no line for the node but lines
	// for others, says which names those lines use (OtherNodes.Said).
	Elsewhere string
	// ReleaseMatters, where v was not known and releases read the lines
	// differently (MultipleFiles= beside mps or shard), is the first such
	// record's file:line; Records are then the newest releases'.
	ReleaseMatters string
	// AutoDetect is the node's AutoDetect= (GresConf.AutoDetect).
	AutoDetect string
}

// misread notes a problem that is also a misreading.
func (c *NodeCheck) misread(p slurmconf.Problem) {
	c.Problems = append(c.Problems, p)
	c.Misread = append(c.Misread, p)
}

// Fatal reports whether slurmd dies on the node's config.
func (c NodeCheck) Fatal() bool {
	return len(c.Problems) > 0 && c.Problems[len(c.Problems)-1].Severity == slurmconf.Fatal
}

// CheckNode reads the file for node as slurmd of release v would (v not
// known: the newest rules), with its slurm.conf line decl (nil: none
// given, and the records are taken as slurm.conf had declared them).
func CheckNode(f *slurmconf.GresFile, node string, v slurmconf.Version, decl *slurmconf.SlurmNode) NodeCheck {
	out := NodeCheck{Node: node, Decl: decl}
	conf, err := f.Node(node)
	out.Problems = append(out.Problems, conf.Problems...)
	out.AutoDetect = conf.AutoDetect
	if len(conf.Records) == 0 && !conf.Named && len(conf.Others.Names) > 0 {
		out.Elsewhere = conf.Others.Said(node)
	}
	if err == nil && decl != nil {
		decl = checkGresTypes(&out, conf, decl)
	}
	if err == nil {
		err = conf.CheckLines(v)
	}
	if err == nil {
		err = conf.CheckEnvFlags(v)
	}
	if err == nil && decl != nil {
		err = checkDecl(decl)
	}
	if err == nil && decl != nil && !v.Before(sharedCountsSince) {
		err = checkSharedCounts(conf, decl)
	}
	if err == nil && decl == nil {
		err = conf.CheckShared()
	}
	var recs []SlurmdRecord
	if err == nil {
		checkAutoDetect(&out, conf, v)
		recs, err = slurmdRecords(&out, conf, v, decl)
	}
	if err != nil {
		out.Problems = append(out.Problems, slurmconf.AsFatal(err).Problem)
		return out
	}
	if decl != nil {
		checkCores(&out, conf, decl)
		checkCounts(&out, recs, decl)
	}
	out.Records = recs
	out.GPUs = gpuIndices(recs)
	return out
}

// checkDecl: slurmd dies on a node line whose Gres= gives GPUs with a
// type and GPUs without ("Some gpu GRES in slurm.conf have a type while
// others do not").
func checkDecl(decl *slurmconf.SlurmNode) error {
	counts, err := slurmconf.GresTypeCounts(decl.Gres, "gpu")
	if err != nil {
		return slurmconf.Fatalf(decl.Pos, "%v", err)
	}
	typed, untyped := false, false
	for _, c := range counts {
		if c.Count == 0 {
			continue
		}
		if c.Type == "" {
			untyped = true
		} else {
			typed = true
		}
	}
	if typed && untyped {
		return slurmconf.Fatalf(decl.Pos, "Gres=%s gives GPUs with a type and without; slurmd: \"Some gpu GRES in slurm.conf have a type while others do not\"", decl.Gres)
	}
	return nil
}

// sharedCountsSince: the first release seen to die on more mps or
// shard declared than gres.conf gives (22.05.8; 20.11.4 does not).
var sharedCountsSince = slurmconf.Version{Major: 22, Minor: 5, Micro: -1}

// checkGresTypes: slurmd ignores, with an error each, the records and
// Gres= items of a GRES that GresTypes= does not name; said once a name,
// at GresTypes=. It returns decl less those items, as slurmd reads on.
func checkGresTypes(out *NodeCheck, conf *slurmconf.GresConf, decl *slurmconf.SlurmNode) *slurmconf.SlurmNode {
	known := func(name string) bool {
		for _, t := range strings.Split(decl.GresTypes, ",") {
			if strings.EqualFold(strings.TrimSpace(t), name) {
				return true
			}
		}
		return false
	}
	type unknown struct {
		name, first string // first: file:line of its first gres.conf record
		declared    bool
	}
	var missing []unknown
	note := func(name, pos string, declared bool) {
		for i := range missing {
			if strings.EqualFold(missing[i].name, name) {
				missing[i].declared = missing[i].declared || declared
				if missing[i].first == "" {
					missing[i].first = pos
				}
				return
			}
		}
		missing = append(missing, unknown{name, pos, declared})
	}
	kept := conf.Records[:0:0]
	for _, r := range conf.Records {
		if !known(r.Name) {
			note(r.Name, r.Pos, false)
			if strings.EqualFold(r.Name, "gpu") {
				out.Misread = append(out.Misread, slurmconf.Problem{Pos: r.Pos, Severity: slurmconf.Error,
					Message: gresTypesLack(r.Name, decl.GresTypes) + "; slurmd ignores the record"})
			}
			continue
		}
		kept = append(kept, r)
	}
	conf.Records = kept
	var items []string
	for _, item := range slurmconf.SplitGresList(decl.Gres) {
		name, _, _ := strings.Cut(item, ":")
		if name = strings.TrimSpace(name); name != "" && name != "(null)" && !known(name) {
			note(name, "", true)
			continue
		}
		items = append(items, item)
	}
	pos := decl.GresTypesPos
	if pos == "" {
		pos = decl.Pos
	}
	for _, m := range missing {
		var what []string
		if m.first != "" {
			what = append(what, fmt.Sprintf("gres.conf's records (first at %s: \"Ignoring gres.conf record, invalid name\")", m.first))
		}
		if m.declared {
			what = append(what, fmt.Sprintf("Gres= of the node line (%s: \"Invalid GRES configured on node\")", decl.Pos))
		}
		types := "GresTypes=" + decl.GresTypes + " does not name " + m.name
		if decl.GresTypes == "" {
			types = "slurm.conf sets no GresTypes=, which must name " + m.name
		}
		out.Problems = append(out.Problems, slurmconf.Problem{Pos: pos, Severity: slurmconf.Error,
			Message: fmt.Sprintf("%s; slurmd ignores %s", types, strings.Join(what, " and "))})
	}
	if len(items) == len(slurmconf.SplitGresList(decl.Gres)) {
		return decl
	}
	d := *decl
	d.Gres = strings.Join(items, ",")
	return &d
}

// gresTypesLack says that slurm.conf's GresTypes= does not name name,
// or that slurm.conf has none: the common case of a slurm.conf written
// before its first GPU, where "GresTypes=" alone would read as a typo.
func gresTypesLack(name, gresTypes string) string {
	if strings.TrimSpace(gresTypes) == "" {
		return fmt.Sprintf("Name=%s: slurm.conf sets no GresTypes= (add GresTypes=%s)", name, strings.ToLower(name))
	}
	return fmt.Sprintf("Name=%s is not in slurm.conf's GresTypes=%s", name, gresTypes)
}

// checkSharedCounts: where gres.conf has mps or shard lines and Gres=
// declares more than they give, slurmd adds a record without files for the
// rest and dies ("_build_shared_list: ... multiple configurations").
func checkSharedCounts(c *slurmconf.GresConf, decl *slurmconf.SlurmNode) error {
	for _, name := range []string{"mps", "shard"} {
		counts, _ := slurmconf.GresTypeCounts(decl.Gres, name)
		declared := 0
		for _, n := range counts {
			declared += n.Count
		}
		have, pos := uint64(0), ""
		for i := range c.Records {
			if r := &c.Records[i]; strings.EqualFold(r.Name, name) {
				have += max(r.Count, 1)
				if pos == "" {
					pos = r.Pos
				}
			}
		}
		if have > 0 && uint64(declared) > have {
			return slurmconf.Fatalf(pos, "Gres= declares %s:%d but gres.conf gives %d; slurmd adds a record without files for the rest and dies (\"_build_shared_list: ... multiple configurations\")", name, declared, have)
		}
	}
	return nil
}

// checkAutoDetect: slurmd logs "unknown autodetect flag" for a value it
// does not know (it looks for each known word in the value) and goes on
// as if none were given.
func checkAutoDetect(out *NodeCheck, conf *slurmconf.GresConf, v slurmconf.Version) {
	if conf.AutoDetect == "" || v.Before(slurmconf.AutoDetectLoggedSince) {
		return
	}
	val := strings.ToLower(conf.AutoDetect)
	known := []string{"nvml", "rsmi", "off"}
	if !v.Before(slurmconf.AutoDetectOneAPISince) {
		known = append(known, "oneapi")
	}
	if !v.Before(slurmconf.AutoDetectNvidiaSince) {
		known = append(known, "nvidia")
	}
	for _, k := range known {
		if strings.Contains(val, k) {
			return
		}
	}
	out.Problems = append(out.Problems, slurmconf.Problem{Pos: conf.AutoDetectPos, Severity: slurmconf.Error,
		Message: fmt.Sprintf("AutoDetect=%s: slurmd %s logs \"unknown autodetect flag\" and ignores it (it knows %s)", conf.AutoDetect, v, strings.Join(known, ", "))})
}

// slurmdRecords are the node's records as slurmd -G prints them: every
// node's first, GPUs without files dropped, merged with Gres= where given,
// and per device with mps or shard. The error is what slurmd dies of.
func slurmdRecords(out *NodeCheck, conf *slurmconf.GresConf, v slurmconf.Version, decl *slurmconf.SlurmNode) ([]SlurmdRecord, error) {
	perDevice, split := true, false
	if decl != nil {
		perDevice = decl.SharingConfigured()
		split = perDevice
	} else {
		for i := range conf.Records {
			split = split || slurmconf.SharingGres(conf.Records[i].Name)
		}
	}
	splitSomewhere := split
	split = split && slurmconf.BeforeMicro(v, slurmconf.MultipleFilesKeptSince)
	var gpus, others []SlurmdRecord
	var splits []*slurmconf.ParsedRecord // the MultipleFiles= records split: one cause, said once
	for pass := 0; pass < 2; pass++ {
		for i := range conf.Records {
			r := &conf.Records[i]
			if (r.Nodes == "") != (pass == 0) {
				continue
			}
			rec := SlurmdRecord{Name: r.Name, Type: r.Type, Cores: r.Cores, Links: r.Links, Flags: r.Flags, Pos: r.Pos}
			isGPU := strings.EqualFold(r.Name, "gpu")
			switch {
			case len(r.MultipleFiles) > 0:
				rec.Count, rec.Files, rec.multiple = 1, r.MultipleFiles, true
				rec.splitLater = split
				if split {
					splits = append(splits, r)
				} else if splitSomewhere && !v.Known() && out.ReleaseMatters == "" {
					out.ReleaseMatters = r.Pos
				}
			case r.File != "":
				rec.Files, _ = slurmconf.ExpandHostlist(r.File) // checked when read
				rec.Count = uint64(len(rec.Files))
				if slurmconf.SharingGres(r.Name) && r.Count > 0 {
					rec.Count = r.Count // the shares, spread over the files
				}
			case isGPU:
				// With slurm.conf, the merge says it of the type.
				if perDevice && decl == nil {
					out.Problems = append(out.Problems, slurmconf.Problem{Pos: r.Pos, Severity: slurmconf.Error,
						Message: "a GPU record without File=: slurmd drops it (\"SHARING configuration lacks File specification\")"})
				}
				continue
			default:
				rec.Files = []string{}
				rec.Count = max(r.Count, 1)
			}
			if !isGPU {
				others = append(others, rec)
				continue
			}
			if perDevice && !rec.multiple && !rec.splitLater && len(rec.Files) > 1 {
				for _, f := range rec.Files {
					one := rec
					one.Count, one.Files = 1, []string{f}
					gpus = append(gpus, one)
				}
				continue
			}
			gpus = append(gpus, rec)
		}
	}
	if len(splits) > 0 {
		r := splits[0]
		msg := fmt.Sprintf("MultipleFiles= where mps or shard is configured: slurmd %s splits the record into %d GPUs, one per file, without a word (kept one from %s)", v, len(r.MultipleFiles), slurmconf.MultipleFilesKeptSince)
		if n := len(splits) - 1; n > 0 {
			msg += fmt.Sprintf("; so it does the %d MultipleFiles= records after it (to %s)", n, splits[n].Pos)
		}
		out.misread(slurmconf.Problem{Pos: r.Pos, Severity: slurmconf.Warning, Message: msg})
	}
	if decl != nil {
		gpus = mergeDeclared(out, gpus, decl, perDevice)
		sharing := false
		for _, g := range gpus {
			sharing = sharing || g.Name == "gpu" // the sharing code looks for "gpu" exactly
		}
		if !sharing {
			for _, name := range []string{"mps", "shard"} {
				if c, _ := slurmconf.GresTypeCounts(decl.Gres, name); len(c) > 0 {
					return nil, slurmconf.Fatalf(decl.Pos, "Gres= declares %s, but the node has no GPU to share; slurmd: \"failed to merge SHARED and SHARING configuration\"", name)
				}
			}
		}
	}
	if split {
		// MultipleFiles= records are split once merged.
		var each []SlurmdRecord
		for _, g := range gpus {
			if !g.splitLater {
				each = append(each, g)
				continue
			}
			for _, f := range g.Files {
				one := g
				one.Files = []string{f}
				each = append(each, one)
			}
		}
		gpus = each
	}
	if err := checkDuplicateFiles(gpus, v.Before(slurmconf.SharedFilesSince)); err != nil {
		return nil, err
	}
	checkListedTwice(out, gpus)
	if decl != nil {
		checkSharedGresFiles(out, conf, gpus, decl)
	}
	if perDevice {
		others = spreadShared(others, gpus)
	}
	return append(gpus, others...), nil
}

// spreadShared splits each mps or shard record over the GPUs as slurmd -G
// does, a part of each GPU's type, after the GPUs: equal shares over its files
// (all GPUs without File=), the remainder one each to the last; others 0.
func spreadShared(others, gpus []SlurmdRecord) []SlurmdRecord {
	var out []SlurmdRecord
	for _, r := range others {
		if !slurmconf.SharingGres(r.Name) {
			out = append(out, r)
			continue
		}
		var parts []SlurmdRecord
		shares := 0 // the parts that get a share
		for _, g := range gpus {
			if g.Name != "gpu" || len(g.Files) == 0 {
				continue
			}
			p := r
			p.Type, p.Files, p.Count = g.Type, []string{g.Files[0]}, 0
			if len(r.Files) == 0 || slices.Contains(r.Files, g.Files[0]) {
				p.Count = 1 // a share, worked out below
				shares++
			}
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			out = append(out, r)
			continue
		}
		if shares == 0 {
			out = append(out, r)
			continue
		}
		each, rest := r.Count/uint64(shares), r.Count%uint64(shares)
		k := uint64(0) // the share's number
		for i := range parts {
			if parts[i].Count == 0 {
				continue
			}
			parts[i].Count = each
			if k >= uint64(shares)-rest {
				parts[i].Count++
			}
			k++
		}
		out = append(out, parts...)
	}
	return out
}

// checkSharedGresFiles: slurmd drops, with an error, a file of an mps or
// shard record that no GPU of the node has ("Discarding gres/'shared'
// configuration ... without matching gres/'sharing' record").
func checkSharedGresFiles(out *NodeCheck, conf *slurmconf.GresConf, gpus []SlurmdRecord, decl *slurmconf.SlurmNode) {
	have := map[string]bool{}
	for _, g := range gpus {
		for _, f := range g.Files {
			have[f] = true
		}
	}
	for i := range conf.Records {
		r := &conf.Records[i]
		if !slurmconf.SharingGres(r.Name) || r.File == "" {
			continue
		}
		if counts, _ := slurmconf.GresTypeCounts(decl.Gres, r.Name); len(counts) == 0 {
			continue // not declared: slurmd reads no further
		}
		files, _ := slurmconf.ExpandHostlist(r.File) // checked when read
		for _, f := range files {
			if !have[f] {
				out.Problems = append(out.Problems, slurmconf.Problem{Pos: r.Pos, Severity: slurmconf.Error,
					Message: fmt.Sprintf("Name=%s File=%s: no GPU of the node has %s; slurmd drops it (\"Discarding gres/'shared' configuration without matching gres/'sharing' record\")", r.Name, r.File, f)})
			}
		}
	}
}

// checkDuplicateFiles: slurmd dies where two GPUs name one device file
// ("gpu duplicate device file name"), save MultipleFiles= records' files,
// even split, from SharedFilesSince (all: it checks those too).
func checkDuplicateFiles(gpus []SlurmdRecord, all bool) error {
	seen := make(map[string]string, len(gpus))
	for _, g := range gpus {
		if g.multiple && !all || g.Name != "gpu" { // the gpu plugin's own, named exactly
			continue
		}
		for _, f := range g.Files {
			if pos, ok := seen[f]; ok {
				return slurmconf.Fatalf(g.Pos, "%s is a file of another GPU too (%s); slurmd: \"gpu duplicate device file name\"", f, pos)
			}
			seen[f] = g.Pos
		}
	}
	return nil
}

// checkListedTwice: two MultipleFiles= records ending in one CI cap offer
// one device as two GPUs. slurmd reads them silently from 21.08, and a job
// given both runs on one device, so merge refuses it.
func checkListedTwice(out *NodeCheck, gpus []SlurmdRecord) {
	seen := map[string]string{}
	for _, g := range gpus {
		if !g.multiple || g.splitLater || g.Name != "gpu" || len(g.Files) < 2 {
			continue
		}
		own := g.Files[len(g.Files)-1]
		if first, ok := seen[own]; ok {
			out.misread(slurmconf.Problem{Pos: g.Pos, Severity: slurmconf.Error,
				Message: fmt.Sprintf("the device %s is listed twice (first at %s): slurmd counts it as two GPUs and may give a job both", own, first)})
			continue
		}
		seen[own] = g.Pos
	}
}

// mergeDeclared orders GPU records as slurmd merges them with Gres=: each
// type takes up to its count of untaken records of it (any case; gpu:N any
// type). Leftovers warn in out; where perDevice, a short type is an error.
func mergeDeclared(out *NodeCheck, gpus []SlurmdRecord, decl *slurmconf.SlurmNode, perDevice bool) []SlurmdRecord {
	counts, err := slurmconf.GresTypeCounts(decl.Gres, "gpu")
	if err != nil {
		return nil
	}
	var merged []SlurmdRecord
	used := make([]uint64, len(gpus)) // of each record, the count a Gres= type took
	taken := make([]bool, len(gpus))  // a record serves one Gres= type
	for _, c := range counts {
		n := uint64(0)
		for i, g := range gpus {
			if n >= uint64(c.Count) {
				break
			}
			if taken[i] {
				continue
			}
			if c.Type == "" {
				g.Type = ""
			} else if !strings.EqualFold(g.Type, c.Type) {
				continue
			}
			if left := uint64(c.Count) - n; g.Count > left && !g.multiple {
				// slurmd keeps as many of the line's devices as the
				// type has left.
				g.Count, g.Files = left, g.Files[:left]
			}
			merged = append(merged, g)
			taken[i], used[i] = true, g.Count
			n += g.Count
		}
		if n < uint64(c.Count) && perDevice {
			name := "gpu"
			if c.Type != "" {
				name += ":" + c.Type
			}
			out.Problems = append(out.Problems, slurmconf.Problem{Pos: decl.Pos, Severity: slurmconf.Error,
				Message: fmt.Sprintf("Gres=%s:%d but gres.conf gives %d; slurmd logs \"SHARING configuration lacks File specification\"", name, c.Count, n)})
		}
	}
	// One warning a line: a line of File=a[0-3] may be several records.
	var order []string
	extra := map[string]uint64{}
	typeOf := map[string]string{}
	for i, g := range gpus {
		if g.Count > used[i] {
			if _, ok := extra[g.Pos]; !ok {
				order = append(order, g.Pos)
				typeOf[g.Pos] = g.Type
			}
			extra[g.Pos] += g.Count - used[i]
		}
	}
	for _, pos := range order {
		name := "gpu"
		if t := typeOf[pos]; t != "" {
			name += ":" + t
		}
		why := fmt.Sprintf("Gres=%s (%s) declares no %s", decl.Gres, decl.Pos, name)
		for _, c := range counts {
			if c.Type == "" || strings.EqualFold(c.Type, typeOf[pos]) {
				why = fmt.Sprintf("Gres=%s (%s) declares fewer", decl.Gres, decl.Pos)
				break
			}
		}
		out.misread(slurmconf.Problem{Pos: pos, Severity: slurmconf.Warning,
			Message: fmt.Sprintf("%s; slurmd: \"A line in gres.conf for GRES %s has %d more configured than expected in slurm.conf. Ignoring extra GRES.\"", why, name, extra[pos])})
	}
	return merged
}

// checkCores: slurmd logs "Invalid GRES data for gpu, Cores=..." for
// cores the node does not have, and keeps the record.
func checkCores(out *NodeCheck, conf *slurmconf.GresConf, decl *slurmconf.SlurmNode) {
	cores := decl.Cores()
	if cores <= 0 {
		return
	}
	for i := range conf.Records {
		r := &conf.Records[i]
		if r.Cores == "" {
			continue
		}
		ids, err := cpulist.Parse(slurmconf.BareList(r.Cores))
		bad := err != nil
		for _, id := range ids {
			if id >= cores {
				bad = true
			}
		}
		if bad {
			out.Problems = append(out.Problems, slurmconf.Problem{Pos: r.Pos, Severity: slurmconf.Error,
				Message: fmt.Sprintf("Cores=%s: the node has cores 0-%d (%s); slurmd logs \"Invalid GRES data for %s\" and keeps the record", r.Cores, cores-1, decl.Pos, r.Name)})
		}
	}
}

// checkCounts: slurmctld drains a node that registers fewer GPUs of a
// type than its Gres= declares; more are ignored, with a warning.
func checkCounts(out *NodeCheck, recs []SlurmdRecord, decl *slurmconf.SlurmNode) {
	counts, err := slurmconf.GresTypeCounts(decl.Gres, "gpu")
	if err != nil {
		out.Problems = append(out.Problems, slurmconf.Problem{Pos: decl.Pos, Severity: slurmconf.Drain, Message: err.Error()})
		return
	}
	for _, c := range counts {
		have := 0
		for _, r := range recs {
			if !strings.EqualFold(r.Name, "gpu") {
				continue
			}
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
			out.Problems = append(out.Problems, slurmconf.Problem{Pos: decl.Pos, Severity: slurmconf.Drain,
				Message: fmt.Sprintf("Gres=%s:%d declared, but no record has that type; slurmctld drains the node (\"gres/gpu count reported lower than configured\")", name, c.Count)})
		case have < c.Count:
			out.Problems = append(out.Problems, slurmconf.Problem{Pos: decl.Pos, Severity: slurmconf.Drain,
				Message: fmt.Sprintf("Gres=%s:%d declared, but the records have %d; slurmctld drains the node (\"gres/gpu count reported lower than configured (%d < %d)\")", name, c.Count, have, have, c.Count)})
		}
	}
}

// A Checker checks many nodes of one GresFile for one release. Nodes that
// read the same lines and slurm.conf line share one NodeCheck, worked out
// once, so a whole cluster takes about as long as one slurmd -G.
type Checker struct {
	f     *slurmconf.GresFile
	v     slurmconf.Version
	decls map[*slurmconf.SlurmNode]int
	cache map[string]NodeCheck
	key   []byte
}

// NewChecker indexes the file (Index) and returns a Checker for release v.
func NewChecker(f *slurmconf.GresFile, v slurmconf.Version) *Checker {
	f.Index()
	return &Checker{f: f, v: v, decls: map[*slurmconf.SlurmNode]int{}, cache: map[string]NodeCheck{}}
}

// Check is CheckNode, for node with its slurm.conf line decl (nil: none
// given). The records and problems returned may be shared with other
// nodes' and are read only.
func (c *Checker) Check(node string, decl *slurmconf.SlurmNode) NodeCheck {
	id, ok := c.decls[decl]
	if !ok {
		id = len(c.decls)
		c.decls[decl] = id
	}
	k := strconv.AppendInt(c.key[:0], int64(id), 10)
	for _, i := range c.f.NodeLines(node) {
		k = append(k, ',')
		k = strconv.AppendInt(k, int64(i), 10)
	}
	c.key = k
	if nc, ok := c.cache[string(k)]; ok {
		nc.Node = node
		return nc
	}
	nc := CheckNode(c.f, node, c.v, decl)
	c.cache[string(k)] = nc
	return nc
}
