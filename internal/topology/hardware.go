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

// Hardware computes the hardware part of `slurmd -C` from the topology plus
// proc/meminfo under the root of host, the way Slurm 22.05 with hwloc 2 does
// (src/slurmd/slurmd/slurmd.c _print_config, src/slurmd/common/xcpuinfo.c
// xcpuinfo_hwloc_topo_get, src/slurmd/slurmd/get_mach_stat.c get_memory):
//
//   - CPUs is the number of online CPUs.
//   - Boards is 1. (slurmd counts hwloc Group objects directly below the
//     machine as boards; sysfs CPU topology has none of them.)
//   - Sockets are packages; dies and NUMA nodes do not count (hwloc 2 builds
//     ignore Slurm's NUMA-as-socket logic unless SlurmdParameters asks for it,
//     which this package does not model).
//   - CoresPerSocket = cores / sockets and ThreadsPerCore = CPUs / cores, in
//     integer division as slurmd does, even on uneven nodes.
//   - RealMemory is sysconf(_SC_PHYS_PAGES) pages, that is MemTotal / page
//     size, converted to MiB through a C float exactly as get_memory does; the
//     page size is this process's (os.Getpagesize).
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

// realMemoryMiB is get_memory's arithmetic:
//
//	(uint64_t)((float)pages * (sysconf(_SC_PAGE_SIZE) / 1048576.0))
//
// The page count passes through a 32-bit float, so above 2^24 pages (64 GiB
// of 4 KiB pages) it is rounded to float precision first, which can add 1 MiB
// to the exact floor(MemTotal / 1024).
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
