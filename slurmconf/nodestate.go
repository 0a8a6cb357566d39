package slurmconf

import "strings"

// HasStateWord says whether scontrol's State= (IDLE+DRAIN, DOWN*) has a
// word that begins with one of prefixes: DRAIN covers DRAINING and
// DRAINED, POWER 21.08's POWERED_DOWN and POWERING_UP.
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

// OutOfService says whether scontrol's State= is one on which no job starts,
// whoever made it so: drained, down, failed, registration refused, powered
// off or not responding, or any base state but IDLE, MIXED and ALLOCATED.
func OutOfService(state string) bool {
	base, _, _ := strings.Cut(strings.TrimSuffix(state, "*"), "+")
	return NotResponding(state) || (base != "IDLE" && base != "MIXED" && base != "ALLOCATED") ||
		HasStateWord(state, "DRAIN", "FAIL", "MAINT", "REBOOT", "INVAL", "POWER")
}

// NotResponding says whether scontrol's State= is of a node slurmctld
// hears nothing from: IDLE+NOT_RESPONDING as scontrol prints it from
// 21.08, IDLE* as sinfo (and scontrol before) does.
func NotResponding(state string) bool {
	return strings.HasSuffix(state, "*") || HasStateWord(state, "NOT_RESPONDING")
}
