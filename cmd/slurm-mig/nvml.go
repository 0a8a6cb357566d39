package main

import (
	"reflect"
	"strings"
)

// readsNVML guesses, before the command line is parsed, whether the run
// will read NVML: a command tagged nvml:"" in cli, with no --from, --help
// or --version. The guess only decides when Init starts; kong's parse
// alone decides what runs. A wrong "no" costs the overlap; a wrong "yes"
// (flag values that look like commands, a command line kong rejects)
// costs one unused Init, never a different result.
func readsNVML(args []string) bool {
	commands := nvmlCommands()
	command := false
	for _, a := range args {
		switch {
		case a == "--":
			return command
		case a == "-h" || a == "--help" || a == "--version" || a == "--from" || strings.HasPrefix(a, "--from="):
			return false
		case commands[a]:
			command = true
		}
	}
	return command
}

// nvmlCommands are the names of cli's commands tagged nvml:"", read from
// the one definition of the command line, in microseconds (building
// kong's parser takes 1-2 ms).
func nvmlCommands() map[string]bool {
	t := reflect.TypeOf(cli{})
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("nvml"); !ok {
			continue
		}
		name := f.Tag.Get("name")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		names[name] = true
	}
	return names
}
