package cmdline

import (
	"errors"
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
)

// ParseFunc parses args into target, a pointer to a kong CLI struct.
type ParseFunc func(target any, args []string) (*kong.Context, error)

// One parses args into whole (a pointer to a kong CLI struct) by a model of
// its global flags and the named command only, then calls its Validate. Its
// error (help, --version, whole:"", a failure) means: reparse with the whole.
func One(whole any, args []string, parse ParseFunc) (*kong.Context, error) {
	wv := reflect.ValueOf(whole).Elem()
	named := Named(args, wv.Interface())
	if named == "" {
		return nil, errors.New("no command to parse alone")
	}
	t := wv.Type()
	var fields []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if _, isCommand := f.Tag.Lookup("cmd"); isCommand && strings.ToLower(f.Name) != named {
			continue
		}
		f.Index, f.Offset = nil, 0
		fields = append(fields, f)
	}
	part := reflect.New(reflect.StructOf(fields)).Elem()
	ctx, err := parse(part.Addr().Interface(), args)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		wv.FieldByName(f.Name).Set(part.FieldByName(f.Name))
	}
	if v, ok := whole.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, err // the whole model reports it
		}
	}
	return ctx, nil
}

// Named is the first word of args before -- that names a command of cli (a
// kong CLI struct; a command is named after its field, in lower case), or ""
// if none, if it is tagged whole:"", or if -h/--help/-V/--version precede --.
func Named(args []string, cli any) string {
	commands := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(cli)) {
		if _, ok := f.Tag.Lookup("cmd"); ok {
			_, whole := f.Tag.Lookup("whole")
			commands[strings.ToLower(f.Name)] = !whole // may be parsed alone
		}
	}
	named := ""
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-V" || a == "--version" {
			return ""
		}
		if alone, isCommand := commands[a]; isCommand && named == "" {
			if !alone {
				return ""
			}
			named = a
		}
	}
	return named
}

// Commands are the names of cli's commands that --help shows (a kong CLI
// struct; a command's name is its field's, in lower case, as Named reads
// it), in their order: the words `help COMMAND` takes.
func Commands(cli any) []string {
	var names []string
	for _, f := range reflect.VisibleFields(reflect.TypeOf(cli)) {
		_, isCommand := f.Tag.Lookup("cmd")
		_, hidden := f.Tag.Lookup("hidden")
		if isCommand && !hidden {
			names = append(names, strings.ToLower(f.Name))
		}
	}
	return names
}
