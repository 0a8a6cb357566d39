// Package scontrol asks the running slurmctld about a node, through the
// scontrol command run without a shell, and reads its answer.
package scontrol

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/child"
)

// Node is what slurmctld says of a node.
type Node struct {
	Gres   string // Gres= in force: slurm.conf's, or what the node reported
	State  string // IDLE, UNKNOWN+DRAIN+INVALID_REG, ...
	Reason string // why it is drained or invalid; empty when none
}

// ShowNode runs `scontrol show node -o NAME` and reads its answer. An
// scontrol that has not answered in a minute (a slurmctld that takes the
// connection and never replies, a hung munge) is killed, with any child
// it started, and that is the error: diff --running never waits for ever.
func ShowNode(name string) (Node, error) {
	return showNode(name, time.Minute)
}

// showNode is ShowNode with the time it waits for scontrol, which tests
// shorten.
func showNode(name string, timeout time.Duration) (Node, error) {
	path, err := exec.LookPath("scontrol")
	if err != nil {
		return Node{}, fmt.Errorf("--running needs scontrol: %w", err)
	}
	stdout, stderr, err := child.Run(path, []string{"show", "node", "-o", name}, timeout)
	if err != nil {
		msg := strings.Join(strings.Fields(string(stderr)), " ")
		if msg == "" || errors.As(err, new(*child.TimeoutError)) {
			msg = err.Error()
		}
		return Node{}, fmt.Errorf("scontrol show node %s: %s", name, msg)
	}
	return ParseNode(name, string(stdout))
}

// reasonField is Reason='s value: free text, up to the next key or the
// end of the line.
var reasonField = regexp.MustCompile(`(?:^| )Reason=(.*?)(?: [A-Z][A-Za-z]*=|$)`)

// ParseNode reads the one-line answer of `scontrol show node -o NAME`:
// key=value words, where some values (OS=, Reason=) hold blanks. A Gres=
// word is required; "(null)" as Reason means none.
func ParseNode(name, out string) (Node, error) {
	var n Node
	out = strings.TrimSpace(out)
	found := false
	for _, field := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(field, "Gres="); ok {
			n.Gres, found = v, true
		}
		if v, ok := strings.CutPrefix(field, "State="); ok {
			n.State = v
		}
	}
	if !found {
		return n, fmt.Errorf("scontrol show node %s: no Gres= in its answer", name)
	}
	if m := reasonField.FindStringSubmatch(out); m != nil && m[1] != "(null)" {
		n.Reason = m[1]
	}
	return n, nil
}

// gresCountReason is the Reason= slurmctld gives a node whose
// registration it refused for too few GRES ("gres/gpu count reported
// lower than configured (14 < 15)", "gpu:a100 count too low (1 < 2)").
var gresCountReason = regexp.MustCompile(`count (reported lower than configured|too low) \(\d+ < \d+\)`)

// RegistrationRefused reports whether slurmctld refused the node's
// registration: State= INVAL (22.05 on say INVALID_REG), or DRAIN with
// slurmctld's reason for a GRES count below slurm.conf's, which is all
// 20.11 says. An admin's drain, with a reason of the admin's, is not.
func (n Node) RegistrationRefused() bool {
	return strings.Contains(n.State, "INVAL") ||
		strings.Contains(n.State, "DRAIN") && gresCountReason.MatchString(n.Reason)
}
