package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// Every fix a package can give has its words here, before the package's
// message or after it, and they are a format that fmt takes whole with
// the Fix's Args.
func TestEveryFixHasWords(t *testing.T) {
	for _, fix := range advice.Fixes() {
		before, after := fixWords(fix)
		if (before == "") == (after == "") {
			t.Errorf("advice.Fix %d: words %q before and %q after; want one of them", fix, before, after)
			continue
		}
		words := before + after
		// As many Args as the words name, no more: fmt says a missing
		// one as MISSING, or BADINDEX where the words number them.
		var operands []any
		for said := fmt.Sprintf(words, operands...); len(operands) < 3 && (strings.Contains(said, "(MISSING)") || strings.Contains(said, "(BADINDEX)")); said = fmt.Sprintf(words, operands...) {
			operands = append(operands, "ARG")
		}
		if said := fmt.Sprintf(words, operands...); strings.Contains(said, "%!") {
			t.Errorf("advice.Fix %d: %q says %q", fix, words, said)
		}
	}
}

// say puts a fix's words after the whole message (or before it, where
// they name what the command line was doing), and a package's own hint
// (advice.Hinted) after it too; a fix within another fix's message is
// said too, its hint first; an error without one is said as it is.
func TestSay(t *testing.T) {
	inner := advice.Wrap(errors.New("s.json has no hardware"), advice.SnapshotHardware)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("plain"), "plain"},
		{fmt.Errorf("env: %w", advice.Wrap(errors.New("no device state at x.json"), advice.StateMissing)),
			"env: no device state at x.json: write it on this node with slurm-mig gen -o, node --update or state"},
		{advice.Wrap(errors.New("gres.conf:3: bad"), advice.GresConfUnreadable, "gres.conf"),
			"gen -o cannot tell what it would replace in gres.conf: gres.conf:3: bad"},
		{advice.Wrap(fmt.Errorf("outer: %w", inner), advice.NoScontrol),
			"--running needs scontrol: outer: s.json has no hardware; take the snapshot with slurm-mig snapshot on the node, or drop --full"},
		{fmt.Errorf("a.conf: %w", advice.Hinted(errors.New("set in an Included file"), "; set it there by hand")),
			"a.conf: set in an Included file; set it there by hand"},
		{advice.Wrap(advice.Hinted(errors.New("GPUs 0, 1 all get type a100"), "; one"), advice.TypeMap),
			"GPUs 0, 1 all get type a100; one; use --type-map NAME=TYPE to tell them apart"},
	} {
		if got := say(tc.err); got != tc.want {
			t.Errorf("say(%v):\n got %s\nwant %s", tc.err, got, tc.want)
		}
	}
}

// state --from without --state says the fact, and what to pass apart.
func TestStateFromWithoutStateCarriesItsHint(t *testing.T) {
	t.Setenv("SLURM_MIG_STATE", "/nonexistent/devices.json")
	err := (&stateCmd{sourceFlags: sourceFlags{From: "s.json"}}).Run(nil)
	var h advice.Hinter
	if err == nil || err.Error() != "state --from writes the snapshot's devices" || !errors.As(err, &h) ||
		h.Hint() != ": name the file with --state (the default, /nonexistent/devices.json, is this node's own state, which env reads)" {
		t.Errorf("err %v; want the fact, and the hint apart", err)
	}
}
