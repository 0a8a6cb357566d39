package slurmconf

import "testing"

// The states are scontrol's own, as the real-Slurm tests meet them on
// 20.11 to 26.05.
func TestOutOfService(t *testing.T) {
	for state, want := range map[string]bool{
		"IDLE":                       false,
		"MIXED":                      false,
		"ALLOCATED":                  false,
		"IDLE+COMPLETING":            false,
		"MIXED+RESERVED":             false,
		"IDLE+DRAIN":                 true,
		"MIXED+DRAIN":                true,
		"DRAINING":                   true,
		"IDLE*":                      true,
		"DOWN*":                      true,
		"UNKNOWN+DRAIN+INVALID_REG":  true,
		"IDLE+INVALID_REG":           true,
		"IDLE+POWERED_DOWN":          true,
		"IDLE+POWERING_UP":           true,
		"FUTURE":                     true,
		"IDLE+MAINTENANCE+RESERVED":  true,
		"ALLOCATED+REBOOT_REQUESTED": true,
		"MIXED+FAIL":                 true,
		"IDLE+CLOUD":                 false,
		"IDLE+PLANNED":               false,
		"IDLE+NOT_RESPONDING":        true,
		"MIXED+NOT_RESPONDING":       true,
		"ERROR":                      true,
		"BOGUS":                      true,
		"":                           true,
	} {
		if got := OutOfService(state); got != want {
			t.Errorf("OutOfService(%q) = %v, want %v", state, got, want)
		}
	}
	if HasStateWord("IDLE+PLANNED", "COMPLETING") || !HasStateWord("IDLE+PLANNED", "COMPLETING", "PLANNED") {
		t.Error("HasStateWord does not read IDLE+PLANNED's words")
	}
}
