package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// The packages below cmd say what is wrong without naming a flag, and
// mark what would help with an advice.Fix; the words of each Fix are
// here, beside the flags they name, so that a flag renamed or dropped
// changes every message that advises it.

// fixWords are the words of a Fix: a format whose first operand is the
// message of the package that found the problem, and whose others are
// the Fix's Args (advice.Error). Most put a hint after the message; a
// writer that refuses to replace a file names itself around it.
func fixWords(fix advice.Fix) string {
	switch fix {
	case advice.Snapshot:
		return "%s (use --from SNAPSHOT on hosts without it)"
	case advice.NodeName:
		return "%s; pass --node-name"
	case advice.SnapshotNodeName:
		return "%s: pass --node-name"
	case advice.AllowEmpty:
		return "%s (pass --allow-empty if this node really has none)"
	case advice.TypeMap:
		return "%s; use --type-map NAME=TYPE to tell them apart"
	case advice.SnapshotCores:
		return "%s (slurm-mig snapshot on the node records them; --no-cores leaves Cores= out without this warning)"
	case advice.SnapshotHardware:
		return "%s; take the snapshot with slurm-mig snapshot on the node, or drop --full"
	case advice.SlurmVersion:
		return "%s (--slurm-version names it)"
	case advice.StateNotWritten:
		return "%s (slurm-mig env needs the device state; --no-state if this node runs no TaskProlog)"
	case advice.StateMissing:
		return "%s: write it on this node with slurm-mig gen -o, node --update or state"
	case advice.StateBeforeReboot:
		return "%s: rewrite it with slurm-mig gen -o or state"
	case advice.StateStale:
		return "%s: rewrite it with gen -o, node --update or state"
	case advice.FragmentNodeName:
		return "%s (run gen without --no-node-name)"
	case advice.GresConfNodeAlias:
		return "%s: pass --node-name %s if slurm.conf names this node so, else gres.conf must say NodeName=%s"
	case advice.GresConfNodeName:
		return "%s: pass --node-name with the name slurm.conf gives this node"
	case advice.NoScontrol:
		return "--running needs scontrol: %s"
	case advice.OutputIsInput:
		return "%s (-o): a merged file among the fragments would be read back as one next time; write it elsewhere"
	case advice.GresConfForeignLine:
		return "%s, which gen -o does not write: it replaces the whole file, so it refuses to drop the line (keep such lines in a gres.conf of your own that Includes a file gen -o writes, or move %s away)"
	case advice.GresConfRenamed:
		return "%s: has the node been renamed? gen -o leaves the file as it is; pass --node-name %[3]s to keep the old name, or move %[2]s away to write it for %[4]s"
	case advice.GresConfUnreadable:
		return "gen -o cannot tell what it would replace in %[2]s: %[1]s"
	case advice.NodeLineForeignLine:
		return "%s, which node -o does not write: it replaces the whole file, so it refuses to drop it (node --update sets Gres= in place; or move %s away)"
	case advice.NodeLineUnreadable:
		return "node -o cannot tell what it would replace in %[2]s: %[1]s"
	case advice.ClusterGresConfForeignLine:
		return "%s, which merge -o does not write: it replaces the whole file, so it refuses to drop the line (keep such lines in a gres.conf of your own that Includes a file merge -o writes, or move %s away)"
	case advice.ClusterGresConfUnreadable:
		return "merge -o cannot tell what it would replace in %[2]s: %[1]s"
	case advice.ClusterNodeLinesForeignLine:
		return "%s, which merge --node-lines -o does not write: it replaces the whole file, so it refuses to drop it (keep such lines in a file of your own, or move %s away)"
	case advice.ClusterNodeLinesUnreadable:
		return "merge --node-lines -o cannot tell what it would replace in %[2]s: %[1]s"
	case advice.ParentEnded:
		return "%s; pass --pid"
	case advice.JobProcess:
		return "--pid %[2]v: %[1]s"
	case advice.JobProcessOwner:
		return "--pid %[2]v %[1]s"
	case advice.Count:
		return "--count %[2]v, but %[1]s"
	}
	return ""
}

// explain says err as the admin reads it: where a package below gave its
// message a Fix (advice.Error), the Fix's words go in around that
// message, right where it stands within err's, so that the prefixes of
// the callers above it ("env: ") stay where they were. A Fix within the
// message of another is said too.
func explain(err error) string {
	msg := err.Error()
	var a *advice.Error
	if !errors.As(err, &a) {
		return msg
	}
	words := fixWords(a.Fix)
	own := a.Error()
	at := strings.LastIndex(msg, own)
	if words == "" || at < 0 {
		return msg
	}
	said := fmt.Sprintf(words, append([]any{explain(a.Err)}, a.Args...)...)
	return msg[:at] + said + msg[at+len(own):]
}
