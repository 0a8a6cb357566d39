package cpulist

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// seq is the ids lo..hi.
func seq(lo, hi int) []int {
	var ids []int
	for i := lo; i <= hi; i++ {
		ids = append(ids, i)
	}
	return ids
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"", nil},
		{"\n", nil},
		{"0", []int{0}},
		{"0-3,8,10-11\n", []int{0, 1, 2, 3, 8, 10, 11}},
		{"5,1-2,2", []int{1, 2, 5}},
		{"7-7", []int{7}},
		{"65535", []int{65535}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tt.in, diff)
		}
		if err := Check(tt.in); err != nil {
			t.Errorf("Check(%q): %v, where Parse takes it", tt.in, err)
		}
	}
	for _, bad := range []string{",", "0,", ",0", "0,,1", "a", "-1", "1-", "-", "3-1", "0-3:1/2", "0x3", "1 2", " 1-2 ,3", "+1", "65536", "0-99999999999999999999"} {
		got, err := Parse(bad)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, got)
			continue
		}
		if cerr := Check(bad); cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("Check(%q) = %v, want Parse's error %v", bad, cerr, err)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{4, 5}, "4-5"},
		{seq(16, 31), "16-31"},
		{append(seq(0, 15), seq(32, 47)...), "0-15,32-47"},
		{[]int{9, 1, 2, 3, 2, 7}, "1-3,7,9"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if tt.in == nil {
			continue
		}
		back, err := Parse(tt.want)
		if err != nil || !cmp.Equal(back, slices.Compact(slices.Sorted(slices.Values(tt.in)))) {
			t.Errorf("Parse(Format(%v)) = %v, %v", tt.in, back, err)
		}
	}
}
