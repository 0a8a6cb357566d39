package main

import "testing"

func TestReadsNVML(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"gen"}, true},
		{[]string{"--root", "/x", "gen", "--compact", "-o", "/etc/slurm/gres.conf"}, true},
		{[]string{"node", "--update", "/etc/slurm/slurm.conf"}, true},
		{[]string{"diff", "--running"}, true},
		{[]string{"list"}, true},
		{[]string{"snapshot"}, true},
		{[]string{"gen", "--from", "snap.json"}, false},
		{[]string{"gen", "--from=snap.json"}, false},
		{[]string{"diff", "--from", "snap.json", "--gres-conf", "g"}, false},
		{[]string{"gen", "--help"}, false},
		{[]string{"gen", "-h"}, false},
		{[]string{"--version"}, false},
		{[]string{}, false},
		{[]string{"--help"}, false},
		{[]string{"gen", "--", "--from"}, true}, // after --, nothing is a flag
		{[]string{"frobnicate"}, false},
	} {
		if got := readsNVML(tc.args); got != tc.want {
			t.Errorf("readsNVML(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
