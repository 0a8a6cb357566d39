package main

import (
	"reflect"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/cmdline"
)

// Which commands read NVML is a fact of this command line, not of the
// loader: a command's field in cli is tagged nvml:"" when it reads NVML
// unless given --from. run starts NVML's Init early for those commands.

// readsNVML guesses before parsing whether args run a command tagged
// nvml:"" without --from or --assign, so Init overlaps the parser's build
// (docs/performance.md); a wrong guess never changes a result.
func readsNVML(args []string, cli any) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		// --from reads a snapshot, and plan --assign a fleet's snapshots,
		// in place of this node's NVML.
		for _, flag := range []string{"--from", "--assign"} {
			if a == flag || strings.HasPrefix(a, flag+"=") {
				return false
			}
		}
	}
	return nvmlCommands(cli)[cmdline.Named(args, cli)]
}

// nvmlCommands are the names of cli's commands tagged nvml:"" (single
// words: the field's name in lower case).
func nvmlCommands(cli any) map[string]bool {
	names := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(cli)) {
		if _, ok := f.Tag.Lookup("nvml"); ok {
			names[strings.ToLower(f.Name)] = true
		}
	}
	return names
}
