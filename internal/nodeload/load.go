// Package nodeload loads one node's model, from a snapshot or through NVML,
// completed from the node's files under the root (cap minors, Cores=, the
// hardware); what it can do without comes back as warnings.
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

// Warnings say what a model goes without (a GPU's CPU affinity, the CPU
// topology), never what decides Slurm's devices; one may carry an advice.Fix.
type Warnings = []error

// Load reads the snapshot at path, or NVML when path is "", and resolves
// the cap minors. A missing NVML library carries the fix: a snapshot.
func (l *Loader) Load(snapshot string) (*model.Node, Warnings, error) {
	node, warnings, err := l.load(snapshot)
	if nvmlread.NoNVMLLibrary(err) {
		err = advice.Wrap(err, advice.Snapshot)
	}
	return node, warnings, err
}

// LoadProfiles is Load with each GPU's MIG profile table, which plan needs:
// a table NVML will not give is an error, and a snapshot of schema 1,
// which has none, is refused with its hint before anything else.
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

// TryProfiles reads through NVML the profile tables that the MIG GPUs of
// an NVML-read node lack, for gen's shares; a table it cannot get stays out.
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

// Snapshot reads the node through NVML with all that a snapshot carries:
// compute processes and profile tables (warnings when NVML will not give
// them), Cores= and the hardware.
func (l *Loader) Snapshot() (*model.Node, Warnings, error) {
	node, warnings, err := l.load("")
	if err != nil {
		return nil, warnings, err
	}
	if err := l.processes(node); errors.As(err, new(*nvmlread.NVMLError)) {
		warnings = append(warnings, fmt.Errorf("%w; the snapshot records no compute processes", err))
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
	var warnings Warnings
	err = l.withNVML(func(lib nvml.Interface) (err error) {
		node, warnings, err = nvmlread.Read(lib, host, l.Host.fs)
		return err
	})
	var timeout *timeoutError
	if errors.As(err, &timeout) { // the read may still be writing node and warnings
		return nil, nil, fmt.Errorf("%w; nothing was written", err)
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

// NodeName is the node's NodeName=: none if none, else given (checked by
// the caller: CheckNodeName), else the short name of the model's host;
// where that will not do, the error carries the fix of naming it.
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

// Cores fills in each GPU's Cores= from the CPU topology under the root;
// without it, or for a snapshot's GPUs without cores at this host's root,
// Cores= is left out with a warning.
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

// Hardware fills in Cores= and the node's hardware, as slurmd -C reads it;
// a snapshot's node without it at this host's root is an error with the fix.
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
