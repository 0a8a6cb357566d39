package slurmconf

import "strings"

// HasStateWord says whether scontrol's State= (IDLE+DRAIN, DOWN*,
// MIXED+INVALID_REG) has a word that begins with one of prefixes: DRAIN
// covers DRAINING and DRAINED, POWER 21.08's POWERED_DOWN and
// POWERING_UP.
func HasStateWord(state string, prefixes ...string) bool {
	for _, w := range strings.Split(strings.TrimSuffix(state, "*"), "+") {
		for _, p := range prefixes {
			if strings.HasPrefix(w, p) {
				return true
			}
		}
	}
	return false
}

// OutOfService says whether scontrol's State= is one on which no job
// starts, whoever made it so: drained, down or failed by an admin or by
// slurmctld, a refused registration, a node that is powered off, not yet
// up or not responding (a trailing *).
func OutOfService(state string) bool {
	return strings.HasSuffix(state, "*") ||
		HasStateWord(state, "DRAIN", "DOWN", "FAIL", "MAINT", "REBOOT", "INVAL", "POWER", "FUTURE", "UNKNOWN")
}
