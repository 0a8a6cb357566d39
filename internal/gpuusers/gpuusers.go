// Package gpuusers finds what holds a node's NVIDIA devices open: the
// processes with a /dev/nvidia* file open, and the nvidia_drm module's
// users. A MIG layout change fails while a GPU's instances are in use,
// so repartition.sh asks before mig-parted runs, and says who.
package gpuusers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/hostfs"
)

// User is a process with NVIDIA device files open.
type User struct {
	PID     int      `json:"pid"`
	Command string   `json:"command"`
	Devices []string `json:"devices"`
	// What names the program where it is a known one (DCGM, slurmd).
	What string `json:"what,omitempty"`
	// Harmless is a program mig-parted's own hooks leave running across
	// a MIG device change: nvidia-persistenced.
	Harmless bool `json:"harmless"`
}

// Module is a kernel module that holds the GPU while it has users.
type Module struct {
	Name   string   `json:"name"`
	Users  int      `json:"users"`
	UsedBy []string `json:"used_by,omitempty"`
}

// Report is what holds the GPU.
type Report struct {
	Users   []User   `json:"users"`
	Modules []Module `json:"modules"`
	// Unreadable counts the processes whose open files could not be
	// read (not root): the report may miss them.
	Unreadable int `json:"unreadable"`
}

// Busy says whether anything but a harmless program holds the GPU.
func (r Report) Busy() bool {
	for _, u := range r.Users {
		if !u.Harmless {
			return true
		}
	}
	return len(r.Modules) > 0
}

// known are the programs that hold NVIDIA devices on a GPU node, and
// what to say of them.
var known = map[string]string{
	"nv-hostengine":       "DCGM's host engine (nvidia-dcgm.service)",
	"dcgm-exporter":       "dcgm-exporter",
	"slurmd":              "slurmd's own NVML (AcctGatherEnergyType=acct_gather_energy/gpu, or AutoDetect=nvml)",
	"slurmstepd":          "a Slurm job step",
	"nvidia-persistenced": "nvidia-persistenced",
	"Xorg":                "a display server (nvidia_drm)",
	"nvsm":                "NVIDIA System Management (nvsm.service)",
}

// Find reads /proc under root: every process's open files and the
// loaded modules. self, this process, is left out.
func Find(root hostfs.FS, self int) (Report, error) {
	var r Report
	procs, err := os.ReadDir(root.Path("/proc"))
	if err != nil {
		return r, fmt.Errorf("reading %s: %w", root.Path("/proc"), err)
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		devs, err := openDevices(root, pid)
		if errors.Is(err, fs.ErrPermission) {
			r.Unreadable++
			continue
		}
		if err != nil || len(devs) == 0 {
			continue // gone since the listing
		}
		comm, _ := root.ReadFile("/proc", p.Name(), "comm")
		u := User{PID: pid, Command: strings.TrimSpace(string(comm)), Devices: devs}
		u.What = known[u.Command]
		u.Harmless = u.Command == "nvidia-persistenced"
		r.Users = append(r.Users, u)
	}
	sort.Slice(r.Users, func(a, b int) bool { return r.Users[a].PID < r.Users[b].PID })
	modules, err := root.ReadFile("/proc/modules")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	r.Modules = parseModules(modules)
	return r, nil
}

// openDevices is the NVIDIA device files (node paths) that pid has open.
func openDevices(root hostfs.FS, pid int) ([]string, error) {
	dir := root.Path("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue
		}
		// Under a root other than /, a link may name the file under it.
		if p, ok := root.NodePath(target); ok {
			target = p
		}
		if strings.HasPrefix(target, "/dev/nvidia") && !seen[target] {
			seen[target] = true
			out = append(out, target)
		}
	}
	sort.Strings(out)
	return out, nil
}

// holdingModules are the modules whose users hold the GPU: nvidia_drm
// with a display or a framebuffer console on it.
var holdingModules = []string{"nvidia_drm"}

// parseModules reads /proc/modules ("name size users used_by state
// address") for holdingModules that have users.
func parseModules(data []byte) []Module {
	var out []Module
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		users, err := strconv.Atoi(f[2])
		if err != nil || users == 0 || !slices.Contains(holdingModules, f[0]) {
			continue
		}
		m := Module{Name: f[0], Users: users}
		for _, by := range strings.Split(strings.TrimSuffix(f[3], ","), ",") {
			if by != "" && by != "-" {
				m.UsedBy = append(m.UsedBy, by)
			}
		}
		out = append(out, m)
	}
	return out
}

// Line is one line of a report: what holds the GPU, or what the report
// may miss, and what would help (with its leading separator), apart.
type Line struct {
	Text string
	Hint string
}

// Lines says, a line each, what holds the GPU.
func (r Report) Lines() []Line {
	var out []Line
	for _, u := range r.Users {
		what := u.Command
		if u.What != "" && u.What != u.Command {
			what += ": " + u.What
		}
		line := fmt.Sprintf("pid %d (%s) has %s open", u.PID, what, strings.Join(u.Devices, ", "))
		if u.Harmless {
			line += "; harmless: mig-parted's hooks leave it running"
		}
		out = append(out, Line{Text: line})
	}
	for _, m := range r.Modules {
		line := fmt.Sprintf("module %s has %d users", m.Name, m.Users)
		if len(m.UsedBy) > 0 {
			line += " (" + strings.Join(m.UsedBy, ", ") + ")"
		}
		out = append(out, Line{Text: line + ": a display or framebuffer console holds the GPU"})
	}
	if r.Unreadable > 0 {
		out = append(out, Line{Text: fmt.Sprintf("the open files of %d processes could not be read", r.Unreadable), Hint: ": run as root"})
	}
	return out
}
