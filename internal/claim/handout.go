package claim

import "github.com/slurm-mig/slurm-mig/internal/claim/holder"

// HolderArg is the hidden first argument that makes slurm-mig a claim
// holder (see Hold). It is not a command of the CLI.
const HolderArg = holder.Arg

// Hold is a claim holder's whole life (see holder.Hold); it returns the
// exit code.
func Hold(args []string) int {
	return holder.Hold(args, func(pid int, start uint64) holder.Job { return Job{PID: pid, Start: start} })
}

// Dial reaches the job's holder, or starts it, before the call chooses
// devices; the call hands its claim's files out through the link
// (holder.Link.HandOut). warn is told when another user blocks the way.
func Dial(job Job, argv0 string, warn func(string)) *holder.Link {
	return holder.Dial(job, argv0, warn, userName)
}
