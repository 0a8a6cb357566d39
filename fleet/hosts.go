package fleet

import (
	"slices"
	"strconv"
)

// Node names sort as Slurm's hostlists sort them (hostlist_sort): by the
// text before the trailing number, then by the number, then by its width
// (n1 before n01), so that consecutive nodes meet and compress into ranges.
// A name without a trailing number comes before the numbered ones of its
// prefix.

// hostKey is a node name split for sorting.
type hostKey struct {
	prefix string
	num    uint64
	width  int // digits of the number; 0 for none
}

func splitHost(name string) hostKey {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) {
		return hostKey{prefix: name}
	}
	n, err := strconv.ParseUint(name[i:], 10, 64)
	if err != nil { // too long for a number: Slurm takes it as text
		return hostKey{prefix: name}
	}
	return hostKey{prefix: name[:i], num: n, width: len(name) - i}
}

func compareHosts(a, b hostKey) int {
	switch {
	case a.prefix != b.prefix:
		if a.prefix < b.prefix {
			return -1
		}
		return 1
	case a.width == 0 || b.width == 0:
		return a.width - b.width
	case a.num != b.num:
		if a.num < b.num {
			return -1
		}
		return 1
	}
	return a.width - b.width
}

// hostLess orders two node names.
func hostLess(a, b string) bool { return compareHosts(splitHost(a), splitHost(b)) < 0 }

// sortHosts sorts node names in place.
func sortHosts(names []string) {
	type named struct {
		key  hostKey
		name string
	}
	keys := make([]named, len(names))
	for i, n := range names {
		keys[i] = named{splitHost(n), n}
	}
	slices.SortFunc(keys, func(a, b named) int { return compareHosts(a.key, b.key) })
	for i := range keys {
		names[i] = keys[i].name
	}
}
