package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/cmdline"
)

// TestParseOne: through cmdline.One, a command line parsed with the model of its command alone
// gives what the whole model gives; what the part cannot take (errors,
// help, a command's name as a flag's value before the command) it leaves
// to the whole.
func TestParseOne(t *testing.T) {
	app := (&env{stdout: io.Discard, stderr: io.Discard, version: "test"}).app()
	for _, args := range [][]string{
		{"free"},
		{"free", "--from", "n.json", "--count", "2", "--profile", "1g.10gb", "--claims", "/c", "--pid", "5"},
		{"--root", "r", "--timeout", "5s", "free", "--from=n.json"},
		{"--root", "free", "free"},
		{"exec", "--count", "2", "--", "sh", "-c", "echo free"},
		{"list", "--from", "n.json"},
		{"gen", "--compact", "--from", "n.json"},
		{"node", "--full", "--update", "slurm.conf"},
		{"diff", "--running"},
		{"env", "--state", "s.json"},
		{"state", "--json"},
		{"snapshot"},
		{"merge", "--node-lines", "a.conf", "b.conf", "-o", "-"},
	} {
		var whole, part cli
		wctx, err := app.Parse(&whole, args)
		if err != nil {
			t.Fatalf("%q: whole model: %v", args, err)
		}
		pctx, err := cmdline.One(&part, args, app.Parse)
		if err != nil {
			t.Errorf("%q: model of one command: %v", args, err)
			continue
		}
		if pctx.Command() != wctx.Command() {
			t.Errorf("%q: model of one command runs %s, the whole %s", args, pctx.Command(), wctx.Command())
		}
		// The global flags and the command's own (the whole model also
		// fills in other commands' defaults).
		command := strings.Fields(wctx.Command())[0]
		pv, wv := reflect.ValueOf(part), reflect.ValueOf(whole)
		for i := 0; i < pv.NumField(); i++ {
			f := pv.Type().Field(i)
			if _, isCommand := f.Tag.Lookup("cmd"); isCommand && strings.ToLower(f.Name) != command {
				continue
			}
			if p, w := pv.Field(i).Interface(), wv.Field(i).Interface(); !reflect.DeepEqual(p, w) {
				t.Errorf("%q: %s: model of one command %+v, whole model %+v", args, f.Name, p, w)
			}
		}
	}
	for _, args := range [][]string{
		{},
		{"lst"},
		{"free", "--bogus"},
		{"--timeout", "0", "list"},
		{"--root", "exec", "free"}, // misread (exec is --root's), so left to the whole model
		{"--root", "list", "free"},
		{"free", "--help"},
		{"--version", "free"},
		{"docs", "man"}, // reads the whole model
	} {
		if _, err := cmdline.One(&cli{}, args, app.Parse); err == nil {
			t.Errorf("%q: taken by the model of one command, want it left to the whole", args)
		}
	}
}
