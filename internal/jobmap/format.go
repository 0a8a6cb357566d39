package jobmap

// This file is what the two exporters read: each device's file name and
// the job's line in it. format_test.go restates their reading code, and
// docs/jobmap.md quotes the releases.

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
)

// Format is the shape of a job map directory: which exporter reads it.
type Format int

const (
	// DCGM is dcgm-exporter's --hpc-job-mapping-dir: a file "<index>" per
	// GPU and "<index>.<gpu instance id>" per MIG device, NVML's index; each
	// line, whole, becomes one hpc_job label, so it holds the job id alone.
	DCGM Format = iota
	// Jobstats is Princeton's jobstats (/run/gpustat): a file "<ordinal>"
	// (NVML's index) for a whole GPU and "MIG-<UUID>" for a MIG device, as
	// its gpustats_helper.sh writes them, holding "JOBID UID".
	Jobstats
)

// Formats are the names ParseFormat takes, the default first.
var Formats = []string{"dcgm", "jobstats"}

// ParseFormat reads a format's name.
func ParseFormat(s string) (Format, error) {
	for i, n := range Formats {
		if s == n {
			return Format(i), nil
		}
	}
	return 0, fmt.Errorf("unknown job map format %q (want %s)", s, strings.Join(Formats, " or "))
}

func (f Format) String() string { return Formats[f] }

// line is the job's line in a file of the format.
func (f Format) line(j Job) string {
	if f == DCGM {
		return j.ID
	}
	return j.ID + " " + j.UID
}

// unaddressed refuses a state that does not say the devices' NVML indices
// and GPU instance ids, which name the job map's files; its advice is to
// write the state again.
func unaddressed(st *jobenv.State) error {
	return advice.Wrap(fmt.Errorf("%s records no NVML index or GPU instance id of its devices (written by an older slurm-mig), which name the job map's files", st.Path), advice.StateStale)
}

// fileName is the file of device d in the format.
func (f Format) fileName(d *jobenv.StateDevice) (string, error) {
	if d.Index == nil || (d.CICap != "" && d.GI == nil) {
		return "", errNoIndex
	}
	index := strconv.Itoa(*d.Index)
	switch {
	case d.CICap == "":
		return index, nil
	case f == DCGM:
		return index + "." + strconv.Itoa(*d.GI), nil
	}
	// A UUID that cannot be a file's name is refused: the legacy
	// MIG-GPU-<uuid>/<gi>/<ci> form of drivers before 470.42.01 has
	// slashes, and would name a path below the directory instead.
	if !strings.HasPrefix(d.UUID, "MIG-") || strings.ContainsRune(d.UUID, '/') {
		return "", fmt.Errorf("device %s: its UUID %q cannot name a file of the job map (MIG UUIDs of drivers before 470.42.01 have slashes)", d.GPU, d.UUID)
	}
	return d.UUID, nil
}

var errNoIndex = errors.New("no NVML index or GPU instance id")

// fileNames are the files of the devices, each once: two CIs of one GPU
// instance are one file in dcgm-exporter's format, and a job has one
// line in it.
func (f Format) fileNames(st *jobenv.State, devs []*jobenv.StateDevice) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	for _, d := range devs {
		name, err := f.fileName(d)
		if errors.Is(err, errNoIndex) {
			return nil, unaddressed(st)
		}
		if err != nil {
			return nil, err
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names, nil
}

var (
	migFile = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	gpuFile = regexp.MustCompile(`^[0-9]+$`)
)

// ownName reports whether a file of the directory is named as the
// format names a device's file.
func (f Format) ownName(name string) bool {
	if gpuFile.MatchString(name) {
		return true
	}
	if f == DCGM {
		return migFile.MatchString(name)
	}
	return strings.HasPrefix(name, "MIG-")
}

// foreignName says why a file of the directory is of another format than
// f, or "" when it is not: mixing formats would have the exporter read
// stale lines, or only half of them.
func (f Format) foreignName(name string) string {
	switch {
	case f == DCGM && (strings.HasPrefix(name, "MIG-") || strings.HasPrefix(name, "GPU-")):
		return "a file named by UUID, of jobstats' format (or of an older slurm-mig's job map)"
	case f == Jobstats && migFile.MatchString(name):
		return "a <index>.<GPU instance id> file, of dcgm-exporter's format"
	case f == Jobstats && strings.HasPrefix(name, "GPU-"):
		return "a GPU-<UUID> file (of an older slurm-mig's job map, or jobstats' own helper), which jobstats' exporter reads before <ordinal>"
	}
	return ""
}

// foreignLine says why a line of a file is of the other format, or ""
// when it is not: a whole GPU's file is "<index>" in both, and only its
// lines tell them apart. Lines neither writes (comments) are no one's.
func (f Format) foreignLine(l string) string {
	fields := strings.Fields(l)
	for _, x := range fields {
		if !isNumber(x) {
			return ""
		}
	}
	switch {
	case f == DCGM && len(fields) == 2:
		return "a JOBID UID line, of jobstats' format (dcgm-exporter would label its metrics hpc_job=\"" + l + "\")"
	case f == Jobstats && len(fields) == 1:
		return "a JOBID line without the UID, of dcgm-exporter's format"
	}
	return ""
}

// checkFile refuses a file of the job's devices that holds a line of the
// other format.
func (f Format) checkFile(path string, data []byte) error {
	for _, l := range strings.Split(string(data), "\n") {
		if why := f.foreignLine(l); why != "" {
			return advice.Hinted(fmt.Errorf("%s holds %s; this job map is of the %s format: not mixing the two", path, why, f), " (give each exporter its own directory)")
		}
	}
	return nil
}
