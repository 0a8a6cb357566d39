package jobenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/hostfs"
	"github.com/slurm-mig/slurm-mig/internal/slurmd"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// otherGPUVars are the variables Slurm's gres/gpu also sets, by default, to
// CUDA_VISIBLE_DEVICES's (maybe local) indices, for non-NVIDIA runtimes.
// Lines unsets those equal to it, so no tool takes an index for a device.
var otherGPUVars = []string{"GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"}

// Lines returns the TaskProlog's lines: CUDA_VISIBLE_DEVICES exported as the
// state's UUIDs of the request's indices, then unsets of otherGPUVars. A
// narrowed task gets what its cgroup grants (probe), since Slurm misnames it.
func Lines(req Request, n *Node, getenv func(string) (string, bool), probe Probe) ([]string, error) {
	picked, err := n.Pick(req.From, req.Indices)
	if err != nil {
		return nil, err
	}
	if req.Narrowed && probe != nil {
		granted, err := grantedDevices(n.Devices, n.State, probe)
		if err != nil {
			return nil, err
		}
		if granted != nil {
			if len(granted) != len(picked) {
				return nil, fmt.Errorf("%s=%s names %d GPUs, but the task's device cgroup grants %d", req.From, joinInts(req.Indices), len(picked), len(granted))
			}
			picked = granted
		}
	}
	uuids := make([]string, len(picked))
	for i, d := range picked {
		uuids[i] = d.UUID
	}
	lines := []string{"export CUDA_VISIBLE_DEVICES=" + strings.Join(uuids, ",")}
	cvd, cvdSet := getenv("CUDA_VISIBLE_DEVICES")
	for _, v := range otherGPUVars {
		if val, ok := getenv(v); ok && cvdSet && cvd != "" && val == cvd {
			lines = append(lines, "unset "+v)
		}
	}
	return lines, nil
}

// Probe says whether this process may open a device file: false when its
// device cgroup denies it (EPERM).
type Probe func(file string) (bool, error)

// grantedDevices probes each device by the file its cgroup rule names (a MIG
// device's CI cap, a GPU's /dev/nvidiaN) and returns those granted, in index
// order; nil when all are (no device cgroup in force).
func grantedDevices(devs []Device, st *State, probe Probe) ([]*StateDevice, error) {
	var granted []*StateDevice
	denied := false
	for _, dev := range devs {
		d, err := st.Lookup(dev.Files)
		if err != nil {
			return nil, fmt.Errorf("GPU index %d (%s): %v", dev.Index, dev.Pos, err)
		}
		file := d.ownFile()
		ok, err := probe(file)
		if err != nil {
			return nil, err
		}
		if ok {
			granted = append(granted, d)
		} else {
			denied = true
		}
	}
	if !denied {
		return nil, nil
	}
	return granted, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// openProbe probes device files under root by opening them for reading,
// as CUDA does: EPERM is the device cgroup's no; a node without a driver
// behind it (ENXIO, ENODEV) still passed the cgroup.
func openProbe(root hostfs.FS) Probe {
	return func(file string) (bool, error) {
		path := root.Path(file)
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
		switch err {
		case nil:
			syscall.Close(fd)
			return true, nil
		case syscall.EPERM:
			return false, nil
		case syscall.ENXIO, syscall.ENODEV:
			return true, nil
		}
		return false, fmt.Errorf("probing the device cgroup: %s: %v", path, err)
	}
}

func indexRange(n int) string {
	switch n {
	case 0:
		return "no GPU"
	case 1:
		return "only index 0"
	}
	return "indices 0-" + strconv.Itoa(n-1)
}

// CheckState refuses a state of another node or boot (the latter's error
// hints to write it anew). An empty node or boot id, as from a snapshot or
// a host without one, is not checked.
func CheckState(st *State, path, node, bootID string) error {
	if st.Node != "" && node != "" && st.Node != node {
		return fmt.Errorf("%s was written for node %s, but this task runs on %s", path, st.Node, node)
	}
	if st.BootID != "" && bootID != "" && st.BootID != bootID {
		return advice.Wrap(fmt.Errorf("%s was written before the last reboot (boot id %s, now %s); MIG devices and their UUIDs do not survive one", path, st.BootID, bootID), advice.StateBeforeReboot)
	}
	return nil
}

// Paths are the files env reads.
type Paths struct {
	SlurmConf string
	GresConf  string
}

// defaultSlurmConfs are where slurm.conf is without SLURM_CONF: Slurm's
// default, then slurmd's configless cache (22.05+). Only runs by hand need
// them: slurmstepd always sets SLURM_CONF for a task (env.c setup_env).
var defaultSlurmConfs = []string{"/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf"}

// resolvePaths picks slurm.conf (the flag, $SLURM_CONF, else the first of
// defaultSlurmConfs that exists) and gres.conf (the flag, else gres.conf
// beside slurm.conf, where slurmd looks for it).
func resolvePaths(slurmFlag, gresFlag string, getenv func(string) (string, bool)) (Paths, error) {
	p := Paths{SlurmConf: slurmFlag, GresConf: gresFlag}
	if p.SlurmConf == "" {
		p.SlurmConf, _ = getenv("SLURM_CONF")
	}
	if p.SlurmConf == "" {
		for _, c := range defaultSlurmConfs {
			if _, err := os.Stat(c); err == nil {
				p.SlurmConf = c
				break
			}
		}
	}
	if p.SlurmConf == "" {
		return p, fmt.Errorf("no slurm.conf: SLURM_CONF is not set and none of %s exists", strings.Join(defaultSlurmConfs, ", "))
	}
	if p.GresConf == "" {
		p.GresConf = filepath.Join(filepath.Dir(p.SlurmConf), "gres.conf")
	}
	return p, nil
}

// nodeIndexMap reads the node as slurmd does and returns its GPU indices,
// its Gres= GPU type count and where they come from. It refuses AutoDetect
// and configs slurmd dies of or misreads; release is asked only if needed.
func nodeIndexMap(p Paths, node string, release func() (slurmconf.Version, error)) ([]Device, int, string, error) {
	nc, err := slurmd.ReadNode(p.GresConf, p.SlurmConf, node, slurmconf.Version{})
	if err != nil {
		return nil, 0, "", err
	}
	if nc.ReleaseMatters != "" {
		v, err := askRelease(release)
		if err != nil {
			return nil, 0, "", fmt.Errorf("%s: how slurmd numbers this node's GPUs depends on its release (MultipleFiles= beside mps or shard), which is not known: %v", nc.ReleaseMatters, err)
		}
		if nc, err = slurmd.ReadNode(p.GresConf, p.SlurmConf, node, v); err != nil {
			return nil, 0, "", err
		}
	}
	if nc.Fatal() {
		f := nc.Problems[len(nc.Problems)-1]
		return nil, 0, "", fmt.Errorf("%s: %s", f.Pos, f.Message)
	}
	if nc.AutoDetect != "" && !strings.EqualFold(nc.AutoDetect, "off") {
		return nil, 0, "", fmt.Errorf("%s: AutoDetect=%s: slurmd numbers autodetected GPUs itself; slurm-mig env is for hand-written gres.conf", p.GresConf, nc.AutoDetect)
	}
	if len(nc.Misread) > 0 {
		m := nc.Misread[0]
		return nil, 0, "", advice.Hinted(fmt.Errorf("%s: %s: slurmd's GPU indices are not the devices these lines name, and a task gets no device slurmd did not give it", m.Pos, m.Message),
			" (slurm-mig check says what slurmd reads)")
	}
	devs := nc.GPUs
	ng := nc.Decl.NodeGres()
	types, err := slurmconf.GresTypeCounts(ng.Gres, "gpu")
	if err != nil {
		return nil, 0, "", fmt.Errorf("%s: %w", ng.Pos, err)
	}
	// A gres.conf naming only other nodes gives this one no GPU; the error
	// that a task's GPU is none of the node's then says why, most often a
	// name spelt otherwise (gpu01.cluster.example for gpu01).
	gres := p.GresConf
	if nc.Elsewhere != "" {
		gres += fmt.Sprintf(", where no line names node %s%s", node, nc.Elsewhere)
	}
	return devs, len(types), fmt.Sprintf("node %s (Gres=%s at %s, gres.conf %s)", node, ng.Gres, ng.Pos, gres), nil
}

// askRelease asks release, where there is one.
func askRelease(release func() (slurmconf.Version, error)) (slurmconf.Version, error) {
	if release == nil {
		return slurmconf.Version{}, fmt.Errorf("no slurmd to ask")
	}
	v, err := release()
	if err == nil && !v.Known() {
		err = fmt.Errorf("slurmd did not say")
	}
	return v, err
}

// readBootID reads the kernel's boot id under root; "" when the host has
// none (the check is then skipped).
func readBootID(root hostfs.FS) string {
	data, err := hostfs.ReadFileNoStat(root.Path("proc/sys/kernel/random/boot_id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
