package rebalance

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// QueueFormat is the squeue command whose output ParseQueue reads: one
// pending job (array tasks one by one) a line, with its id, submit time,
// node count, GRES per node and pending reason, last as it may hold blanks.
const QueueFormat = "squeue --noheader --array --states=PD --format='%i %V %D %b %r'"

// timeFormatHint follows a time that is not slurmconf.TimeLayout: every
// Slurm command prints times as SLURM_TIME_FORMAT says, which a profile
// may set (relative, or a strftime format such as "%F %T").
const timeFormatHint = "; Slurm prints times as SLURM_TIME_FORMAT says: run the command with " + slurmconf.StandardTimes

// Job is one pending job of the queue.
type Job struct {
	ID     string
	Submit time.Time
	// Nodes is how many nodes the job asks for; GPU is what it asks of
	// each (gpu GRES only; the job's other GRES do not matter here).
	Nodes int
	GPU   []Request
	// Reason is squeue's pending reason; empty in a queue printed
	// without it (before %r was asked for).
	Reason string
	Line   int // the line of the queue file
}

// Blocked says whether the job's pending reason is one no layout clears:
// a hold, a dependency, a start time, an array's throttle, a limit.
func (j Job) Blocked() bool {
	if strings.Contains(strings.ToLower(j.Reason), "held") {
		return true // JobHeldUser, JobHeldAdmin, "launch failed requeued held"
	}
	for _, p := range []string{"JobHold", "Dependency", "BeginTime", "JobArrayTaskLimit", "Licenses", "Reservation",
		"PartitionDown", "PartitionInactive", "PartitionNodeLimit", "PartitionTimeLimit",
		"QOS", "Assoc", "Max", "AccountNotAllowed", "AccountingPolicy", "InvalidAccount", "InvalidQOS", "BurstBuffer"} {
		if strings.HasPrefix(j.Reason, p) {
			return true
		}
	}
	return false
}

// Request is a number of gpu GRES of one type; Type is empty when the
// job takes any type.
type Request struct {
	Type  string
	Count int
}

// ParseQueue reads the output of QueueFormat, or of its form without %r,
// the file named file: a bad line is an error naming file and line; a job
// with no GPU request is kept, so that the counts said are the queue's.
func ParseQueue(file string, data []byte, loc *time.Location) ([]Job, error) {
	var jobs []Job
	first := map[string]int{} // job id -> its line: squeue lists a job once
	err := eachLine(file, data, func(num int, line string) error {
		f := strings.Fields(line)
		if len(f) < 4 {
			return fmt.Errorf("%s:%d: want 5 fields (%s), got %d: %q", file, num, QueueFormat, len(f), line)
		}
		submit, err := time.ParseInLocation(slurmconf.TimeLayout, f[1], loc)
		if err != nil {
			shown := f[1]
			if _, dateErr := time.Parse(time.DateOnly, f[1]); dateErr == nil {
				shown += " " + f[2] // a format such as "%F %T": the time after a space
			}
			return advice.Hinted(fmt.Errorf("%s:%d: submit time %q is not %s", file, num, shown, slurmconf.TimeLayout), timeFormatHint)
		}
		nodes, err := strconv.Atoi(f[2])
		if err != nil || nodes < 1 {
			return fmt.Errorf("%s:%d: node count %q is not a number of at least 1", file, num, f[2])
		}
		gpu, err := ParseTresPerNode(f[3])
		if err != nil {
			return fmt.Errorf("%s:%d: %v", file, num, err)
		}
		if at, dup := first[f[0]]; dup {
			return fmt.Errorf("%s:%d: job %s is given twice (first at line %d)", file, num, f[0], at)
		}
		first[f[0]] = num
		jobs = append(jobs, Job{ID: f[0], Submit: submit, Nodes: nodes, GPU: gpu, Reason: strings.Join(f[4:], " "), Line: num})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// ParseTresPerNode reads squeue's %b: "N/A" or empty for none, else a comma
// list of "name[:type][:count]", prefixed "gres:" or "gres/" from 21.08. It
// returns the gpu ones; a count left out is 1, as Slurm reads --gres=gpu.
func ParseTresPerNode(s string) ([]Request, error) {
	if s == "" || s == "N/A" || s == "(null)" {
		return nil, nil
	}
	var out []Request
	for _, item := range strings.Split(s, ",") {
		spec := strings.TrimPrefix(strings.TrimPrefix(item, "gres:"), "gres/")
		parts := strings.Split(spec, ":")
		if parts[0] != "gpu" {
			continue // another GRES (shard, mps, nic) or a TRES such as license
		}
		r := Request{Count: 1}
		switch len(parts) {
		case 1:
		case 2:
			if n, err := strconv.Atoi(parts[1]); err == nil {
				r.Count = n
			} else {
				r.Type = parts[1]
			}
		case 3:
			n, err := strconv.Atoi(parts[2])
			if err != nil {
				return nil, fmt.Errorf("GRES %q: count %q is not a number", item, parts[2])
			}
			r.Type, r.Count = parts[1], n
		default:
			return nil, fmt.Errorf("GRES %q is not name:type:count", item)
		}
		if r.Count < 1 {
			return nil, fmt.Errorf("GRES %q: count must be at least 1", item)
		}
		out = append(out, r)
	}
	return out, nil
}

// eachLine calls fn with each non-blank line of data, trimmed, and its
// number; fn's error ends the reading. A line past 1 MiB is an error
// naming file and the line.
func eachLine(file string, data []byte, fn func(num int, line string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	num := 0
	for sc.Scan() {
		num++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if err := fn(num, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %v", file, num+1, err)
	}
	return nil
}
