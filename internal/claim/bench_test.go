package claim

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkTake times one claim on a node of 28 MIG devices with held
// claims already on the first ones: scan, probe each claim file, create
// and lock the new one, and look again for others' claims of its device.
// Each claim is released again, so every iteration sees the same
// directory.
func BenchmarkTake(b *testing.B) {
	uuids := make([]string, 28)
	for i := range uuids {
		uuids[i] = fmt.Sprintf("MIG-00000000-0000-4000-8000-%012d", i)
	}
	for _, held := range []int{0, 14, 27} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			d, err := OpenDir(filepath.Join(b.TempDir(), "claims"))
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			info := Info{Job: Job{PID: os.Getpid()}, Command: "bench"}
			if held > 0 {
				c, _, err := d.Take(uuids, held, info, time.Second)
				if err != nil || c == nil {
					b.Fatal(err)
				}
				defer c.Close()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, _, err := d.Take(uuids, 1, info, time.Second)
				if err != nil || c == nil {
					b.Fatal(err)
				}
				os.Remove(c.Files[0].Name())
				c.Close()
			}
		})
	}
}

// BenchmarkTakeRefused times a refusal on a node of 28 MIG devices all
// claimed by one job: scan, test each claim file's lock and read whom
// the claims are for the message.
func BenchmarkTakeRefused(b *testing.B) {
	uuids := make([]string, 28)
	for i := range uuids {
		uuids[i] = fmt.Sprintf("MIG-00000000-0000-4000-8000-%012d", i)
	}
	d, err := OpenDir(filepath.Join(b.TempDir(), "claims"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	job, err := Self()
	if err != nil {
		b.Fatal(err)
	}
	info := Info{Job: job, Command: "bench"}
	c, _, err := d.Take(uuids, len(uuids), info, time.Second)
	if err != nil || c == nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.Run("whole", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if c, held, err := d.Take(uuids, 1, info, time.Second); err != nil || c != nil || len(held) != len(uuids) {
				b.Fatalf("%v, %d held", err, len(held))
			}
		}
	})
}

// BenchmarkFlood times one call for a device whose claim files are
// flooded: files named as its claims that no lock is on, planted by
// another user, as another user's call meets them (it may remove none).
// Past floodCap the call refuses (the device counts as the flooder's).
func BenchmarkFlood(b *testing.B) {
	for _, n := range []int{0, 3000, 10000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "claims")
			d, err := OpenDir(path)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for i := range n {
				name := filepath.Join(path, fmt.Sprintf("%s.%032x", fileKey("MIG-a"), i))
				if err := os.WriteFile(name, []byte("device MIG-a\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			d.uid = 12345 // the flood is another user's: this call removes none of it
			info := Info{Job: Job{PID: os.Getpid()}, Command: "bench"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Claimed, or past the flood's bound refused: the cost
				// of the call either way.
				c, _, err := d.Take([]string{"MIG-a"}, 1, info, time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if c != nil {
					os.Remove(c.Files[0].Name())
					c.Close()
				}
			}
		})
	}
}
