package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/model"
)

// NodeHardware is the hardware part of `slurmd -C`'s line, as the node
// model holds it.
type NodeHardware = model.Hardware

// Hardware computes `slurmd -C`'s hardware (Slurm 22.05, hwloc 2) under
// host: online CPUs, one board, packages as sockets, cores and threads by
// integer division, RealMemory as get_memory reckons it with our page size.
func (t *Topology) Hardware(host hostfs.FS) (NodeHardware, error) {
	memKiB, err := readMemTotalKiB(host)
	if err != nil {
		return NodeHardware{}, err
	}
	return NodeHardware{
		CPUs:            len(t.cpus),
		Boards:          1,
		SocketsPerBoard: t.sockets,
		CoresPerSocket:  t.cores / t.sockets,
		ThreadsPerCore:  len(t.cpus) / t.cores,
		RealMemoryMiB:   realMemoryMiB(memKiB, uint64(os.Getpagesize())),
	}, nil
}

// realMemoryMiB is get_memory's arithmetic, (uint64_t)((float)pages *
// (page size / 1048576.0)): above 2^24 pages the float's rounding can give
// 1 MiB more than floor(MemTotal / 1024).
func realMemoryMiB(memTotalKiB, pageSize uint64) uint64 {
	pages := memTotalKiB * 1024 / pageSize // glibc's sysconf(_SC_PHYS_PAGES)
	return uint64(float64(float32(pages)) * (float64(pageSize) / 1048576.0))
}

// readMemTotalKiB returns MemTotal from proc/meminfo, in KiB.
func readMemTotalKiB(host hostfs.FS) (uint64, error) {
	path := host.Path("proc", "meminfo")
	b, err := hostfs.ReadFileNoStat(path)
	if err != nil {
		return 0, fmt.Errorf("topology: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("topology: %s: malformed MemTotal line %q", path, sc.Text())
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("topology: %s: malformed MemTotal line %q", path, sc.Text())
		}
		return n, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("topology: %s: %w", path, err)
	}
	return 0, fmt.Errorf("topology: %s: no MemTotal line", path)
}
