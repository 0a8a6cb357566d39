package rebalance

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// HistoryFormat is the sacct command whose output ParseHistory reads: the
// job allocations of every user over the last day, one a line. A GPU's type
// shows in ReqTRES and AllocTRES only where AccountingStorageTRES lists it.
const HistoryFormat = "sacct --allusers --allocations --noheader --parsable2 --starttime=now-1day --format=JobID,Submit,Start,End,TimeLimit,NodeList,State,ReqTRES,AllocTRES"

// Record is one job of the history.
type Record struct {
	ID string
	// Submit, Start and End are zero where sacct says Unknown or None
	// (a job pending, running, or cancelled before it started).
	Submit, Start, End time.Time
	// Limit is the time limit in minutes: +Inf when UNLIMITED, NaN when
	// the partition's (Partition_Limit), which sacct does not print.
	Limit float64
	// Nodes are the nodes it ran on (NodeList expanded), none when it
	// never ran.
	Nodes []string
	State string
	// Type and Count are its GPU request per node: AllocTRES's typed
	// gres/gpu where it ran, else ReqTRES's; Type is empty when neither
	// names one type.
	Type  string
	Count int
	// GPU says the job asked for or got gpu GRES, typed or not.
	GPU bool
	// Tasks is how many jobs the line stands for: a pending array's
	// tasks are one line ("12_[1-8%2]").
	Tasks int
	Line  int
}

// ParseHistory reads the output of HistoryFormat, the file named file;
// times are in loc, as sacct prints them. A line it cannot read is an
// error naming the file and the line.
func ParseHistory(file string, data []byte, loc *time.Location) ([]Record, error) {
	var out []Record
	err := eachLine(file, data, func(num int, line string) error {
		f := strings.Split(line, "|")
		if len(f) != 9 {
			return fmt.Errorf("%s:%d: want 9 fields split by | (%s), got %d", file, num, HistoryFormat, len(f))
		}
		r := Record{ID: f[0], State: f[6], Line: num, Tasks: 1}
		var err error
		for i, p := range []*time.Time{&r.Submit, &r.Start, &r.End} {
			if *p, err = sacctTime(f[1+i], loc); err != nil {
				return advice.Hinted(fmt.Errorf("%s:%d: %s %v", file, num, [...]string{"Submit", "Start", "End"}[i], err), timeFormatHint)
			}
		}
		if r.Submit.IsZero() {
			return fmt.Errorf("%s:%d: job %s has no Submit time", file, num, r.ID)
		}
		if r.Limit, err = sacctLimit(f[4]); err != nil {
			return fmt.Errorf("%s:%d: TimeLimit %v", file, num, err)
		}
		if nl := f[5]; nl != "" && nl != "None assigned" && !r.Start.IsZero() {
			if r.Nodes, err = slurmconf.ExpandHostlist(nl); err != nil {
				return fmt.Errorf("%s:%d: NodeList: %v", file, num, err)
			}
		}
		for _, tres := range []string{f[8], f[7]} {
			if r.Type, r.Count, err = typedGPU(tres); err != nil {
				return fmt.Errorf("%s:%d: %v", file, num, err)
			}
			if r.Type != "" {
				break
			}
		}
		r.GPU = strings.Contains(f[7]+","+f[8], "gres/gpu")
		if r.Tasks, err = arrayTasks(r.ID); err != nil {
			return fmt.Errorf("%s:%d: JobID %v", file, num, err)
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sacctTime reads a time as sacct prints it (slurmconf.TimeLayout);
// Unknown, None and empty are the zero time.
func sacctTime(s string, loc *time.Location) (time.Time, error) {
	switch s {
	case "", "Unknown", "None":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation(slurmconf.TimeLayout, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not %s", s, slurmconf.TimeLayout)
	}
	return t, nil
}

// sacctLimit reads a TimeLimit: [days-]hours:minutes:seconds,
// minutes:seconds or minutes, UNLIMITED, or Partition_Limit.
func sacctLimit(s string) (float64, error) {
	switch s {
	case "UNLIMITED", "INFINITE":
		return math.Inf(1), nil
	case "Partition_Limit", "":
		return math.NaN(), nil
	}
	days := 0
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not [days-]hours:minutes:seconds", s)
		}
		days, rest = n, r
	}
	parts := strings.Split(rest, ":")
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(parts) > 3 {
			return 0, fmt.Errorf("%q is not [days-]hours:minutes:seconds", s)
		}
		nums[i] = n
	}
	var h, m, sec int
	switch {
	case len(nums) == 3:
		h, m, sec = nums[0], nums[1], nums[2]
	case len(nums) == 2 && days > 0: // days-hours:minutes
		h, m = nums[0], nums[1]
	case len(nums) == 2:
		m, sec = nums[0], nums[1]
	case days > 0: // days-hours
		h = nums[0]
	default:
		m = nums[0]
	}
	return float64(days*24*60+h*60+m) + float64(sec)/60, nil
}

// typedGPU is the typed gres/gpu of a TRES list ("gres/gpu:TYPE=N");
// none when the list names no type, or several.
func typedGPU(tres string) (string, int, error) {
	typ, count := "", 0
	for _, item := range strings.Split(tres, ",") {
		k, v, ok := strings.Cut(item, "=")
		t, typed := strings.CutPrefix(k, "gres/gpu:")
		if !ok || !typed {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", 0, fmt.Errorf("TRES %s: %q is not a count", k, v)
		}
		if typ != "" {
			return "", 0, nil // several types: no one layout decides it
		}
		typ, count = strings.ToLower(t), n
	}
	return typ, count, nil
}

// arrayTasks is how many jobs a JobID stands for: the tasks of a
// pending array's range ("12_[1-8%2]", the %2 a throttle), else one.
func arrayTasks(id string) (int, error) {
	_, tasks, ok := strings.Cut(id, "_[")
	if !ok {
		return 1, nil
	}
	tasks = strings.TrimSuffix(tasks, "]")
	tasks, _, _ = strings.Cut(tasks, "%")
	ids, err := slurmconf.ExpandHostlist("t[" + tasks + "]")
	if err != nil {
		return 0, fmt.Errorf("%q: array range: %v", id, err)
	}
	return len(ids), nil
}
