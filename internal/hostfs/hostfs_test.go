package hostfs

import "testing"

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		fs    FS
		elems []string
		want  string
	}{
		{"/", []string{"proc/meminfo"}, "/proc/meminfo"},
		{"/", []string{"sys/bus/pci/devices", "0000:ca:00.0", "local_cpulist"}, "/sys/bus/pci/devices/0000:ca:00.0/local_cpulist"},
		{"testdata/demo/root", []string{"proc/driver/nvidia-caps/mig-minors"}, "testdata/demo/root/proc/driver/nvidia-caps/mig-minors"},
		{"/srv/chroot/", []string{"/proc/meminfo"}, "/srv/chroot/proc/meminfo"}, // a leading / stays under the root
		{"", []string{"proc/meminfo"}, "proc/meminfo"},
	} {
		if got := tc.fs.Path(tc.elems...); got != tc.want {
			t.Errorf("FS(%q).Path(%q) = %q, want %q", tc.fs, tc.elems, got, tc.want)
		}
	}
}
