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

// Parse parses a Linux cpulist ("0-3,8,10-11") into sorted, distinct ids,
// ignoring surrounding white space; "" is the empty set. Items are N or N-M
// with N <= M <= 65535; the kernel's stride form (N-M:S/G) is refused.
func Parse(s string) ([]int, error) {
	ids := []int{}
	err := eachRange(s, func(first, last int) {
		for id := first; id <= last; id++ {
			ids = append(ids, id)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Check says of s what Parse would, without making the list: the model's
// checks read the lists of a fleet's 80,000 GPUs only to refuse a bad one.
func Check(s string) error {
	return eachRange(s, func(int, int) {})
}

// eachRange calls visit with each item of the list s, first and last id.
func eachRange(s string, visit func(first, last int)) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	for item := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := parseCPUID(lo)
		if err != nil {
			return fmt.Errorf("cpulist %q: item %q: %w", s, item, err)
		}
		last := first
		if isRange {
			if last, err = parseCPUID(hi); err != nil {
				return fmt.Errorf("cpulist %q: item %q: %w", s, item, err)
			}
			if last < first {
				return fmt.Errorf("cpulist %q: item %q: range runs backwards", s, item)
			}
		}
		visit(first, last)
	}
	return nil
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
