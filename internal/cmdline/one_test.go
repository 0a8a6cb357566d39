package cmdline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wordsCLI has the kinds of command Named and Commands tell apart.
type wordsCLI struct {
	Flag   bool     `help:"A global flag."`
	Gen    struct{} `cmd:"" help:"Visible."`
	Help   struct{} `cmd:"" whole:"" help:"Needs the whole model."`
	Secret struct{} `cmd:"" hidden:"" help:"Not shown."`
}

func TestCommands(t *testing.T) {
	if diff := cmp.Diff([]string{"gen", "help"}, Commands(wordsCLI{})); diff != "" {
		t.Errorf("Commands (-want +got):\n%s", diff)
	}
}

func TestNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gen"}, "gen"},
		{[]string{"--flag", "gen", "help"}, "gen"},
		{[]string{"help", "gen"}, ""}, // help reads the whole model
		{[]string{"gen", "--help"}, ""},
		{[]string{"gen", "-h"}, ""},
		{[]string{"gen", "--version"}, ""},
		{[]string{"gen", "-V"}, ""},
		{[]string{"gen", "--", "-V"}, "gen"},
		{[]string{"-v"}, ""},
	} {
		if got := Named(tc.args, wordsCLI{}); got != tc.want {
			t.Errorf("Named(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
