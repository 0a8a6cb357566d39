package slurmconf

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a Slurm release, as `slurmd -V` prints it ("slurm 24.11.5";
// Debian's 22.05 says "slurm-wlm 22.05.8"). The zero Version is "not
// known": nothing is refused for it.
type Version struct {
	Major, Minor int
	Micro        int // -1 when only X.Y was given
}

// ParseVersion reads "X.Y" or "X.Y.Z", alone or as the last word of
// `slurmd -V` ("slurm 20.11.4"). A suffix after the micro number
// ("26.05.0-0rc1") is dropped.
func ParseVersion(s string) (Version, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Version{}, fmt.Errorf("no Slurm version in %q", s)
	}
	word := fields[len(fields)-1]
	parts := strings.SplitN(word, ".", 3)
	v := Version{Micro: -1}
	var err error
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("Slurm version %q is not X.Y or X.Y.Z", word)
	}
	if v.Major, err = strconv.Atoi(parts[0]); err != nil || v.Major <= 0 || v.Major > 99 {
		return Version{}, fmt.Errorf("Slurm version %q is not X.Y or X.Y.Z", word)
	}
	if v.Minor, err = strconv.Atoi(parts[1]); err != nil || v.Minor < 0 || v.Minor > 12 {
		return Version{}, fmt.Errorf("Slurm version %q is not X.Y or X.Y.Z", word)
	}
	if len(parts) == 3 {
		digits := parts[2]
		if end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); end >= 0 {
			digits = digits[:end]
		}
		if v.Micro, err = strconv.Atoi(digits); err != nil {
			return Version{}, fmt.Errorf("Slurm version %q is not X.Y or X.Y.Z", word)
		}
	}
	return v, nil
}

// Known reports whether v names a release.
func (v Version) Known() bool { return v.Major > 0 }

// Before reports whether v is a release older than r; micro numbers do
// not count. A version not known is before nothing.
func (v Version) Before(r Version) bool {
	return v.Known() && (v.Major < r.Major || v.Major == r.Major && v.Minor < r.Minor)
}

func (v Version) String() string {
	if !v.Known() {
		return "unknown"
	}
	if v.Micro < 0 {
		return fmt.Sprintf("%02d.%02d", v.Major, v.Minor)
	}
	return fmt.Sprintf("%02d.%02d.%d", v.Major, v.Minor, v.Micro)
}

// The releases that changed what slurmd accepts of what slurm-mig writes,
// read from Slurm's git history (docs/slurm-versions.md has the commits).
var (
	// MultipleFilesSince: the MultipleFiles= key (ff4bf3e085, 20.11.0).
	MultipleFilesSince = Version{20, 11, -1}
	// SharedFilesSince: MultipleFiles= records may share a file, as a GPU's
	// MIG devices share its /dev/nvidiaN (be4b014db8, 21.08.0); before it
	// slurmd fails with "gpu duplicate device file name".
	SharedFilesSince = Version{21, 8, -1}
)

// flagWord is a Flags= word and the first release that knows it.
type flagWord struct {
	word  string
	since Version
}

// flagSince is the first release whose gres.conf parser knows each Flags=
// word (gres_flags_parse). Slurm matches words as substrings; one it does
// not know is dropped, and with it every *_env flag of the line.
var flagSince = []flagWord{
	{"CountOnly", Version{}},
	{"nvidia_gpu_env", Version{21, 8, -1}},
	{"amd_gpu_env", Version{21, 8, -1}},
	{"opencl_env", Version{21, 8, -1}},
	{"no_gpu_env", Version{21, 8, -1}},
	{"intel_gpu_env", Version{22, 5, -1}},
	{"one_sharing", Version{22, 5, -1}},
	{"all_sharing", Version{22, 5, -1}},
	{"explicit", Version{23, 2, -1}},
	{"env_uuid", Version{26, 5, -1}},
}

// RefusedError is a gres.conf that the slurmd of a release would refuse,
// or read otherwise than written.
type RefusedError struct {
	Version Version
	Problem string // the whole message
	// SharedFiles: MultipleFiles= records share a file, which Version
	// refuses; File= of the CI caps alone would do.
	SharedFiles bool
	// File is the device file that two records name, where that is the
	// refusal; slurmd names it in its own error.
	File string
	// CIFilesRead says that Version reads a File= of each MIG device's
	// CI cap, which every release does: the way out of this refusal.
	CIFilesRead bool
	// From is the command that said the release ("slurmd -V"), or ""
	// where the user named it; the message tells the admin which.
	From string
}

func (e *RefusedError) Error() string { return e.Problem }

func refused(v Version, format string, args ...any) *RefusedError {
	return &RefusedError{Version: v, Problem: fmt.Sprintf(format, args...)}
}

// CheckGres returns why slurmd of release v would refuse records, or read
// them otherwise than written (a *RefusedError): MultipleFiles=, shared
// files or Flags= words. nil when it reads them as written or v is unknown.
func CheckGres(v Version, recs []GresRecord) error {
	if !v.Known() {
		return nil
	}
	for _, r := range recs {
		if len(r.MultipleFiles) > 0 && v.Before(MultipleFilesSince) {
			e := refused(v, "Slurm %s would refuse this gres.conf: it knows no MultipleFiles= (that came in %s)", v, MultipleFilesSince)
			e.CIFilesRead = true
			return e
		}
		if err := checkFlags(v, r.Flags); err != nil {
			return err
		}
	}
	return checkSharedFiles(v, recs)
}

// CheckSharing, for a slurm.conf with mps or shard, returns a *RefusedError
// where slurmd of v (before 23.02.7) would split a MultipleFiles= record into
// one GPU per file; nil where no record has one or v is not known.
func CheckSharing(v Version, recs []GresRecord) error {
	if !BeforeMicro(v, MultipleFilesKeptSince) {
		return nil
	}
	for _, r := range recs {
		if len(r.MultipleFiles) > 0 {
			e := refused(v, "Slurm %s would read this gres.conf as other GPUs than the node has: where slurm.conf's GresTypes= names mps or shard, it splits each MultipleFiles= record into one GPU per file (one GPU a record from %s)", v, MultipleFilesKeptSince)
			e.CIFilesRead = true
			return e
		}
	}
	return nil
}

// SplitsMultipleFiles reports whether slurmd of release v, where
// slurm.conf configures mps or shard, may split a MultipleFiles= record:
// before 23.02.7, or where v is not known.
func SplitsMultipleFiles(v Version) bool {
	return !v.Known() || BeforeMicro(v, MultipleFilesKeptSince)
}

// ReadGresTypes is the GresTypes= of a slurm.conf (following Includes):
// the last one, as Slurm takes it; "" where none is set.
func ReadGresTypes(path string) (string, error) {
	var types string
	var ws []word
	var lineErr error
	err := walkConf(path, nil, func(l *logicalLine, file string) bool {
		if ws, lineErr = lineWords(l, file, ws[:0]); lineErr != nil {
			return false
		}
		if len(ws) > 0 && strings.EqualFold(ws[0].key, "GresTypes") {
			types = ws[0].value
		}
		return true
	})
	if err != nil {
		return "", err
	}
	return types, lineErr
}

// ConfiguresSharing reports whether a GresTypes= value names mps or
// shard: slurmd then reads the GPUs device by device.
func ConfiguresSharing(gresTypes string) bool {
	return (&SlurmNode{GresTypes: gresTypes}).SharingConfigured()
}

func checkFlags(v Version, flags string) error {
	if flags == "" {
		return nil
	}
	for _, w := range strings.Split(flags, ",") {
		for _, f := range flagSince {
			if strings.EqualFold(w, f.word) && v.Before(f.since) {
				return refused(v, "Slurm %s does not know Flags=%s (that came in %s) and would drop the line's other *_env flags with it", v, f.word, f.since)
			}
		}
	}
	return nil
}

// checkSharedFiles finds a device file in two records of one node and GRES
// name, which slurmd of release v refuses: always for File=, for
// MultipleFiles= before SharedFilesSince. No NodeName= means every node.
func checkSharedFiles(v Version, recs []GresRecord) error {
	shared := !v.Before(SharedFilesSince)
	type key struct{ node, name, file string }
	first := map[key]int{} // the record that named the file first
	var global []int       // records for every node
	check := func(node string, i int) error {
		r := recs[i]
		files := r.MultipleFiles
		if len(files) > 0 && shared {
			return nil // slurmd skips these in its duplicate check
		}
		if len(files) == 0 && r.File != "" {
			var err error
			if files, err = ExpandHostlist(r.File); err != nil {
				return fmt.Errorf("File=%s: %v", r.File, err)
			}
		}
		for _, f := range files {
			k := key{node, strings.ToLower(r.Name), f}
			j, seen := first[k]
			if !seen {
				first[k] = i
				continue
			}
			where := ""
			if node != "" {
				where = " of node " + node
			}
			if len(r.MultipleFiles) > 0 || len(recs[j].MultipleFiles) > 0 {
				// The MIG devices of one GPU, all of one type or of
				// two: said once, as the message is to be read.
				types := recs[j].Type
				if r.Type != types {
					types += " and " + r.Type
				}
				if types != "" {
					where += " (" + types + ")"
				}
				e := refused(v, "Slurm %s would refuse this gres.conf: two MultipleFiles= records%s share %s, which Slurm allows from %s on", v, where, f, SharedFilesSince)
				e.SharedFiles, e.File, e.CIFilesRead = true, f, true
				return e
			}
			if recs[j].Type != "" && r.Type != "" {
				where += fmt.Sprintf(" (Type=%s and Type=%s)", recs[j].Type, r.Type)
			}
			e := refused(v, "Slurm %s would refuse this gres.conf (\"duplicate device file name\"): %s is in two records%s", v, f, where)
			e.File = f
			return e
		}
		return nil
	}
	nodes := map[string]bool{}
	for i, r := range recs {
		if r.NodeName == "" {
			global = append(global, i)
			continue
		}
		names, err := ExpandHostlist(r.NodeName)
		if err != nil {
			return fmt.Errorf("NodeName=%s: %v", r.NodeName, err)
		}
		for _, n := range names {
			nodes[n] = true
			if err := check(n, i); err != nil {
				return err
			}
		}
	}
	// Records for every node join each node's, and stand alone.
	for n := range nodes {
		for _, i := range global {
			if err := check(n, i); err != nil {
				return err
			}
		}
	}
	for _, i := range global {
		if err := check("", i); err != nil {
			return err
		}
	}
	return nil
}

// Refusal gives what a message needs, through an interface callers name
// without this package: the release, the command that said it ("" where the
// user named it), and whether that release reads a File= of each CI cap.
func (e *RefusedError) Refusal() (release, from string, ciFilesRead bool) {
	return e.Version.String(), e.From, e.CIFilesRead
}

// Releases where what slurmd reads of gres.conf changed (docs/check.md).
var (
	// AutoDetectNvidiaSince: AutoDetect=nvidia (the nvidia gpu plugin,
	// without NVML) is a value slurmd knows.
	AutoDetectNvidiaSince = Version{24, 11, -1}
	// AutoDetectLoggedSince: slurmd logs an AutoDetect= value it does
	// not know; 20.11 ignores it without a word (tried; 21.08 not).
	AutoDetectLoggedSince = Version{21, 8, -1}
	// AutoDetectOneAPISince: AutoDetect=oneapi.
	AutoDetectOneAPISince = Version{22, 5, -1}
	// MultipleFilesKeptSince: a MultipleFiles= record beside mps or
	// shard lines stays one GPU ("Do not split GRES with MultipleFiles",
	// 23.02.7); before, slurmd splits it into one GPU per file.
	MultipleFilesKeptSince = Version{23, 2, 7}
)

// BeforeMicro is Version.Before with micro releases counted; a release
// given as X.Y alone is taken as its first, X.Y.0.
func BeforeMicro(v, r Version) bool {
	if !v.Known() {
		return false
	}
	if v.Major != r.Major || v.Minor != r.Minor {
		return v.Before(r)
	}
	return max(v.Micro, 0) < r.Micro
}
