// Package topology reads a node's CPU topology from sysfs and converts OS CPU
// lists into the abstract core ids that Slurm's gres.conf Cores= expects.
//
// Every reader takes the node's files as a hostfs.FS ("/" on a live node, a
// fixture tree in tests) and reads sys/devices/system/cpu/... and
// proc/meminfo under its root.
//
// # How Slurm numbers abstract cores
//
// slurmd builds its CPU map from hwloc (SchedMD/slurm
// src/slurmd/common/xcpuinfo.c, xcpuinfo_hwloc_topo_get): it walks the
// sockets in hwloc logical order and, inside each, the cores in hwloc logical
// order, numbering the cores 0, 1, 2, ... across the whole node. Abstract
// core N is therefore hwloc's logical core index N. xcpuinfo_mac_to_abs (used
// by NVML autodetect) sets a core when any one of its threads is in the OS
// CPU list, and xcpuinfo_abs_to_mac (used on gres.conf Cores=) expands a core
// back to all of its threads.
//
// hwloc's logical order is the order of its object tree, and hwloc keeps the
// children of every object sorted by their first (lowest) OS CPU id
// (open-mpi/hwloc hwloc/topology.c, hwloc___insert_object_by_cpuset and
// hwloc__object_cpusets_compare_first). So the numbering is: packages by
// lowest CPU id, then dies within a package by lowest CPU id, then cores
// within a die by lowest CPU id. That usually equals sorting by
// (physical_package_id, core_id), but not always: package ids need not grow
// with CPU ids, and core_ids need not either. This package sorts by lowest CPU
// id, as hwloc does, never by the ids themselves.
//
// # Where Slurm 22.05 disagrees with itself
//
// slurmd's map has one slot per online CPU and assumes every core has
// CPUs/cores threads. On a node whose offline CPUs leave online ids at or
// above the online count (online "0-5,8-15"), or whose cores have different
// thread counts (Intel P- and E-cores), it leaves some CPUs out of the map
// (slurmd -vvvvvv logs the map as "CPU map[abs]=>os"). This package still
// gives those CPUs hwloc's core numbers: the only consistent answer, and what
// hwloc-calc prints.
package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/cpulist"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
)

// cpuDir is the sysfs CPU directory relative to a root.
const cpuDir = "sys/devices/system/cpu"

// CPU is one online logical CPU.
type CPU struct {
	ID     int // OS id: N of /sys/devices/system/cpu/cpuN
	Socket int // physical_package_id
	Core   int // core_id (unique within a socket only, sometimes only within a die)
	Die    int // die_id where present, else 0
}

// coreKey identifies one physical core. core_id is only unique within a
// package (on some multi-die parts only within a die), so the die is part of
// the key.
type coreKey struct{ socket, die, core int }

// Topology is the online CPUs of a node and Slurm's numbering of them.
type Topology struct {
	cpus    []CPU       // sorted by ID
	absCore map[int]int // OS CPU id -> abstract core id
	cores   int         // number of cores
	sockets int         // number of sockets
}

// Load reads sys/devices/system/cpu/online under the root of host and, for each online CPU N,
// cpuN/topology/{physical_package_id,core_id,die_id}. die_id is optional
// (kernels before 5.2 and non-x86 lack it); the other two are required.
// Offline CPUs are ignored. Errors name the file.
func Load(host hostfs.FS) (*Topology, error) {
	dir := host.Path(cpuDir)
	onlinePath := filepath.Join(dir, "online")
	b, err := hostfs.ReadFileNoStat(onlinePath)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	ids, err := cpulist.Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", onlinePath, err)
	}
	cpus := make([]CPU, 0, len(ids))
	for _, id := range ids {
		topo := filepath.Join(dir, "cpu"+strconv.Itoa(id), "topology")
		c := CPU{ID: id}
		if c.Socket, err = readInt(filepath.Join(topo, "physical_package_id")); err != nil {
			return nil, err
		}
		if c.Core, err = readInt(filepath.Join(topo, "core_id")); err != nil {
			return nil, err
		}
		if c.Die, err = readInt(filepath.Join(topo, "die_id")); errors.Is(err, os.ErrNotExist) {
			c.Die = 0
		} else if err != nil {
			return nil, err
		}
		cpus = append(cpus, c)
	}
	t, err := New(cpus) // can only fail on an empty online list
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", onlinePath, err)
	}
	if err := checkSiblings(dir, cpus); err != nil {
		return nil, err
	}
	return t, nil
}

// checkSiblings refuses CPUs that share (package, die, core_id) but are not
// thread siblings by thread_siblings_list: hwloc, and so Slurm, builds cores
// from those lists and would number them otherwise. A CPU without the list
// is not checked.
func checkSiblings(dir string, cpus []CPU) error {
	byKey := map[coreKey][]int{}
	for _, c := range cpus {
		k := coreKey{c.Socket, c.Die, c.Core}
		byKey[k] = append(byKey[k], c.ID)
	}
	checked := map[coreKey]bool{}
	for _, c := range cpus {
		k := coreKey{c.Socket, c.Die, c.Core}
		same := byKey[k]
		// Sibling lists are symmetric: one thread's list checks its core.
		if len(same) == 1 || checked[k] {
			continue
		}
		checked[k] = true
		path := filepath.Join(dir, "cpu"+strconv.Itoa(c.ID), "topology", "thread_siblings_list")
		b, err := hostfs.ReadFileNoStat(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return fmt.Errorf("topology: %w", err)
		}
		siblings, err := cpulist.Parse(string(b))
		if err != nil {
			return fmt.Errorf("topology: %s: %w", path, err)
		}
		for _, id := range same {
			if _, ok := slices.BinarySearch(siblings, id); !ok {
				return fmt.Errorf("topology: %s: CPUs %d and %d share package %d, die %d, core_id %d but are not thread siblings",
					path, c.ID, id, c.Socket, c.Die, c.Core)
			}
		}
	}
	return nil
}

// readInt reads a sysfs file holding one decimal integer (possibly -1).
func readInt(path string) (int, error) {
	b, err := hostfs.ReadFileNoStat(path)
	if err != nil {
		return 0, fmt.Errorf("topology: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("topology: %s: not an integer: %q", path, strings.TrimSpace(string(b)))
	}
	return n, nil
}

// New builds a Topology from CPUs directly (tests, snapshots). The order of
// cpus does not matter; ids must be unique and within 0-65535.
func New(cpus []CPU) (*Topology, error) {
	if len(cpus) == 0 {
		return nil, errors.New("no online CPUs")
	}
	t := &Topology{
		cpus:    slices.Clone(cpus),
		absCore: make(map[int]int, len(cpus)),
	}
	slices.SortFunc(t.cpus, func(a, b CPU) int { return a.ID - b.ID })

	// The lowest CPU id of every socket, die and core. t.cpus is sorted, so
	// the first CPU seen of each is its lowest.
	type dieKey struct{ socket, die int }
	socketMin := map[int]int{}
	dieMin := map[dieKey]int{}
	coreMin := map[coreKey]int{}
	var cores []coreKey
	for i, c := range t.cpus {
		if c.ID < 0 || c.ID > cpulist.MaxID {
			return nil, fmt.Errorf("CPU id %d is out of range 0-%d", c.ID, cpulist.MaxID)
		}
		if i > 0 && t.cpus[i-1].ID == c.ID {
			return nil, fmt.Errorf("CPU %d listed twice", c.ID)
		}
		if _, ok := socketMin[c.Socket]; !ok {
			socketMin[c.Socket] = c.ID
		}
		if _, ok := dieMin[dieKey{c.Socket, c.Die}]; !ok {
			dieMin[dieKey{c.Socket, c.Die}] = c.ID
		}
		k := coreKey{c.Socket, c.Die, c.Core}
		if _, ok := coreMin[k]; !ok {
			coreMin[k] = c.ID
			cores = append(cores, k)
		}
	}

	// hwloc's tree order: sockets, then dies, then cores, each by lowest CPU.
	rank := func(k coreKey) [3]int {
		return [3]int{socketMin[k.socket], dieMin[dieKey{k.socket, k.die}], coreMin[k]}
	}
	slices.SortFunc(cores, func(a, b coreKey) int {
		ra, rb := rank(a), rank(b)
		return slices.Compare(ra[:], rb[:])
	})
	abs := make(map[coreKey]int, len(cores))
	for i, k := range cores {
		abs[k] = i
	}
	for _, c := range t.cpus {
		t.absCore[c.ID] = abs[coreKey{c.Socket, c.Die, c.Core}]
	}
	t.cores = len(cores)
	t.sockets = len(socketMin)
	return t, nil
}

// CPUs returns the CPUs sorted by ID (for snapshots to carry, so that New
// rebuilds the same numbering elsewhere). The slice is a copy.
func (t *Topology) CPUs() []CPU {
	return slices.Clone(t.cpus)
}

// AbstractCores maps an OS CPU list ("0-15,32-47", the Linux cpulist format)
// to the sorted abstract core ids Slurm uses in gres.conf Cores=. A core is
// included when any of its CPUs is in the list, as in Slurm's
// xcpuinfo_mac_to_abs. CPUs in the list that are not online are ignored, so
// the result may be empty. A malformed list is an error.
func (t *Topology) AbstractCores(cpuList string) ([]int, error) {
	ids, err := cpulist.Parse(cpuList)
	if err != nil {
		return nil, err
	}
	seen := make([]bool, t.cores)
	out := []int{}
	for _, id := range ids {
		if a, ok := t.absCore[id]; ok && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out, nil
}
