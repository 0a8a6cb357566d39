package claim

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/discover"
)

// Item 6: a refusal prints what another user wrote in their claim
// escaped: no escape sequence of theirs reaches the terminal.
func TestAttackEscapes(t *testing.T) {
	a := newAttackers(t)
	dir := filepath.Join(a.base, "claims")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	evil := "\x1b[2K\r\x1b[32mMIG-a is yours\x1b[0m"
	a.start(t, nobody, "claim", dir, "MIG-a", evil)
	devs := []Device{{GPU: &discover.GPU{}, Mig: &discover.MigDevice{UUID: "MIG-a"}}}
	_, err = take(d, devs, Request{Count: 1, Command: "test", Timeout: time.Second})
	var refused *NoneIdleError
	if !errors.As(err, &refused) {
		t.Fatalf("got %v, want a refusal", err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\x1b\r") || !strings.Contains(msg, `by job "\x1b[2K\r\x1b[32mMIG-a is yours\x1b[0m"`) {
		t.Errorf("refusal %q: want the job printed escaped", msg)
	}
}

// Job ids as schedulers make them print as they are; anything else is
// quoted.
func TestQuoted(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"5512":               "5512",
		"1234[5]":            "1234[5]",
		"1234.pbs01.cluster": "1234.pbs01.cluster",
		"77_3":               "77_3",
		"5512, 5518; bob: 2": `"5512, 5518; bob: 2"`,
		"a\x1b[2Kb\r":        `"a\x1b[2Kb\r"`,
		"é":                  `"\u00e9"`,
		"\xff":               `"\xff"`,
	} {
		if got := quoted(in); got != want {
			t.Errorf("quoted(%q) = %s, want %s", in, got, want)
		}
	}
}
