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
	"slices"
	"strings"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/internal/jobenv"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/slurmd"
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
	State *jobenv.StateReport `json:"state,omitempty"`
	// Slurmd is how slurmd reads the node's gres.conf and slurm.conf,
	// against the devices the node has.
	Slurmd  *SlurmdReport `json:"slurmd,omitempty"`
	Verdict string        `json:"verdict"`
	// Fix is what would help with the verdict's last part (a stale device
	// state: advice.StateStale), for the command line to word; 0 for none.
	Fix advice.Fix `json:"-"`
	// Hint is the command line's words for Fix, printed after the verdict.
	Hint string `json:"-"`
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

// SlurmdReport says whether slurmd of the release reads the files as the
// node's devices (slurmd.ReadNode), one GPU index a device, and why
// not.
type SlurmdReport struct {
	Release string `json:"release,omitempty"` // "" where not known: the newest rules
	Same    bool   `json:"same"`
	// Why are slurmd's problems that make it read other devices, or
	// the difference in devices.
	Why []slurmconf.Problem `json:"why,omitempty"`
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
	// registration was refused (slurmhost.Node.RegistrationRefused) is never
	// "same": its Gres= is what it reported, and Reason says what is wrong.
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
	// SlurmdConf is the slurm.conf slurmd reads, where SlurmConf is not
	// given ($SLURM_CONF, or the default path): with it, how slurmd reads
	// the node is compared, not its counts. "" for none.
	SlurmdConf string
	// Release is the release of slurmd that reads the files; not known:
	// the newest rules.
	Release slurmconf.Version
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
	var gf *slurmconf.GresFile
	if in.GresConf != "" {
		var r *GresConfReport
		var err error
		if gf, r, err = compareGresConf(in.GresConf, node, in.Config.Records); err != nil {
			return nil, err
		}
		rep.GresConf, rep.Same = r, rep.Same && r.Same
	}
	var decl *slurmconf.SlurmNode
	if in.SlurmConf != "" {
		var err error
		if decl, err = slurmconf.ReadSlurmNode(in.SlurmConf, node); err != nil {
			return nil, err
		}
		ng := decl.NodeGres()
		r, err := CompareCounts(ng.Pos, ng.Gres, generated)
		if err != nil {
			return nil, err
		}
		rep.SlurmConf, rep.Same = r, rep.Same && r.Same
	}
	if decl == nil && in.SlurmdConf != "" && node != "" && gf != nil {
		// Not asked for: a slurm.conf that does not declare the node
		// (another node's files) leaves slurmd's reading unsaid.
		decl, _ = slurmconf.ReadSlurmNode(in.SlurmdConf, node)
	}
	switch {
	case gf != nil && decl != nil:
		r := compareSlurmd(slurmd.CheckNode(gf, node, in.Release, decl), in.Config.Records, in.Release)
		rep.Slurmd, rep.Same = r, rep.Same && r.Same
	case gf != nil && node != "":
		// Without the node's slurm.conf line, what slurmd reads of the
		// lines alone: a split beside the file's own mps or shard lines,
		// a device listed twice, a line it dies of.
		nc := slurmd.CheckNode(gf, node, in.Release, nil)
		if nc.Fatal() || len(nc.Misread) > 0 {
			r := compareSlurmd(nc, in.Config.Records, in.Release)
			rep.Slurmd, rep.Same = r, rep.Same && r.Same
		}
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
	rep.Verdict, rep.Fix = verdict(rep, in.Config.Devices())
	return rep, nil
}

// compareGresConf reads the gres.conf at path, once (it may be a pipe),
// and compares its lines for node with the generated records.
func compareGresConf(path, node string, generated []slurmconf.GresRecord) (*slurmconf.GresFile, *GresConfReport, error) {
	f, err := slurmconf.ReadGresFile(path)
	if err != nil {
		if _, statErr := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && errors.Is(statErr, fs.ErrNotExist) {
			rep, err := missingGresConf(path, generated)
			return nil, rep, err
		}
		return nil, nil, err
	}
	conf, err := f.Node(node)
	if err != nil {
		return nil, nil, err
	}
	if node != "" && !conf.Named && len(conf.Records) == 0 && len(conf.Others.Names) > 0 && len(generated) > 0 {
		return nil, nil, notNamed(path, node, conf)
	}
	cur, err := conf.Units()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	gen, err := slurmconf.SplitUnits(generated)
	if err != nil {
		return nil, nil, err
	}
	d := slurmconf.DiffUnits(gpuUnits(cur), gen)
	return f, &GresConfReport{Path: path, Same: d.Same(), AutoDetect: conf.AutoDetect, AutoDetectPos: conf.AutoDetectPos, Problems: conf.Problems, GresDiff: d}, nil
}

// compareSlurmd: the files are the node's devices as slurmd reads them only
// where slurmd starts, splits or ignores no line, and gives one GPU index
// to each device that would be generated and to nothing else.
func compareSlurmd(nc slurmd.NodeCheck, generated []slurmconf.GresRecord, v slurmconf.Version) *SlurmdReport {
	r := &SlurmdReport{Same: true}
	if v.Known() {
		r.Release = v.String()
	}
	if nc.Fatal() {
		r.Why = append(r.Why, nc.Problems[len(nc.Problems)-1])
	}
	r.Why = append(r.Why, nc.Misread...)
	if len(r.Why) == 0 {
		want := map[string]int{}
		units, err := slurmconf.SplitUnits(generated)
		if err == nil {
			for _, u := range units {
				if strings.EqualFold(u.Name, "gpu") {
					want[fileSet(u.Files)]++
				}
			}
		}
		n := 0
		for _, c := range want {
			n += c
		}
		for _, g := range nc.GPUs {
			files := strings.Join(g.Files, ",")
			if want[fileSet(g.Files)] > 0 {
				want[fileSet(g.Files)]--
				continue
			}
			r.Why = append(r.Why, slurmconf.Problem{Pos: g.Pos, Severity: slurmconf.Error,
				Message: fmt.Sprintf("slurmd gives GPU index %d the files %s, which are no device of the node", g.Index, orNone(files))})
			break
		}
		if len(r.Why) == 0 && len(nc.GPUs) < n {
			r.Why = append(r.Why, slurmconf.Problem{Pos: declPos(nc), Severity: slurmconf.Error,
				Message: fmt.Sprintf("slurmd reads %s where the node has %s", gresgen.DeviceCount(len(nc.GPUs)), gresgen.DeviceCount(n))})
		}
	}
	r.Same = len(r.Why) == 0
	return r
}

// fileSet is a device's files in one order: slurmd gives a job a
// MultipleFiles= record's files in any order written.
func fileSet(files []string) string {
	return strings.Join(slices.Sorted(slices.Values(files)), ",")
}

// declPos is where the node's slurm.conf line is, for a difference of
// the whole node.
func declPos(nc slurmd.NodeCheck) string {
	if nc.Decl != nil {
		return nc.Decl.Pos
	}
	return ""
}

// missingGresConf compares a gres.conf not yet written, before a node's
// first gen, as a diff with an empty file: every device to add, not trouble.
// A missing Include stays an error: it names a file the admin meant to exist.
func missingGresConf(path string, generated []slurmconf.GresRecord) (*GresConfReport, error) {
	gen, err := slurmconf.SplitUnits(generated)
	if err != nil {
		return nil, err
	}
	d := slurmconf.DiffUnits(nil, gen)
	return &GresConfReport{Path: path, Same: d.Same(), Missing: true, GresDiff: d}, nil
}

// notNamed is the error that no line of the gres.conf at path names node
// though some name others, most often a full name against a short one,
// which slurmd does not match either; its advice names the file's alias.
func notNamed(path, node string, conf *slurmconf.GresConf) error {
	err := fmt.Errorf("%s: no line names node %s%s", path, node, conf.Others.Said(node))
	if alias := conf.Others.Alias; alias != "" {
		return advice.Wrap(err, advice.GresConfNodeAlias, alias, node)
	}
	return advice.Wrap(err, advice.GresConfNodeName)
}

// CompareCounts compares the Gres= in force at source (a file:line, or
// "scontrol") with the node's generated counts, for diff and plan alike.
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

// verdict sums the comparison up in one line an admin reads first, with
// the fix for its last part, if any (a stale device state).
func verdict(r *Report, devices int) (string, advice.Fix) {
	if r.Same {
		return fmt.Sprintf("same: %s matches this node's %s", sources(r), gresgen.DeviceCount(devices)), 0
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
	fix := advice.Fix(0)
	if sd := r.Slurmd; sd != nil && !sd.Same {
		w := sd.Why[0]
		who, rules := "slurmd", ""
		if sd.Release != "" {
			who += " " + sd.Release
		} else {
			// Releases read some lines otherwise (MultipleFiles= beside
			// mps or shard): the newest one's reading may not be this node's.
			rules, fix = "; slurmd's release is not known here, so the newest one's rules were taken", advice.SlurmVersion
		}
		parts = append(parts, fmt.Sprintf("%s reads other devices than the node has (%s: %s)%s", who, w.Pos, w.Message, rules))
	}
	if st := r.State; st != nil && !st.Same {
		n := fmt.Sprintf("%d differences", len(st.Problems))
		if len(st.Problems) == 1 {
			n = "1 difference"
		}
		parts = append(parts, fmt.Sprintf("device state %s is stale (%s)", st.Path, n))
		return "different: " + strings.Join(parts, "; "), advice.StateStale
	}
	return "different: " + strings.Join(parts, "; "), fix
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
