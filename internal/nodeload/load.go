// Package nodeload loads the model of one node, the way every command
// needs it: from a snapshot (--from) or through NVML, then completed from
// the node's files under the root (cap minors from mig-minors, Cores= and
// the hardware from the CPU topology). It owns the run's NVML lifecycle.
// What it cannot read but can do without, it returns as warnings, for
// the command line to print.
package nodeload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/slurm-mig/slurm-mig/capmap"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/nodeload/nvmlread"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Loader loads a node's model for one run.
type Loader struct {
	Host *Host // the node's files
	NVML *NVML // the run's library, asked only without a snapshot
	// Hostname names the node that NVML describes.
	Hostname func() (string, error)
	// Timeout bounds the wait on NVML: a call into a hung driver cannot be
	// interrupted, but the process can exit without it, having written
	// nothing.
	Timeout time.Duration
}

// Warnings say what a model goes without: a GPU's CPU affinity or
// NVLinks, the CPU topology. Nothing that decides which devices Slurm
// gets is ever guessed. A warning may carry the fix that would help
// (advice), which the command line words.
type Warnings = []error

// Load reads the snapshot at path or, when path is empty, discovers the
// node through NVML, and resolves every MIG device's cap minors. Where
// NVML's library is missing, the error carries the fix: a snapshot will
// do.
func (l *Loader) Load(snapshot string) (*model.Node, Warnings, error) {
	node, warnings, err := l.load(snapshot)
	if nvmlread.NoNVMLLibrary(err) {
		err = advice.Wrap(err, advice.Snapshot)
	}
	return node, warnings, err
}

// LoadProfiles loads the node as Load does, with each GPU's MIG profile
// table (for plan, which fits layouts into it): read through NVML now, or
// the one the snapshot carries. A GPU read without its table would look
// like a GPU without MIG, and plan would leave it whole, so a table NVML
// will not give is an error here, where snapshot only warns.
//
// A snapshot of schema 1 has no tables (nor the PCI device ids that
// mig-parted's device filters match): one that carries none is refused
// as soon as it is read, with the fix, a new snapshot, before anything else it lacks (the
// cap minors under --root) is looked for.
func (l *Loader) LoadProfiles(snapshot string) (*model.Node, Warnings, error) {
	if snapshot != "" {
		return l.loadWith(snapshot, func(node *model.Node) error {
			if node.SchemaVersion < 2 && !carriesProfiles(node) {
				return advice.Hinted(fmt.Errorf("%s is a snapshot of schema %d, without the MIG profiles and PCI device ids that plan needs", snapshot, node.SchemaVersion), ": take a new one on the node with slurm-mig snapshot")
			}
			return nil
		})
	}
	node, warnings, err := l.Load(snapshot)
	if err != nil {
		return node, warnings, err
	}
	if err := l.migProfiles(node); err != nil {
		return nil, warnings, err
	}
	return node, warnings, nil
}

// carriesProfiles says whether a snapshot carries what schema 2 added for
// plan, for some GPU at least: a GPU without it may be one without MIG.
func carriesProfiles(node *model.Node) bool {
	for _, g := range node.GPUs {
		if g.PCIDeviceID != "" || g.Profiles != nil {
			return true
		}
	}
	return false
}

// TryProfiles reads, through NVML, the MIG profile tables of a node
// read through NVML whose GPUs in MIG mode lack them, for the shares gen
// notes and node --accounting bills by. A table NVML will not give is
// left out, the node as it was: gen does without, and node --accounting
// names the GPU whose table is missing.
func (l *Loader) TryProfiles(node *model.Node) {
	if node.Snapshot != "" {
		return
	}
	for i := range node.GPUs {
		if g := &node.GPUs[i]; g.MigEnabled && g.Profiles == nil {
			l.migProfiles(node) // an error leaves the node as it was
			return
		}
	}
}

// LoadBusy loads the node as Load does, with the compute processes on
// its MIG devices (for free and exec): read through NVML now, or those
// the snapshot carries.
func (l *Loader) LoadBusy(snapshot string) (*model.Node, Warnings, error) {
	node, warnings, err := l.Load(snapshot)
	if err != nil || snapshot != "" {
		return node, warnings, err
	}
	if err := l.processes(node); err != nil {
		return nil, warnings, err
	}
	return node, warnings, nil
}

// Snapshot reads the node through NVML with all that a snapshot carries,
// so that --from gives the same output on another machine: the compute
// processes (they only tell free --from what was busy, so without them
// the snapshot still describes the node: a warning), each GPU's MIG
// profile table (the same), Cores= and the hardware (forSnapshot).
func (l *Loader) Snapshot() (*model.Node, Warnings, error) {
	node, warnings, err := l.load("")
	if err != nil {
		return nil, warnings, err
	}
	if err := l.processes(node); errors.As(err, new(*nvmlread.NVMLError)) {
		warnings = append(warnings, fmt.Errorf("%v; the snapshot records no compute processes", err))
	} else if err != nil {
		return nil, warnings, err
	}
	// The profile table is what plan fits layouts into; gen and the
	// other commands do without it, so a snapshot without it still
	// describes the node: a warning.
	if err := l.migProfiles(node); err != nil {
		warnings = append(warnings, fmt.Errorf("%v; the snapshot records no MIG profile table", err))
	}
	return node, append(warnings, l.forSnapshot(node)...), nil
}

func (l *Loader) load(path string) (*model.Node, Warnings, error) {
	return l.loadWith(path, func(*model.Node) error { return nil })
}

// loadWith is load, with check run on the node once read, before its
// cap minors are resolved.
func (l *Loader) loadWith(path string, check func(*model.Node) error) (*model.Node, Warnings, error) {
	var node *model.Node
	var warnings Warnings
	var err error
	if path != "" {
		node, err = snapshot.Load(path)
	} else {
		node, warnings, err = l.discover()
	}
	if err != nil {
		return nil, warnings, err
	}
	if err := check(node); err != nil {
		return nil, warnings, err
	}
	if err := capmap.Resolve(node, l.Host.capMap); err != nil {
		return nil, warnings, err
	}
	return node, warnings, nil
}

// discover reads the node through NVML within the timeout.
func (l *Loader) discover() (*model.Node, Warnings, error) {
	host, err := l.Hostname()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the hostname: %w", err)
	}
	var node *model.Node
	var said []string
	err = l.withNVML(func(lib nvml.Interface) (err error) {
		node, err = nvmlread.Read(lib, host, l.Host.fs, func(w string) { said = append(said, w) })
		return err
	})
	var timeout *timeoutError
	if errors.As(err, &timeout) { // the read may still be writing node and said
		return nil, nil, fmt.Errorf("%w; nothing was written", err)
	}
	var warnings Warnings
	for _, w := range said {
		warnings = append(warnings, errors.New(w))
	}
	if err != nil {
		return nil, warnings, err
	}
	// NVML's node is checked as a snapshot's is, so that what every
	// command gets holds the same: above all a UUID in NVML's form for
	// every device, which the device state hands to jobs.
	if err := node.Check(); err != nil {
		return nil, warnings, err
	}
	return node, warnings, nil
}

// Done says that the run reads NVML no more: it shuts NVML down (NVML's
// Release) before the run waits on a lock, the disk, slurmctld, or a
// command it becomes.
func (l *Loader) Done() { l.NVML.Release() }

// CheckNodeName refuses a node name that Slurm would not read as one, as
// a name given for the node must be checked before it is used (NodeName).
func CheckNodeName(name string) error { return slurmconf.CheckNodeName(name) }

// NodeName is the NodeName= for the node: none when asked for none, else
// the name given (which the caller has checked: CheckNodeName), else the
// short name of the host the model describes: the snapshot's host, or
// this one for a node read through NVML. Where that name will not do (a
// snapshot that names no host, as this host's name is not its node's; a
// host name unknown, or not a node name), the error carries the fix: the
// node's name must be given.
func (l *Loader) NodeName(node *model.Node, given string, none bool) (string, error) {
	switch {
	case none:
		return "", nil
	case given != "":
		return given, nil
	}
	host := node.Hostname
	switch {
	case host == "" && node.Snapshot != "":
		return "", advice.Wrap(fmt.Errorf("%s names no host (no hostname), and this host's name is not that node's", node.Snapshot), advice.SnapshotNodeName)
	case host == "":
		h, err := l.Hostname()
		if err != nil {
			return "", advice.Wrap(fmt.Errorf("this host's name is unknown (%v)", err), advice.NodeName)
		}
		host = h
	}
	short, _, _ := strings.Cut(host, ".")
	if err := slurmconf.CheckNodeName(short); err != nil {
		return "", advice.Wrap(fmt.Errorf("host %q: %w", host, err), advice.NodeName)
	}
	return short, nil
}

// Cores fills in each GPU's Cores= from its CPU affinity and the CPU
// topology under the root. Without the topology the config is still
// right, only less precise: a warning. A snapshot's node is another
// host's, whose Cores= are those the snapshot carries, or those of the
// node's own tree when --root names one: this host's topology says
// nothing of it. So at the default root, this host, a GPU the snapshot
// gives no cores for goes without, and the warning names the snapshot,
// with the fix: a snapshot taken on the node, or leaving Cores= out.
func (l *Loader) Cores(node *model.Node) Warnings {
	if node.Snapshot != "" && l.Host.fs.ThisHost() {
		if gpus := withoutCores(node); gpus != "" {
			return Warnings{advice.Wrap(fmt.Errorf("%s has no cores for GPU %s: Cores= is left out for them, as this host's CPU topology is not that node's", node.Snapshot, gpus), advice.SnapshotCores)}
		}
		return nil
	}
	if err := resolveTopology(node, l.Host, false); err != nil {
		return Warnings{fmt.Errorf("%v; Cores= left out", err)}
	}
	return nil
}

// withoutCores lists, by NVML index, the GPUs that have a CPU affinity
// but no cores: those whose Cores= a snapshot could have given.
func withoutCores(node *model.Node) string {
	var gpus []string
	for i := range node.GPUs {
		if g := &node.GPUs[i]; g.CPUAffinity != "" && g.Cores == "" {
			gpus = append(gpus, strconv.Itoa(g.Index))
		}
	}
	return strings.Join(gpus, ", ")
}

// Hardware fills in Cores= and the node's hardware, as slurmd -C reads
// it; a line of the whole node cannot do without. A snapshot's node has
// the hardware the snapshot carries, or that of the node's own tree when
// --root names one; at the default root this host's is not its, and the
// error carries the fix (a snapshot taken on the node, or a line without
// the hardware).
func (l *Loader) Hardware(node *model.Node) error {
	if node.Snapshot != "" && l.Host.fs.ThisHost() {
		if node.Hardware == nil {
			return advice.Wrap(fmt.Errorf("%s has no hardware (CPUs, sockets, cores, threads, memory): this host's are not that node's", node.Snapshot), advice.SnapshotHardware)
		}
		return nil
	}
	return resolveTopology(node, l.Host, true)
}

// forSnapshot fills in what a snapshot carries so that --from gives the
// same output on another machine: Cores= and the hardware. Without the
// CPU topology the snapshot still holds every device: a warning.
func (l *Loader) forSnapshot(node *model.Node) Warnings {
	if err := resolveTopology(node, l.Host, true); err != nil {
		return Warnings{fmt.Errorf("%v; the snapshot has no cores or hardware", err)}
	}
	return nil
}
