// Package drift compares what slurm-mig would write for a node with the
// configuration in force: a gres.conf, the node's Gres= in slurm.conf,
// and what the running slurmctld holds. Its Report says what differs,
// where (file:line), and sums it up in a verdict an admin reads first.
package drift

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Report is the comparison; its JSON form is for automation.
type Report struct {
	Node      string          `json:"node"` // empty: only lines for every node were compared
	Same      bool            `json:"same"`
	GresConf  *GresConfReport `json:"gres_conf,omitempty"`
	SlurmConf *CountsReport   `json:"slurm_conf,omitempty"`
	Running   *CountsReport   `json:"running,omitempty"`
	// State compares the device state slurm-mig env reads with the GPUs.
	State   *jobenv.StateReport `json:"state,omitempty"`
	Verdict string              `json:"verdict"`
}

// GresConfReport compares a gres.conf device by device. Units read from
// the file carry the file:line of their record (Pos).
type GresConfReport struct {
	Path string `json:"path"`
	Same bool   `json:"same"`
	// Missing says the file does not exist yet: every device is to add.
	Missing bool `json:"missing,omitempty"`
	// AutoDetect is the AutoDetect= in force for the node, and where it
	// is set: with nvml, slurmd adds what NVML finds to these lines.
	AutoDetect    string `json:"autodetect,omitempty"`
	AutoDetectPos string `json:"autodetect_pos,omitempty"`
	// Problems are the lines slurmd logs and skips, or reads otherwise
	// than written; the devices compared are those it reads.
	Problems []slurmconf.Problem `json:"problems,omitempty"`
	slurmconf.GresDiff
}

// CountsReport compares Gres= counts.
type CountsReport struct {
	Source string                  `json:"source"` // file:line of the NodeName line, or "scontrol"
	Gres   string                  `json:"gres"`   // the Gres= value in force
	Same   bool                    `json:"same"`
	Counts []slurmconf.CountChange `json:"counts"`
	// Drains: some count declared is more than the node has, which
	// drains it; automation fails on this, not on any difference.
	Drains bool `json:"drains"`
	// State and Reason are slurmctld's, with --running. A node whose
	// registration slurmctld refused (INVAL; on 20.11 DRAIN with its
	// count reason: slurmhost.Node.RegistrationRefused) is never "same": its Gres=
	// is then what the node reported, and Reason says what is wrong.
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
	// refused: slurmctld refused the node's registration, as read once
	// from State and Reason.
	refused bool
}

// DefaultGresConf is compared when Inputs name nothing to compare with.
const DefaultGresConf = "/etc/slurm/gres.conf"

// Inputs say what to compare the generated records with: GresConf,
// SlurmConf, Running, or else DefaultGresConf.
type Inputs struct {
	// Config is what would be generated. Its NodeName is the node's name,
	// as NodeName= hostlists name it; empty compares only the gres.conf
	// lines that apply to every node (gen --no-node-name writes those).
	Config    *gresgen.Config
	GresConf  string // a gres.conf path
	SlurmConf string // a slurm.conf path
	// Running asks slurmctld; ShowNode is how (nil: slurmhost.ShowNode).
	Running  bool
	ShowNode func(node string) (slurmhost.Node, error)
	// State, when set, compares the device state file with the GPUs.
	State *StateInput
	// Explain says an error, or a part of the verdict, that carries a fix
	// (advice) in the command line's words; nil says it without them.
	Explain func(error) string
}

// ReadStdinTwice reports whether the gres.conf and the slurm.conf would
// both be read from standard input, which only one of them can be.
func (in Inputs) ReadStdinTwice() bool {
	return in.GresConf == slurmconf.Stdin && in.SlurmConf == slurmconf.Stdin
}

// StateInput is the device state to compare: the file, the state of the
// GPUs now, and whether it was asked for by name (then it alone is a
// target; otherwise the default gres.conf is compared too).
type StateInput struct {
	Path  string
	Want  *jobenv.State
	Asked bool
}

// StateToCompare is the StateInput for the state file f names, or nil
// when there is none to compare (jobenv.StateFile.ToCompare); the state
// wanted is that of node n's GPUs, named name.
func StateToCompare(f jobenv.StateFile, n *model.Node, name string) (*StateInput, error) {
	path := f.ToCompare()
	if path == "" {
		return nil, nil
	}
	want, err := f.Build(n, name, "")
	if err != nil {
		return nil, err
	}
	return &StateInput{Path: path, Want: want, Asked: f.Flag != ""}, nil
}

// Compare compares and reports. A file that cannot be read or parsed is
// an error naming it, not a difference.
func Compare(in Inputs) (*Report, error) {
	node, generated := in.Config.NodeName, in.Config.Counts
	if node == "" && (in.SlurmConf != "" || in.Running) {
		return nil, errors.New("comparing with slurm.conf or slurmctld needs the node's name")
	}
	if in.GresConf == "" && in.SlurmConf == "" && !in.Running && (in.State == nil || !in.State.Asked) {
		in.GresConf = DefaultGresConf
	}
	rep := &Report{Node: node, Same: true}
	if in.GresConf != "" {
		r, err := compareGresConf(in.GresConf, node, in.Config.Records)
		if err != nil {
			return nil, err
		}
		rep.GresConf, rep.Same = r, rep.Same && r.Same
	}
	if in.SlurmConf != "" {
		ng, err := slurmconf.ReadNodeGres(in.SlurmConf, node)
		if err != nil {
			return nil, err
		}
		r, err := CompareCounts(ng.Pos, ng.Gres, generated)
		if err != nil {
			return nil, err
		}
		rep.SlurmConf, rep.Same = r, rep.Same && r.Same
	}
	if in.Running {
		show := in.ShowNode
		if show == nil {
			show = slurmhost.ShowNode
		}
		running, err := show(node)
		if err != nil {
			return nil, err
		}
		r, err := CompareCounts("scontrol", running.Gres, generated)
		if err != nil {
			return nil, err
		}
		r.State, r.Reason, r.refused = running.State, running.Reason, running.RegistrationRefused()
		r.Same = r.Same && !r.refused
		rep.Running, rep.Same = r, rep.Same && r.Same
	}
	if in.State != nil {
		st, err := jobenv.CompareState(in.State.Path, in.State.Want)
		if err != nil {
			return nil, err
		}
		rep.State, rep.Same = st, rep.Same && st.Same
	}
	explain := in.Explain
	if explain == nil {
		explain = error.Error
	}
	rep.Verdict = verdict(rep, in.Config.Devices(), explain)
	return rep, nil
}

func compareGresConf(path, node string, generated []slurmconf.GresRecord) (*GresConfReport, error) {
	conf, err := slurmconf.ReadGresConf(path, node)
	if err != nil {
		if _, statErr := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && errors.Is(statErr, fs.ErrNotExist) {
			return missingGresConf(path, generated)
		}
		return nil, err
	}
	if node != "" && !conf.Named && len(conf.Records) == 0 && len(conf.Others.Names) > 0 && len(generated) > 0 {
		return nil, notNamed(path, node, conf)
	}
	cur, err := conf.Units()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	gen, err := slurmconf.SplitUnits(generated)
	if err != nil {
		return nil, err
	}
	d := slurmconf.DiffUnits(gpuUnits(cur), gen)
	return &GresConfReport{Path: path, Same: d.Same(), AutoDetect: conf.AutoDetect, AutoDetectPos: conf.AutoDetectPos, Problems: conf.Problems, GresDiff: d}, nil
}

// missingGresConf compares a gres.conf that does not exist yet, a node's
// before its first gen: a difference, every device to add, as a diff of
// an empty file says, and not trouble, as a file that cannot be read is.
// An Include that does not exist stays an error: it names a file the
// admin meant to be there.
func missingGresConf(path string, generated []slurmconf.GresRecord) (*GresConfReport, error) {
	gen, err := slurmconf.SplitUnits(generated)
	if err != nil {
		return nil, err
	}
	d := slurmconf.DiffUnits(nil, gen)
	return &GresConfReport{Path: path, Same: d.Same(), Missing: true, GresDiff: d}, nil
}

// notNamed says that no line of the gres.conf at path names node, though
// some name others: listed device by device as missing, the node's
// devices would hide that the names differ, most often a short name
// against full ones (n1 and n1.cluster.example), which slurmd, matching
// names exactly, does not take for one either. The error carries the
// fix: the node's name as slurm.conf has it, which may be the other name
// the file uses for it (Alias).
func notNamed(path, node string, conf *slurmconf.GresConf) error {
	err := fmt.Errorf("%s: no line names node %s%s", path, node, conf.Others.Said(node))
	if alias := conf.Others.Alias; alias != "" {
		return advice.Wrap(err, advice.GresConfNodeAlias, alias, node)
	}
	return advice.Wrap(err, advice.GresConfNodeName)
}

// CompareCounts compares the Gres= in force at source (a file:line, or
// "scontrol") with the counts generated for the node: diff's comparison,
// which plan's fleet diff shares, so that both say the same of a node.
// Only gpu counts are compared; Drains says whether the node would drain.
func CompareCounts(source, gres string, generated []slurmconf.GresCount) (*CountsReport, error) {
	current, err := slurmconf.ParseGresList(gres)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	d := slurmconf.DiffCounts(gpuCounts(current), generated)
	return &CountsReport{Source: source, Gres: gres, Same: len(d) == 0, Counts: d, Drains: slurmconf.Drains(d)}, nil
}

// gpuUnits and gpuCounts keep the GRES slurm-mig writes: other GRES a
// site declares (mps, shard, nic) are not its business.
func gpuUnits(units []slurmconf.Unit) []slurmconf.Unit {
	var out []slurmconf.Unit
	for _, u := range units {
		if strings.EqualFold(u.Name, "gpu") {
			out = append(out, u)
		}
	}
	return out
}

func gpuCounts(counts []slurmconf.GresCount) []slurmconf.GresCount {
	var out []slurmconf.GresCount
	for _, c := range counts {
		if strings.EqualFold(c.Name, "gpu") {
			out = append(out, c)
		}
	}
	return out
}

// verdict sums the comparison up in one line an admin reads first;
// explain says its parts that carry a fix (a stale device state).
func verdict(r *Report, devices int, explain func(error) string) string {
	if r.Same {
		return fmt.Sprintf("same: %s matches this node's %s", sources(r), gresgen.DeviceCount(devices))
	}
	var parts []string
	if g := r.GresConf; g != nil && g.Missing && !g.Same {
		parts = append(parts, fmt.Sprintf("%s does not exist yet: all %s to add", g.Path, gresgen.DeviceCount(len(g.Added))))
	} else if g != nil && !g.Same {
		parts = append(parts, fmt.Sprintf("gres.conf has %d to add, %d to remove, %d to change", len(g.Added), len(g.Removed), len(g.Changed)))
	}
	if run := r.Running; run != nil && run.refused {
		parts = append(parts, fmt.Sprintf("slurmctld holds %s in %s: %s", r.Node, run.State, orNone(run.Reason)))
	}
	for _, cr := range []struct {
		what string
		r    *CountsReport
	}{{"slurm.conf", r.SlurmConf}, {"slurmctld", r.Running}} {
		if cr.r == nil || len(cr.r.Counts) == 0 {
			continue
		}
		var items []string
		for _, c := range cr.r.Counts {
			items = append(items, fmt.Sprintf("%s %d declared, %d here", slurmconf.GresName(c.Name, c.Type), c.Current, c.Generated))
		}
		msg := cr.what + ": " + strings.Join(items, ", ")
		if cr.r.Drains {
			msg += " (slurmctld drains a node that has fewer than declared)"
		}
		parts = append(parts, msg)
	}
	if st := r.State; st != nil && !st.Same {
		n := fmt.Sprintf("%d differences", len(st.Problems))
		if len(st.Problems) == 1 {
			n = "1 difference"
		}
		parts = append(parts, explain(advice.Wrap(fmt.Errorf("device state %s is stale (%s)", st.Path, n), advice.StateStale)))
	}
	return "different: " + strings.Join(parts, "; ")
}

func sources(r *Report) string {
	var s []string
	if r.GresConf != nil {
		s = append(s, r.GresConf.Path)
	}
	if r.SlurmConf != nil {
		s = append(s, "slurm.conf ("+r.SlurmConf.Source+")")
	}
	if r.Running != nil {
		s = append(s, "slurmctld")
	}
	if r.State != nil {
		s = append(s, "device state "+r.State.Path)
	}
	return strings.Join(s, " and ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
