package slurmtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// TestSlurmdReadsEveryLayout renders every layout in every form with the
// built binary and has `slurmd -G`, Slurm's own gres.conf parser, read it
// together with the `node` line in slurm.conf. slurmd must say nothing but
// one record per gres.conf line: the type and files slurm-mig meant, the
// node's real devices one unit each, and per type the count of the node
// line.
func TestSlurmdReadsEveryLayout(t *testing.T) {
	Require(t, "slurmd")
	RequireRoot(t)
	host := shortHostname(t)
	hw := hardware(t)
	for _, l := range loadLayouts(t, host) {
		devDir := t.TempDir()
		makeDevices(t, devDir, l.node)
		for _, f := range forms() {
			name := l.name + "/" + f.String()
			refused := refusal(t, l, f, host)
			if refused != nil {
				// This release refuses the form: slurmd -G must fail, naming
				// the file slurm-mig names, and slurm-mig must refuse to
				// write it for this release.
				t.Run(name+"/"+refusedName(refused), func(t *testing.T) {
					gres, nodeLine := render(t, l, f, host)
					dir := t.TempDir()
					conf := writeConfigs(t, dir, forThisMachine(gres, devDir), slurmConf(dir, host, nodeLine, hw, ports{}))
					recs, problems := slurmdG(t, conf)
					if !slurmdRefuses(problems, underDev(refused.File, devDir)) {
						t.Errorf("slurmd -G printed %d records and %q\nwant it to fail as slurm-mig predicts: %s", len(recs), problems, refused.Problem)
					}
					checkSlurmMigRefuses(t, l, f, host, refused)
				})
				continue
			}
			t.Run(name, func(t *testing.T) {
				gres, nodeLine := render(t, l, f, host)
				dir := t.TempDir()
				conf := writeConfigs(t, dir, forThisMachine(gres, devDir), slurmConf(dir, host, nodeLine, hw, ports{}))
				checkSlurmdRecords(t, slurmdRecords(t, conf), l, f, host, devDir, nodeLine)
				if !t.Failed() {
					parsedConfigs.Add(1)
				}
			})
		}
	}
}

// checkSlurmdRecords checks what slurmd -G read for node, of layout l
// rendered in form f with its devices under devDir: one record per
// gres.conf line with the type and files slurm-mig meant, the node's real
// devices one unit each, and per type the count of its node line.
func checkSlurmdRecords(t *testing.T, got []gresRecord, l layout, f form, node, devDir, nodeLine string) {
	t.Helper()
	if diff := cmp.Diff(sortRecords(wantRecords(t, l, f, node, devDir)), sortRecords(got)); diff != "" {
		t.Errorf("slurmd -G records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sorted(deviceUnits(l.node, f.files, devDir)), sorted(units(t, got))); diff != "" {
		t.Errorf("devices Slurm counts, one unit a line (-node's devices +slurmd -G):\n%s", diff)
	}
	if diff := cmp.Diff(nodeLineCounts(t, nodeLine), typeCounts(got)); diff != "" {
		t.Errorf("count per type (-node line +slurmd -G):\n%s", diff)
	}
}

// TestSlurmdRejectsWrongDevice shows that the check above can fail: a
// gres.conf naming a regular file where a device should be gets an error:
// line from slurmd -G. Slurm checks that only from 22.05 on: 20.11 takes
// the file as a device, and there only a missing file fails the check.
func TestSlurmdRejectsWrongDevice(t *testing.T) {
	Require(t, "slurmd")
	RequireRoot(t)
	if release.Before(deviceCheckSince) {
		t.Run("regular-file-accepted-before-"+deviceCheckSince.String(), testSlurmdTakesRegularFile)
		return
	}
	t.Run("regular-file-refused-from-"+deviceCheckSince.String(), testSlurmdRefusesRegularFile)
}

// testSlurmdRefusesRegularFile: from 22.05 on, slurmd -G says a regular
// file is no device.
func testSlurmdRefusesRegularFile(t *testing.T) {
	host := shortHostname(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dev/nvidia0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gres := "NodeName=" + host + " Name=gpu Type=a100 File=" + dir + "/dev/nvidia0\n"
	conf := writeConfigs(t, dir, gres, slurmConf(dir, host, "NodeName="+host+" Gres=gpu:a100:1", hardware(t), ports{}))
	_, problems := slurmdG(t, conf)
	if len(problems) == 0 || !strings.Contains(problems[0], "is not a valid character or block device") {
		t.Errorf("slurmd -G on a regular file said %q, want the error that it is not a device", problems)
	}
}

// testSlurmdTakesRegularFile: before 22.05, slurmd -G reads a regular
// file named by File= as one device, and says nothing.
func testSlurmdTakesRegularFile(t *testing.T) {
	host := shortHostname(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "nvidia0")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gres := "NodeName=" + host + " Name=gpu Type=a100 File=" + file + "\n"
	conf := writeConfigs(t, dir, gres, slurmConf(dir, host, "NodeName="+host+" Gres=gpu:a100:1", hardware(t), ports{}))
	recs, problems := slurmdG(t, conf)
	if want := []gresRecord{{Type: "a100", Count: 1, Files: file}}; len(problems) > 0 || len(recs) != 1 || recs[0] != want[0] {
		t.Errorf("slurmd %s -G on a regular file: %v %q, want it taken as a device: %v", release, recs, problems, want)
	}
}

// slurmdRefuses reports whether slurmd -G failed as the refusal says:
// exit non-zero, the "duplicate device file name" error naming the file
// that the refusal names (file), and a fatal: line.
func slurmdRefuses(problems []string, file string) bool {
	var exit, dup, fatal bool
	for _, p := range problems {
		switch {
		case strings.HasPrefix(p, "exit: "):
			exit = true
		case strings.Contains(p, "error: gpu duplicate device file name ("):
			_, named, _ := strings.Cut(p, "(")
			dup = strings.TrimSuffix(named, ")") == file
		case strings.Contains(p, "fatal: "):
			fatal = true
		}
	}
	return exit && dup && fatal
}

// gresRecord is one gres.conf record as Slurm holds it.
type gresRecord struct {
	Type  string
	Count int
	Files string // its files, ranges expanded, comma-separated
	Links string
}

// slurmdRecords runs `slurmd [args] -G` on conf and returns the records
// it parsed, failing t if slurmd printed anything else.
func slurmdRecords(t *testing.T, conf string, args ...string) []gresRecord {
	t.Helper()
	recs, problems := slurmdG(t, conf, args...)
	for _, p := range problems {
		t.Errorf("slurmd -G: %s", p)
	}
	return recs
}

// slurmdG runs `slurmd -G` and splits what it prints into records
// ("slurmd: Gres Name=gpu Type=a100 Count=1 Index=0 ID=... File=...";
// "slurmd-<node>: " with -N),
// and every other line, which for a config slurmd likes is none
// (slurmd prints error:, fatal: and WARNING: lines and exits 0).
func slurmdG(t *testing.T, conf string, args ...string) (recs []gresRecord, problems []string) {
	t.Helper()
	// A missing device file makes slurmd wait for it (20 s) and die.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "slurmd", append(args, "-G")...)
	cmd.Env = slurmEnv(conf)
	out, err := cmd.CombinedOutput()
	if err != nil {
		problems = append(problems, "exit: "+err.Error())
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		prefix := gresLine.FindString(line)
		if prefix == "" {
			if !slurmdGNoise.MatchString(line) {
				problems = append(problems, line)
			}
			continue
		}
		rest := line[len(prefix):]
		rec, err := parseSlurmdRecord(rest)
		if err != nil {
			problems = append(problems, err.Error()+": "+line)
			continue
		}
		recs = append(recs, rec)
	}
	return recs, problems
}

// slurmdGPU is the GPU record of a slurmd -G record's words (rest, the
// line less its prefix), its type "" where slurmd prints (null); ok false
// for a record of another GRES.
func slurmdGPU(t *testing.T, rest string) (rec gresRecord, ok bool) {
	t.Helper()
	if m := slurmdName.FindStringSubmatch(rest); m == nil || m[1] != "gpu" {
		return rec, false
	}
	rec, err := parseSlurmdRecord(rest)
	if err != nil {
		t.Fatalf("%v: %s", err, rest)
	}
	if rec.Type == "(null)" {
		rec.Type = ""
	}
	return rec, true
}

// parseSlurmdRecord reads the key=value words of a slurmd -G record.
func parseSlurmdRecord(s string) (gresRecord, error) {
	var rec gresRecord
	for _, word := range strings.Fields(s) {
		key, value, _ := strings.Cut(word, "=")
		switch key {
		case "Type":
			rec.Type = value
		case "Count":
			n, err := strconv.Atoi(value)
			if err != nil {
				return rec, err
			}
			rec.Count = n
		case "Links":
			if value != "(null)" { // 24.11 and 26.05 print a record without links so
				rec.Links = value
			}
		case "File":
			files, err := slurmconf.ExpandHostlist(value)
			if err != nil {
				return rec, err
			}
			rec.Files = strings.Join(files, ",")
		}
	}
	return rec, nil
}

// wantRecords is what slurmd should read: the records slurm-mig means to
// write for this form, built in process from the same model, as
// forThisMachine changes them.
func wantRecords(t *testing.T, l layout, f form, host, devDir string) []gresRecord {
	t.Helper()
	recs, err := generate(l, f, host, slurmconf.Version{})
	if err != nil {
		t.Fatal(err)
	}
	var want []gresRecord
	for _, r := range recs {
		files := r.MultipleFiles
		if r.File != "" {
			if files, err = slurmconf.ExpandHostlist(r.File); err != nil {
				t.Fatal(err)
			}
		}
		n, err := r.Units()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, gresRecord{Type: r.Type, Count: n, Files: underDev(strings.Join(files, ","), devDir), Links: r.Links})
	}
	return want
}

// generate builds the records of layout l in form f in process, for
// Slurm release v (the zero Version: any).
func generate(l layout, f form, host string, v slurmconf.Version) ([]slurmconf.GresRecord, error) {
	recs, err := gresgen.Records(l.node, gresgen.Options{
		NodeName:  host,
		TypeStyle: gresgen.TypeStyle(f.typeStyle),
		FileStyle: gresgen.FileStyle(f.files),
		Slurm:     v,
	})
	if err != nil {
		return nil, err
	}
	if f.compact {
		recs = slurmconf.Compact(recs)
	}
	return recs, nil
}

// units splits records into the units Slurm counts: a record of Count=1
// is one unit of all its files (MultipleFiles=), one of Count=n names n
// files, one unit each (File=).
func units(t *testing.T, recs []gresRecord) []string {
	t.Helper()
	var all []string
	for _, r := range recs {
		files := strings.Split(r.Files, ",")
		switch r.Count {
		case 1:
			all = append(all, r.Files)
		case len(files):
			all = append(all, files...)
		default:
			t.Errorf("record of type %s: Count=%d with %d files", r.Type, r.Count, len(files))
		}
	}
	return all
}

// typeCounts totals the records' counts per type.
func typeCounts(recs []gresRecord) map[string]int {
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Type] += r.Count
	}
	return counts
}

// nodeLineCounts reads the Gres= counts of a `slurm-mig node` line.
func nodeLineCounts(t *testing.T, nodeLine string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, c := range gresList(t, nodeLine) {
		counts[c.typ] += c.count
	}
	return counts
}

// typeCount is one gpu:<type>:<count> of a Gres= list.
type typeCount struct {
	typ   string
	count int
}

// gresList parses the Gres= of a `slurm-mig node` line, where every item
// is gpu:<type>:<count>.
func gresList(t *testing.T, nodeLine string) []typeCount {
	t.Helper()
	_, gres, _ := strings.Cut(nodeLine, " Gres=")
	var list []typeCount
	for _, item := range strings.Split(gres, ",") {
		parts := strings.Split(item, ":")
		n, err := strconv.Atoi(parts[len(parts)-1])
		if len(parts) != 3 || parts[0] != "gpu" || err != nil {
			t.Fatalf("node line %q: item %q is not gpu:<type>:<count>", nodeLine, item)
		}
		list = append(list, typeCount{parts[1], n})
	}
	return list
}

// sortRecords orders records by their files: the order slurmd keeps them
// in is its own business.
func sortRecords(recs []gresRecord) []gresRecord {
	recs = append([]gresRecord(nil), recs...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Files < recs[j].Files })
	return recs
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}
