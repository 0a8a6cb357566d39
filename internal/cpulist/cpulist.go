// Package cpulist reads and writes lists of ids in the form Linux's sysfs
// cpulists and Slurm's Cores= both use: "0-3,8,10-11". It is its own
// package because the node's topology, the model's checks and Slurm's
// syntax all read that form, and none of them owns it.
package cpulist

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxID bounds the ids Parse accepts, so that a stray "0-4000000000"
// cannot allocate gigabytes. Linux's NR_CPUS tops out at 8192 today; Slurm
// keeps CPU ids in 16 bits.
const MaxID = 1<<16 - 1

// Parse parses the Linux cpulist format ("0-3,8,10-11") used in sysfs
// and by NVML-derived affinity strings. Surrounding white space (sysfs files
// end in a newline) is ignored, and an empty list is the empty set. The ids
// come back sorted, without duplicates. Items must be N or N-M with N <= M and
// M <= 65535; the kernel's stride form (N-M:S/G) is not accepted.
func Parse(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	ids := []int{}
	if s == "" {
		return ids, nil
	}
	for _, item := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := parseCPUID(lo)
		if err != nil {
			return nil, fmt.Errorf("cpulist %q: item %q: %w", s, item, err)
		}
		last := first
		if isRange {
			if last, err = parseCPUID(hi); err != nil {
				return nil, fmt.Errorf("cpulist %q: item %q: %w", s, item, err)
			}
			if last < first {
				return nil, fmt.Errorf("cpulist %q: item %q: range runs backwards", s, item)
			}
		}
		for id := first; id <= last; id++ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// parseCPUID parses one decimal CPU id: digits only, no sign or spaces.
func parseCPUID(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a CPU id", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > MaxID {
		return 0, fmt.Errorf("CPU id %s is over %d", s, MaxID)
	}
	return n, nil
}

// Format writes ints as a compact range list, "0-15,32-47", the form both
// Linux cpulists and Slurm's bit_fmt use (a run of two is "4-5"). The input
// need not be sorted or unique; nil or empty gives "".
func Format(ids []int) string {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}
