// Package slurmhost asks the Slurm installed on this host: which release
// it is (slurmd -V, or scontrol -V where there is no slurmd) and what the
// running slurmctld holds for a node (scontrol show node). Each command is
// run without a shell and given up, with its process group, when it does
// not answer. Package slurmconf reads Slurm's syntax and runs nothing;
// this package is where slurm-mig meets the Slurm that is running.
package slurmhost

// This file asks slurmctld about a node, through scontrol, and reads its
// answer.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Node is what slurmctld says of a node.
type Node struct {
	Gres   string // Gres= in force: slurm.conf's, or what the node reported
	State  string // IDLE, UNKNOWN+DRAIN+INVALID_REG, ...
	Reason string // why it is drained or invalid; empty when none
	// SlurmdStart is SlurmdStartTime= as scontrol prints it, in UTC when
	// ShowNode ran it; "None" or empty before a first registration.
	SlurmdStart string
}

// SlurmdStarted is SlurmdStart read as ShowNode has scontrol print it, in
// UTC; false before a first registration.
func (n Node) SlurmdStarted() (time.Time, bool) {
	t, err := time.ParseInLocation(slurmconf.TimeLayout, n.SlurmdStart, time.UTC)
	return t, err == nil
}

// ShowNode runs `scontrol show node -o NAME` and reads its answer. An
// scontrol silent for a minute (a hung slurmctld or munge) is killed, with
// its children, and that is the error: diff --running never waits for ever.
func ShowNode(name string) (Node, error) {
	return showNode(name, time.Minute)
}

// showNode is ShowNode with the time it waits for scontrol, which tests
// shorten.
func showNode(name string, timeout time.Duration) (Node, error) {
	out, err := scontrol(timeout, "scontrol show node "+name, "show", "node", "-o", name)
	if err != nil {
		return Node{}, err
	}
	return ParseNode(name, out)
}

// Drain drains the node with reason: slurmctld starts no new job there,
// and the node shows DRAINED once its jobs are done.
func Drain(name, reason string) error {
	_, err := scontrol(time.Minute, "scontrol update NodeName="+name+" State=DRAIN", "update", "NodeName="+name, "State=DRAIN", "Reason="+reason)
	return err
}

// Resume puts a drained node back in service.
func Resume(name string) error {
	_, err := scontrol(time.Minute, "scontrol update NodeName="+name+" State=RESUME", "update", "NodeName="+name, "State=RESUME")
	return err
}

// scontrol runs scontrol with args and returns its output. A missing one is
// an error with advice, a failed one says after what and what it printed,
// and one silent for timeout is killed with its children.
func scontrol(timeout time.Duration, what string, args ...string) (string, error) {
	path, err := lookSlurm("scontrol")
	if err != nil {
		// The command line says which of its flags asked slurmctld.
		return "", advice.Wrap(err, advice.NoScontrol)
	}
	stdout, stderr, err := runBounded(path, args, timeout)
	if err != nil {
		msg := scontrolMessage(string(stderr))
		if msg == "" || errors.As(err, new(*timeoutError)) {
			msg = err.Error()
		}
		return "", fmt.Errorf("%s: %s", what, msg)
	}
	return string(stdout), nil
}

// scontrolMessage makes one line of a failed scontrol's stderr: the last
// line, which ended it, then the earlier ones in parentheses, each without
// the "scontrol: ", "error: " and "fatal: " that every line repeats.
func scontrolMessage(stderr string) string {
	var lines []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		line = strings.TrimPrefix(line, "scontrol: ")
		line = strings.TrimPrefix(line, "error: ")
		line = strings.TrimPrefix(line, "fatal: ")
		if line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	last := lines[len(lines)-1]
	if len(lines) == 1 {
		return last
	}
	return last + " (" + strings.Join(lines[:len(lines)-1], "; ") + ")"
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
	// The first of each: an admin's Reason= (printed after them) may hold
	// words like State=IDLE.
	for _, field := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(field, "Gres="); ok && !found {
			n.Gres, found = v, true
		}
		if v, ok := strings.CutPrefix(field, "State="); ok && n.State == "" {
			n.State = v
		}
		if v, ok := strings.CutPrefix(field, "SlurmdStartTime="); ok && n.SlurmdStart == "" {
			n.SlurmdStart = v
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
// registration: State= INVAL (INVALID_REG from 22.05), or DRAIN with
// slurmctld's low GRES count reason, not an admin's, which is all 20.11 says.
func (n Node) RegistrationRefused() bool {
	return strings.Contains(n.State, "INVAL") ||
		strings.Contains(n.State, "DRAIN") && gresCountReason.MatchString(n.Reason)
}

// bareDirs are where Slurm's commands are looked for when PATH is empty:
// slurmd runs a Prolog and an Epilog with no PATH at all.
var bareDirs = []string{"/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/slurm/bin", "/opt/slurm/sbin", "/bin", "/sbin"}

// lookSlurm finds the Slurm command name on PATH, or, without one, in
// bareDirs.
func lookSlurm(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil || os.Getenv("PATH") != "" {
		return path, err
	}
	for _, d := range bareDirs {
		if p, e := exec.LookPath(filepath.Join(d, name)); e == nil {
			return p, nil
		}
	}
	return "", err
}
