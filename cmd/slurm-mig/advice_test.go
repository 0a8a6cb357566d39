package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// Every fix a package can give has its words here, and they are a format
// that fmt takes whole: the package's message first, then the Fix's Args.
func TestEveryFixHasWords(t *testing.T) {
	for _, fix := range advice.Fixes() {
		words := fixWords(fix)
		if words == "" {
			t.Errorf("advice.Fix %d has no words", fix)
			continue
		}
		if !strings.Contains(words, "%s") && !strings.Contains(words, "%[1]s") {
			t.Errorf("advice.Fix %d: %q leaves out the package's message", fix, words)
		}
		// As many Args as the words name, no more: fmt says a missing
		// one as MISSING, or BADINDEX where the words number them.
		operands := []any{"MSG"}
		for said := fmt.Sprintf(words, operands...); len(operands) < 4 && (strings.Contains(said, "(MISSING)") || strings.Contains(said, "(BADINDEX)")); said = fmt.Sprintf(words, operands...) {
			operands = append(operands, "ARG")
		}
		if said := fmt.Sprintf(words, operands...); strings.Contains(said, "%!") {
			t.Errorf("advice.Fix %d: %q says %q", fix, words, said)
		}
	}
}

// explain puts a fix's words where the package's message stands, keeping
// what the callers above it said before and after; a fix within another
// fix's message is said too; an error without one is said as it is.
func TestExplain(t *testing.T) {
	inner := advice.Wrap(errors.New("s.json has no hardware"), advice.SnapshotHardware)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("plain"), "plain"},
		{fmt.Errorf("env: %w", advice.Wrap(errors.New("no device state at x.json"), advice.StateMissing)),
			"env: no device state at x.json: write it on this node with slurm-mig gen -o, node --update or state"},
		{fmt.Errorf("%w; and after", advice.Wrap(errors.New("this host's name is unknown (no)"), advice.NodeName)),
			"this host's name is unknown (no); pass --node-name; and after"},
		{advice.Wrap(errors.New("gres.conf:3: bad"), advice.GresConfUnreadable, "gres.conf"),
			"gen -o cannot tell what it would replace in gres.conf: gres.conf:3: bad"},
		{advice.Wrap(fmt.Errorf("outer: %w", inner), advice.NoScontrol),
			"--running needs scontrol: outer: s.json has no hardware; take the snapshot with slurm-mig snapshot on the node, or drop --full"},
	} {
		if got := explain(tc.err); got != tc.want {
			t.Errorf("explain(%v):\n got %s\nwant %s", tc.err, got, tc.want)
		}
	}
}
