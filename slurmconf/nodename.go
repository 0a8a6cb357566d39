package slurmconf

import (
	"fmt"
	"strings"
)

// CheckNodeName says why name cannot stand as one node name in a NodeName=
// of gres.conf or slurm.conf (what would end, split or quote the value,
// DEFAULT, non-ASCII), or nil when it can.
func CheckNodeName(name string) error {
	if name == "" {
		return fmt.Errorf("empty node name")
	}
	if strings.EqualFold(name, "DEFAULT") {
		return fmt.Errorf("node name %q: NodeName=DEFAULT is slurm.conf's line of defaults, not a node", name)
	}
	for i := 0; i < len(name); i++ {
		if why := nodeNameByte(name[i]); why != "" {
			return fmt.Errorf("node name %q: %s, so Slurm would not read it as one node name", name, why)
		}
	}
	return nil
}

// nodeNameByte says what is wrong with c in a node name, or "".
func nodeNameByte(c byte) string {
	switch {
	case c == ' ' || c == '\t':
		return "a blank ends a value in Slurm's config files"
	case c < 0x20 || c == 0x7f:
		return fmt.Sprintf("control character %q", c)
	case c >= 0x80:
		return "non-ASCII bytes are no part of a host name"
	}
	switch c {
	case '#':
		return "'#' starts a comment in Slurm's config files"
	case '=':
		return "'=' would make a second key=value"
	case ',':
		return "',' separates node names in a hostlist"
	case '[', ']':
		return fmt.Sprintf("%q is hostlist range syntax", c)
	case '"', '\'':
		return "quotes are config-file syntax"
	case '\\':
		return "'\\' escapes the next character in Slurm's config files"
	}
	return ""
}
