package rebalance

import (
	"strings"
	"testing"
	"time"
)

// queueLine is one line of QueueFormat's output for a pending job, as
// squeue prints its fields: %i the id, %V the submit time, %D the nodes,
// %b the GRES per node, %r the pending reason (%R: "(reason)").
func queueLine(t *testing.T, id string, submit time.Time, gres, reason string) string {
	t.Helper()
	format := QueueFormat[strings.Index(QueueFormat, "'")+1 : strings.LastIndex(QueueFormat, "'")]
	return strings.NewReplacer("%i", id, "%V", submit.Format("2006-01-02T15:04:05"), "%D", "1", "%b", gres,
		"%r", reason, "%R", "("+reason+")").Replace(format)
}

// squeue --states=PD lists every pending job, whatever keeps it pending:
// a job held by its user (sbatch --hold, scontrol hold: JobHeldUser) or
// an admin (JobHeldAdmin), one waiting for another job (Dependency) or a
// start time (BeginTime), array tasks beyond the array's throttle
// (JobArrayTaskLimit: squeue -r prints every task of 123_[1-100%5] and
// drops the %5, src/squeue/print.c), a job over a limit of its QOS
// (QOSMaxGRESPerUser). The repository's own TestRebalanceReadsSlurm
// submits its jobs with --hold and squeue lists them with these fields.
//
// None of them starts whatever the layout. Before QueueFormat asked for
// the reason (%r), rebalance took each as demand: the admin saw "gpu01:
// apply all-3g.40gb ... starts jobs 101,...", drained gpu01 and re-laid it
// out for jobs that stayed pending; and --explain said of a held job
// "busy: ... the job waits for a running job to end". The proposal leaves
// gpu01 alone, and --explain names the reason.
func TestBlockedJobsAreNoDemand(t *testing.T) {
	var text strings.Builder
	reasons := []string{"JobHeldUser", "JobHeldAdmin", "Dependency", "BeginTime", "JobArrayTaskLimit", "QOSMaxGRESPerUser"}
	for i, reason := range reasons {
		text.WriteString(queueLine(t, "10"+string(rune('1'+i)), now.Add(-time.Hour), "gres/gpu:h100_3g.40gb:1", reason) + "\n")
	}
	js, err := ParseQueue("q.txt", []byte(text.String()), time.UTC)
	if err != nil {
		t.Fatalf("%v\n(QueueFormat %s reads no pending reason: squeue lists held, dependent and throttled jobs with --states=PD)", err, QueueFormat)
	}
	p := Propose([]Node{node("gpu01", "h100_1g.10gb:7", "")}, js, lim)
	check(t, p) // no change: none of these jobs would start
	states, err := ParseNodes("nodes.txt", []byte(
		"NodeName=gpu02 Gres=gpu:h100_3g.40gb:2 State=MIXED GresUsed=gpu:h100_3g.40gb:2(IDX:0-1) AllocTRES=cpu=2\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range Explain(states, js, map[string]Slices{"gpu02": {Profiles: map[string]int{"3g.40gb": 4}, Whole: 8, GPUs: 1}}) {
		if !strings.Contains(e.Detail, reasons[i]) {
			t.Errorf("job %s, pending for %s: %s: %s\nwant the reason said, not a wait for devices", e.Job, reasons[i], e.Why, e.Detail)
		}
	}
}
