package main

import (
	"fmt"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// The words of each advice.Fix are here, beside the flags they name, so
// that a flag renamed or dropped changes every message that advises it.

// fixWords are the words of a Fix, formats of its Args (advice.Error):
// a hint said after the package's message, or, for a Fix that names what
// the command line was doing, words said before it.
func fixWords(fix advice.Fix) (before, after string) {
	switch fix {
	case advice.Snapshot:
		return "", " (use --from SNAPSHOT on hosts without it)"
	case advice.NodeName:
		return "", "; pass --node-name"
	case advice.SnapshotNodeName:
		return "", ": pass --node-name"
	case advice.AllowEmpty:
		return "", " (pass --allow-empty if this node really has none)"
	case advice.TypeMap:
		return "", "; use --type-map NAME=TYPE to tell them apart"
	case advice.SnapshotCores:
		return "", " (slurm-mig snapshot on the node records them; --no-cores leaves Cores= out without this warning)"
	case advice.SnapshotHardware:
		return "", "; take the snapshot with slurm-mig snapshot on the node, or drop --full"
	case advice.SlurmVersion:
		return "", " (--slurm-version names it)"
	case advice.StateNotWritten:
		return "", " (slurm-mig env needs the device state; --no-state if this node runs no TaskProlog)"
	case advice.StateMissing:
		return "", ": write it on this node with slurm-mig gen -o, node --update or state"
	case advice.StateBeforeReboot:
		return "", ": rewrite it with slurm-mig gen -o or state"
	case advice.StateStale:
		return "", ": rewrite it with gen -o, node --update or state"
	case advice.FragmentNodeName:
		return "", " (run gen without --no-node-name)"
	case advice.GresConfNodeAlias:
		return "", ": pass --node-name %s if slurm.conf names this node so, else gres.conf must say NodeName=%s"
	case advice.GresConfNodeName:
		return "", ": pass --node-name with the name slurm.conf gives this node"
	case advice.NoScontrol:
		return "--running needs scontrol: ", ""
	case advice.OutputIsInput:
		return "", " (-o): a merged file among the fragments would be read back as one next time; write it elsewhere"
	case advice.GresConfForeignLine:
		return "", ", which gen -o does not write: it replaces the whole file, so it refuses to drop the line (keep such lines in a gres.conf of your own that Includes a file gen -o writes, or move %s away)"
	case advice.GresConfRenamed:
		return "", ": has the node been renamed? gen -o leaves the file as it is; pass --node-name %[2]s to keep the old name, or move %[1]s away to write it for %[3]s"
	case advice.GresConfUnreadable:
		return "gen -o cannot tell what it would replace in %s: ", ""
	case advice.NodeLineForeignLine:
		return "", ", which node -o does not write: it replaces the whole file, so it refuses to drop it (node --update sets Gres= in place; or move %s away)"
	case advice.NodeLineUnreadable:
		return "node -o cannot tell what it would replace in %s: ", ""
	case advice.ClusterGresConfForeignLine:
		return "", ", which merge -o does not write: it replaces the whole file, so it refuses to drop the line (keep such lines in a gres.conf of your own that Includes a file merge -o writes, or move %s away)"
	case advice.ClusterGresConfUnreadable:
		return "merge -o cannot tell what it would replace in %s: ", ""
	case advice.ClusterNodeLinesForeignLine:
		return "", ", which merge --node-lines -o does not write: it replaces the whole file, so it refuses to drop it (keep such lines in a file of your own, or move %s away)"
	case advice.ClusterNodeLinesUnreadable:
		return "merge --node-lines -o cannot tell what it would replace in %s: ", ""
	case advice.ParentEnded:
		return "", "; pass --pid"
	case advice.JobProcess:
		return "--pid %v: ", ""
	case advice.JobProcessOwner:
		return "--pid %v ", ""
	case advice.Count:
		return "--count %v, but ", ""
	}
	return "", ""
}

// words formats a Fix's words with its Args; "" stays "".
func words(format string, args []any) string {
	if format == "" {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// say is err as the admin reads it: the message, then the hints of err's
// tree (advice.Hinter, a Fix's words), the innermost first; a Fix that
// names what the command line was doing goes before the message.
func say(err error) string {
	before, after := hints(err)
	return before + err.Error() + after
}

// hints are the words of err's tree that say goes before and after its
// message, depth first as errors.As walks it (kong joins a command's
// error with its own).
func hints(err error) (before, after string) {
	var b, a string
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			ib, ia := hints(inner)
			b, a = b+ib, a+ia
		}
	case interface{ Unwrap() error }:
		b, a = hints(e.Unwrap())
	}
	switch e := err.(type) {
	case *advice.Error:
		fb, fa := fixWords(e.Fix)
		return words(fb, e.Args) + b, a + words(fa, e.Args)
	case advice.Hinter:
		return b, a + e.Hint()
	}
	return b, a
}
