package slurmconf

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzHostlistRoundTrip in hostlist_test.go already checks that, for any
// expression ExpandHostlist accepts, CompressHostlist of the names expands
// back to the same names in the same order. It is left as it is; what it
// does not reach is lists of names that no short expression expands to.

// safeHostChars are the bytes a host or device file name may hold here:
// CompressHostlist documents that ',', ' ', '\t', '[' and ']' do not survive.
const safeHostChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:+@"

// FuzzCompressHostlist: for any comma-separated list of names made of safe
// characters (empty names are skipped), ExpandHostlist(CompressHostlist(names))
// gives the non-empty names back, in order, duplicates kept.
func FuzzCompressHostlist(f *testing.F) {
	for _, s := range []string{
		"n01,n02,n03,n05",
		"n3,n1,n2,n1,m1,n01",
		"n1,n01,n001,n2,n0,n00",
		"n9,n10,n011,n12,n099,n100",
		"n8,n9,n10,n11,n012",
		"n,n1,n-ib,n1-ib,n2-ib,1,2,3",
		"/dev/nvidia0,/dev/nvidia1,/dev/nvidia-caps/nvidia-cap337,/dev/nvidia-caps/nvidia-cap346",
		"n18446744073709551614,n18446744073709551615,n0,n18446744073709551616",
		"n99999999999999999999999,n1",
		"n0000000000000000000001,n0000000000000000000002",
		",,n1,,",
		"a1b2,a1b3,a1b10,a2b1",
		"007,008,009,010,10,11",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsFunc(s, func(r rune) bool { return !strings.ContainsRune(safeHostChars+",", r) }) {
			return
		}
		var want []string
		for _, n := range strings.Split(s, ",") {
			if n != "" {
				want = append(want, n)
			}
		}
		if len(want) > 10000 {
			return
		}
		compressed := CompressHostlist(strings.Split(s, ","))
		back, err := ExpandHostlist(compressed)
		if err != nil {
			t.Fatalf("%q -> %q: %v", s, compressed, err)
		}
		if diff := cmp.Diff(want, back); diff != "" {
			t.Fatalf("%q -> %q expands differently (-names +expanded):\n%s", s, compressed, diff)
		}
	})
}
