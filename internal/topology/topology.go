// Package topology reads a node's CPU topology from sysfs under a hostfs.FS
// and maps OS CPU lists to the abstract core ids of gres.conf Cores=.
// slurmd numbers cores in hwloc's logical order (xcpuinfo.c), and hwloc
// sorts each object's children by lowest OS CPU id: so cores go by package,
// die and core, each by lowest CPU id, never by physical_package_id or
// core_id, which need not grow with CPU ids. Where Slurm 22.05's own map
// leaves CPUs out (offline holes, P- and E-cores), this package still
// numbers them as hwloc does, and as hwloc-calc prints (docs/gen.md).
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

// Load reads the online CPUs under host and, for each, its cpuN/topology
// physical_package_id, core_id and die_id (optional: kernels before 5.2 and
// non-x86 lack it). Offline CPUs are ignored. Errors name the file.
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
// thread siblings by thread_siblings_list, from which hwloc, and so Slurm,
// builds cores. A CPU without the list is not checked.
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

// AbstractCores maps an OS CPU list ("0-15,32-47") to the sorted abstract
// core ids of gres.conf Cores=, taking a core when any of its CPUs is listed
// (xcpuinfo_mac_to_abs). Offline CPUs are ignored; a bad list is an error.
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
