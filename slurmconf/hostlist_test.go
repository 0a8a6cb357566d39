package slurmconf

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The expected values below were checked by hand against Slurm 22.05.8's
// `scontrol show hostnames EXPR` and `scontrol show hostlist NAMES`
// (names starting with '/' went through a file, since scontrol reads a
// leading '/' as a path). Where these functions deliberately differ from
// scontrol, a comment "scontrol: ..." says what scontrol does.

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{"n[01-03],m1", []string{"n01", "n02", "n03", "m1"}},
		{"/dev/nvidia[0-1]", []string{"/dev/nvidia0", "/dev/nvidia1"}},
		{"/dev/nvidia[0-3]", []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"}},
		{"/dev/nvidia-caps/nvidia-cap[337,346,355]", []string{
			"/dev/nvidia-caps/nvidia-cap337", "/dev/nvidia-caps/nvidia-cap346", "/dev/nvidia-caps/nvidia-cap355"}},
		{"n[01-04,07],gpu5", []string{"n01", "n02", "n03", "n04", "n07", "gpu5"}},
		{"rack[1-2]-n[1-2]", []string{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
		{"a[01-02]b[9-10]", []string{"a01b9", "a01b10", "a02b9", "a02b10"}},
		{"[1-2][3-4]", []string{"13", "14", "23", "24"}},
		// Three or more brackets: the last varies fastest, then the first,
		// the second, ..., the next to last slowest.
		{"a[1-2]b[3-4]c[5-6]", []string{
			"a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"}},
		{"a[1-2]b[3-4]c[5-6]d[7-8]", []string{
			"a1b3c5d7", "a1b3c5d8", "a2b3c5d7", "a2b3c5d8", "a1b4c5d7", "a1b4c5d8", "a2b4c5d7", "a2b4c5d8",
			"a1b3c6d7", "a1b3c6d8", "a2b3c6d7", "a2b3c6d8", "a1b4c6d7", "a1b4c6d8", "a2b4c6d7", "a2b4c6d8"}},
		{"a[1-2]b[3]c[5-6]d[7-8]", []string{
			"a1b3c5d7", "a1b3c5d8", "a2b3c5d7", "a2b3c5d8", "a1b3c6d7", "a1b3c6d8", "a2b3c6d7", "a2b3c6d8"}},
		// Widths come from the low end of each range.
		{"n[9-11]", []string{"n9", "n10", "n11"}},
		{"n[09-11]", []string{"n09", "n10", "n11"}},
		{"n[001-3]", []string{"n001", "n002", "n003"}},
		{"n[008-010],n[98-101]", []string{"n008", "n009", "n010", "n98", "n99", "n100", "n101"}},
		{"[1-3]", []string{"1", "2", "3"}},
		// Order and duplicates are kept.
		{"n1,n1,n[1-2]", []string{"n1", "n1", "n1", "n2"}},
		{"n[1-3,2-4]", []string{"n1", "n2", "n3", "n2", "n3", "n4"}},
		{"n[3,1,2]", []string{"n3", "n1", "n2"}},
		// Separators: ',', ' ', '\t'; empty items are skipped.
		{"n1,,n2", []string{"n1", "n2"}},
		{",n1, n2\tn3,", []string{"n1", "n2", "n3"}},
		{"", nil},
		{" , ", nil},
		// A name without brackets is taken as written.
		{"n1-ib,n2-ib", []string{"n1-ib", "n2-ib"}},
		{"gpu", []string{"gpu"}},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.expr)
		if err != nil {
			t.Errorf("ExpandHostlist(%q): %v", tt.expr, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ExpandHostlist(%q) (-want +got):\n%s", tt.expr, diff)
		}
	}
}

// Slurm allows 65536 values in one range, and as many ranges as you like;
// we stop at 1<<20 names in all, where scontrol goes on.
func TestExpandHostlistLimits(t *testing.T) {
	for expr, want := range map[string]int{
		"n[0-65535]":             65536,
		"n[0-1,0-65535]":         65538,
		"a[0-65535]b[0-1]":       131072,
		"n[0-65535],m[0-65535]":  131072,
		"n[0-1023]m[0-1023]":     1 << 20,
		"n[1-1048575],m":         -1, // scontrol: Too many hosts in range
		"n[0-1023]m[0-1023],x":   -1, // scontrol: 1048577 names
		"n[0-65535]x[0-15],y[1]": -1, // scontrol: 1048577 names
	} {
		got, err := ExpandHostlist(expr)
		switch {
		case want < 0 && err == nil:
			t.Errorf("ExpandHostlist(%q) = %d names, want an error", expr, len(got))
		case want >= 0 && err != nil:
			t.Errorf("ExpandHostlist(%q): %v", expr, err)
		case want >= 0 && len(got) != want:
			t.Errorf("ExpandHostlist(%q) = %d names, want %d", expr, len(got), want)
		}
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		// scontrol: "Invalid range" for these as well.
		{"n[3-1]", `hostlist "n[3-1]": invalid range "3-1"`},
		{"n[a-b]", `hostlist "n[a-b]": invalid range "a-b"`},
		{"n[1x2]", `hostlist "n[1x2]": invalid range "1x2"`},
		{"n[1--3]", `hostlist "n[1--3]": invalid range "1--3"`},
		{"n[]", `hostlist "n[]": empty range in []`},
		{"n[1,,2]", `hostlist "n[1,,2]": empty range in [1,,2]`},
		{"a[]b[1]", `hostlist "a[]b[1]": empty range in []`},
		{"n1,n[1-2],x[3-1]", `hostlist "n1,n[1-2],x[3-1]": invalid range "3-1"`},
		// scontrol: "Too many hosts in range".
		{"n[0-65536]", `hostlist "n[0-65536]": range "0-65536" has more than 65536 values`},
		// scontrol: "Invalid hostlist" (MAX_PREFIX_CNT).
		{"a[0-40000,0-40000]b[1]", `hostlist "a[0-40000,0-40000]b[1]": bracket 1 has more than 65536 values`},
		// scontrol: "Invalid hostlist" (text after the last ']'; 23.11
		// added such suffixes).
		{"n[1-2]-ib", `hostlist "n[1-2]-ib": text "-ib" after the last ']' (Slurm 22.05 allows none)`},
		{"n[1-3]x", `hostlist "n[1-3]x": text "x" after the last ']' (Slurm 22.05 allows none)`},
		{"n[1-2]]", `hostlist "n[1-2]]": ']' without '['`},
		// scontrol makes names of these; an error is more useful.
		// scontrol: n]
		{"n[1-3", `hostlist "n[1-3": '[' without ']'`},
		// scontrol: n] m3
		{"n[1-2,m3", `hostlist "n[1-2,m3": '[' without ']'`},
		// scontrol: n1-3]
		{"n1-3]", `hostlist "n1-3]": ']' without '['`},
		// scontrol: a]b1 a]b2
		{"a]b[1-2]", `hostlist "a]b[1-2]": ']' without '['`},
		// scontrol: a[b1 a[b2
		{"a[b[1-2]", `hostlist "a[b[1-2]": nested '['`},
		// scontrol: n[1 n[2
		{"n[[1-2]", `hostlist "n[[1-2]": nested '['`},
		// scontrol: n1
		{"n[1-]", `hostlist "n[1-]": invalid range "1-"`},
		// scontrol: n01 n02 n03
		{"n[1a-3]", `hostlist "n[1a-3]": invalid range "1a-3"`},
		// scontrol: n01
		{"n[ 1]", `hostlist "n[ 1]": invalid range " 1"`},
		// scontrol: n1 n02
		{"n[1, 2]", `hostlist "n[1, 2]": invalid range " 2"`},
		// scontrol: n01 n02
		{"n[+1-2]", `hostlist "n[+1-2]": invalid range "+1-2"`},
		// scontrol: nothing, no "Invalid hostlist"
		{"a[x]b[1-2]c[1-2]", `hostlist "a[x]b[1-2]c[1-2]": invalid range "x"`},
		// scontrol: n18446744073709551615
		{"n[99999999999999999999]", `hostlist "n[99999999999999999999]": invalid range "99999999999999999999"`},
		// Our own cap: scontrol would print 10 million names.
		{"n[0-9999]m[0-999]", `hostlist "n[0-9999]m[0-999]": expands to more than 1048576 names`},
		{strings.Repeat("n[0-65535],", 16) + "m",
			`hostlist "` + strings.Repeat("n[0-65535],", 6)[:64] + `"... (177 bytes): expands to more than 1048576 names`},
		{strings.Repeat("x", 200) + "[0-65535]" + strings.Repeat("y", 1000) + "[0-9]",
			`hostlist "` + strings.Repeat("x", 64) + `"... (1214 bytes): expands to more than 64 MiB of names`},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.expr)
		if err == nil {
			t.Errorf("ExpandHostlist(%q) = %d names, want error %q", tt.expr, len(got), tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ExpandHostlist(%q) error:\n got %s\nwant %s", tt.expr, err, tt.want)
		}
	}
}

func TestCompressHostlist(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"n01", "n02", "n03", "n05"}, "n[01-03,05]"},
		{[]string{"/dev/nvidia0", "/dev/nvidia1"}, "/dev/nvidia[0-1]"},
		{[]string{"/dev/nvidia-caps/nvidia-cap337", "/dev/nvidia-caps/nvidia-cap346", "/dev/nvidia-caps/nvidia-cap355"},
			"/dev/nvidia-caps/nvidia-cap[337,346,355]"},
		{[]string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3",
			"/dev/nvidia-caps/nvidia-cap337", "/dev/nvidia-caps/nvidia-cap346"},
			"/dev/nvidia[0-3],/dev/nvidia-caps/nvidia-cap[337,346]"},
		{[]string{"n1", "n2", "n3"}, "n[1-3]"},
		{[]string{"n1"}, "n1"},
		{[]string{"n01"}, "n01"},
		{nil, ""},
		{[]string{"", "n1", ""}, "n1"},
		// No sorting: only ascending neighbours join.
		{[]string{"n3", "n2", "n1"}, "n[3,2,1]"},
		{[]string{"n1", "n3", "n2"}, "n[1,3,2]"},
		{[]string{"n3", "n1", "n2", "n1", "m1", "n01"}, "n[3,1-2,1],m1,n01"},
		{[]string{"n1", "m1", "n2"}, "n1,m1,n2"},
		{[]string{"m1", "n1", "m2"}, "m1,n1,m2"},
		{[]string{"n1", "n2", "n3", "m1", "n4"}, "n[1-3],m1,n4"},
		// No de-duplication.
		{[]string{"n1", "n1"}, "n[1,1]"},
		{[]string{"n1", "n2", "n1", "n2"}, "n[1-2,1-2]"},
		// Widths: zero padding counts; an unpadded number fits a narrower width.
		{[]string{"n1", "n01"}, "n[1,01]"},
		{[]string{"n01", "n1"}, "n[01,1]"},
		{[]string{"n1", "n01", "n2"}, "n[1,01,2]"},
		{[]string{"n9", "n10"}, "n[9-10]"},
		{[]string{"n09", "n10"}, "n[09-10]"},
		{[]string{"n8", "n9", "n10", "n11"}, "n[8-11]"},
		{[]string{"n08", "n9"}, "n[08,9]"},
		{[]string{"n99", "n100"}, "n[99-100]"},
		{[]string{"n099", "n100"}, "n[099-100]"},
		{[]string{"n1", "n100"}, "n[1,100]"},
		{[]string{"n10", "n011"}, "n[10,011]"},
		{[]string{"n000", "n001"}, "n[000-001]"},
		{[]string{"n0", "n1", "n00"}, "n[0-1,00]"},
		{[]string{"n0", "n00", "n000", "n1"}, "n[0,00,000,1]"},
		{[]string{"n7", "n8", "n9", "n10", "n11", "n012"}, "n[7-11,012]"},
		{[]string{"gpu7", "gpu8", "gpu9", "gpu10", "gpu011", "gpu12"}, "gpu[7-10,011,12]"},
		// Names without a numeric suffix stay as they are.
		{[]string{"n", "n1"}, "n,n1"},
		{[]string{"n1", "n"}, "n1,n"},
		{[]string{"n", "n"}, "n,n"},
		{[]string{"a", "b", "a1"}, "a,b,a1"},
		{[]string{"n1-ib", "n2-ib"}, "n1-ib,n2-ib"},
		{[]string{"n1-ib", "n2-ib", "n3"}, "n1-ib,n2-ib,n3"},
		// Only the trailing digits are the number.
		{[]string{"rack1-n1", "rack1-n2", "rack2-n1"}, "rack1-n[1-2],rack2-n1"},
		{[]string{"a1b2", "a1b3"}, "a1b[2-3]"},
		{[]string{"1", "2", "3"}, "[1-3]"},
		// scontrol: "n[00018446744073709551615,1]" (it saturates); we keep the name.
		{[]string{"n99999999999999999999999", "n1"}, "n99999999999999999999999,n1"},
		{[]string{"n18446744073709551615", "n18446744073709551614"}, "n[18446744073709551615,18446744073709551614]"},
		// scontrol: "n[18446744073709551615]" (n0 is lost to an overflow).
		{[]string{"n18446744073709551615", "n0"}, "n[18446744073709551615,0]"},
	}
	for _, tt := range tests {
		if got := CompressHostlist(tt.names); got != tt.want {
			t.Errorf("CompressHostlist(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

// CompressHostlist keeps order and duplicates, so expanding what it
// returns gives back exactly the names it was given.
func TestHostlistRoundTrip(t *testing.T) {
	exprs := []string{
		"n[01-03],m1",
		"/dev/nvidia[0-1]",
		"/dev/nvidia-caps/nvidia-cap[337,346,355]",
		"/dev/nvidia[0-7],/dev/nvidia-caps/nvidia-cap[1-2,10-11,19-20]",
		"rack[1-2]-n[1-2]",
		"a[1-2]b[3-4]c[5-6]",
		"n[9-11],n[09-11],n[1,01,001]",
		"n[98-102,099-101,8-12]",
		"n[3,1,2,1,1-4],m[5-6],n7",
		"n,n1,n-ib,n2-ib,n[3-4]",
		"[1-3],[01-02],x",
		"n[0-65535]",
		"n[0-9]m[0-9]x[1-2]",
	}
	for _, expr := range exprs {
		names, err := ExpandHostlist(expr)
		if err != nil {
			t.Errorf("ExpandHostlist(%q): %v", expr, err)
			continue
		}
		compressed := CompressHostlist(names)
		back, err := ExpandHostlist(compressed)
		if err != nil {
			t.Errorf("ExpandHostlist(CompressHostlist(ExpandHostlist(%q)) = %q): %v", expr, compressed, err)
			continue
		}
		if diff := cmp.Diff(names, back); diff != "" {
			t.Errorf("%q -> %q expands differently (-want +got):\n%s", expr, compressed, diff)
		}
	}
}

func FuzzHostlistRoundTrip(f *testing.F) {
	for _, s := range []string{"n[01-03],m1", "a[1-2]b[3-4]c[5-6]", "n[9-10,09-10],n1-ib", "n[1-3", "x[0-9]]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := ExpandHostlist(expr)
		if err != nil {
			return
		}
		compressed := CompressHostlist(names)
		back, err := ExpandHostlist(compressed)
		if err != nil {
			t.Fatalf("%q -> %q: %v", expr, compressed, err)
		}
		if diff := cmp.Diff(names, back); diff != "" {
			t.Fatalf("%q -> %q expands differently:\n%s", expr, compressed, diff)
		}
	})
}

func hostlistBenchNames() []string {
	names := make([]string, 0, 10000)
	for i := 1; i <= 10000; i++ {
		if i%997 == 0 { // a few gaps
			continue
		}
		s := strconv.Itoa(i)
		names = append(names, "n"+strings.Repeat("0", 5-len(s))+s)
	}
	return names
}

func BenchmarkCompressHostlist10k(b *testing.B) {
	names := hostlistBenchNames()
	want := "n[00001-00996,00998-01993,01995-02990,02992-03987,03989-04984,04986-05981,05983-06978,06980-07975,07977-08972,08974-09969,09971-10000]"
	if got := CompressHostlist(names); got != want {
		b.Fatalf("CompressHostlist = %q, want %q", got, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		CompressHostlist(names)
	}
}

func BenchmarkExpandHostlist(b *testing.B) {
	const expr = "n[00001-00996,00998-01993,01995-02990,02992-03987,03989-04984,04986-05981,05983-06978,06980-07975,07977-08972,08974-09969,09971-10000]"
	want := hostlistBenchNames()
	got, err := ExpandHostlist(expr)
	if err != nil || !cmp.Equal(got, want) {
		b.Fatalf("ExpandHostlist(%q) = %d names, %v", expr, len(got), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ExpandHostlist(expr)
	}
}

func TestSortHostnames(t *testing.T) {
	names := []string{"gpu10", "gpu9", "gpu010", "cpu1", "gpu", "gpu1", "gpu01", "gpu-ib", "gpu99999999999999999999999", "n1"}
	SortHostnames(names)
	want := []string{"cpu1", "gpu", "gpu1", "gpu01", "gpu9", "gpu10", "gpu010", "gpu-ib", "gpu99999999999999999999999", "n1"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestOneHost(t *testing.T) {
	for expr, want := range map[string]bool{"n1": true, "gpu-a01.x": true, "": false, "n[1]": false, "n1,n2": false, "n1 n2": false, "n1]": false} {
		if OneHost(expr) != want {
			t.Errorf("OneHost(%q) = %v", expr, !want)
		}
		if names, err := ExpandHostlist(expr); want && (err != nil || len(names) != 1 || names[0] != expr) {
			t.Errorf("OneHost(%q) but ExpandHostlist gives %q, %v", expr, names, err)
		}
	}
}
