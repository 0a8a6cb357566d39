package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/migplan"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/rebalance"
	"github.com/slurm-mig/slurm-mig/internal/rollout"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

type rebalanceCmd struct {
	Snapshots []string          `arg:"" optional:"" name:"SNAPSHOT|DIR" help:"The nodes' snapshots (slurm-mig snapshot), files or directories of *.json; each names its node by its host (or --hardware)."`
	Queue     string            `type:"nonempty" required:"" placeholder:"FILE" help:"The pending jobs, as printed by: ${queue_format} (- for standard input)."`
	Nodes     string            `type:"nonempty" required:"" placeholder:"FILE" help:"The nodes' states and jobs, as printed by: ${nodes_format} (- for standard input)."`
	MigConfig string            `type:"nonempty" required:"" placeholder:"FILE" help:"The site's mig-parted config file (v1)."`
	Configs   []string          `placeholder:"NAME" help:"The configs of FILE a node may take (default: all of them)."`
	Hardware  []string          `sep:"none" placeholder:"NODES=SNAPSHOT" help:"The nodes of the hostlist NODES have the GPUs of SNAPSHOT's node; their layouts now are their Gres= in the node states (repeatable; in place of a snapshot per node)."`
	MaxNodes  int               `default:"1" placeholder:"N" help:"Change at most N nodes, 1 or more (default 1)."`
	MinWait   time.Duration     `default:"10m" placeholder:"DURATION" help:"Act only for jobs that have waited longer than this (default 10m)."`
	Keep      float64           `default:"0.1" placeholder:"SHARE" help:"Keep at least this share (0 to 1, default 0.1) of the most the fleet could offer of each GPU type (each node now or under any allowed config)."`
	Now       string            `placeholder:"TIME" help:"The time to measure waits from, as squeue prints times (default: now)."`
	TypeStyle string            `enum:"model,profile,autodetect" default:"model" placeholder:"STYLE" help:"GRES type names, as gen names them. One of: ${enum} (default model)."`
	TypeMap   map[string]string `mapsep:"none" placeholder:"NAME=TYPE" help:"As gen takes it (repeatable)."`
	History   string            `type:"nonempty" placeholder:"FILE" help:"Propose with the forecasting policy (the simulator's): the jobs of the last day, as printed by: ${history_format}. Arrival rates, run times and the running jobs' time limits come from it; --max-nodes bounds the nodes drained at once, and --keep does not apply."`
	Explain   bool              `help:"Say, for each pending job that asks one node for one MIG type, why it waits: busy (every device of its type busy), layout (no node has its type), fragmentation (idle slices enough on a node, cut into other sizes), or other."`
	JSON      bool              `name:"json" help:"Print the proposal as JSON: {\"changes\": [{\"node\", \"config\", \"gres\", \"was\", \"jobs\"}], \"node_lines\", \"pending\", \"demand\", \"waiting\", \"unserved\", \"held\": [{\"node\", \"why\"}], \"unoffered\" (the types waiting jobs ask for that no node offers; absent when none), \"refused\": [{\"config\", \"nodes\", \"why\"}] (the configs named with --configs that nodes cannot take; absent when none)}."`
	applyFlags
}

func (c *rebalanceCmd) Run(e *env) error {
	if c.MaxNodes < 1 {
		return fmt.Errorf("--max-nodes must be 1 or more, not %d: rebalance proposes changes to at most that many nodes", c.MaxNodes)
	}
	if err := c.applyFlags.check(); err != nil {
		return err
	}
	if c.Queue == "-" && c.Nodes == "-" {
		return fmt.Errorf("--queue and --nodes cannot both read standard input")
	}
	if c.History == "-" && (c.Queue == "-" || c.Nodes == "-") {
		return fmt.Errorf("--history cannot read standard input with --queue or --nodes")
	}
	if c.Apply && c.Explain {
		return fmt.Errorf("--explain cannot go with --apply: it only says why jobs wait, and would leave the journal's changes where they are")
	}
	if c.Keep < 0 || c.Keep > 1 {
		return fmt.Errorf("--keep must be between 0 and 1, not %g", c.Keep)
	}
	now := time.Now()
	if c.Now != "" {
		t, err := time.ParseInLocation(slurmconf.TimeLayout, c.Now, time.Local)
		if err != nil {
			return fmt.Errorf("--now %q: want %s", c.Now, slurmconf.TimeLayout)
		}
		now = t
	}
	queue, err := readInput(c.Queue, "a queue")
	if err != nil {
		return err
	}
	jobs, err := rebalance.ParseQueue(c.Queue, queue, time.Local)
	if err != nil {
		return err
	}
	text, err := readInput(c.Nodes, "node states")
	if err != nil {
		return err
	}
	states, err := rebalance.ParseNodes(c.Nodes, text)
	if err != nil {
		return err
	}
	cfg, err := migplan.ReadConfig(c.MigConfig)
	if err != nil {
		return err
	}
	names := c.Configs
	if len(names) == 0 {
		names = cfg.Names()
	}
	ev, err := c.evaluator(cfg, names)
	if err != nil {
		return err
	}
	if len(c.Snapshots) == 0 && len(c.Hardware) == 0 {
		return fmt.Errorf("give the nodes' snapshots, or --hardware NODES=SNAPSHOT")
	}
	hw, err := readHardware(c.Hardware, slurmconf.NewNameBudget())
	if err != nil {
		return err
	}
	var snaps []*model.Node
	if len(c.Snapshots) > 0 {
		if snaps, err = rebalance.ReadSnapshots(c.Snapshots); err != nil {
			return err
		}
	}
	if c.Explain {
		return cmdline.PrintReport(e.stdout, explanation(rebalance.Explain(states, jobs, rebalance.NodeSlices(snaps, hw))), c.JSON)
	}
	nodes, err := rebalance.Fleet(snaps, hw, states, ev)
	if err != nil {
		return err
	}
	in := rebalance.SlurmInput{Nodes: nodes, States: states, Jobs: jobs, Now: now}
	var journal *rollout.Journal
	if c.Apply {
		// The journal, locked for the run, says which nodes are changing
		// and when each last changed: the policy's draining and dwell.
		if journal, err = rollout.OpenJournal(c.Journal); err != nil {
			return err
		}
		defer journal.Close()
		entries, err := journal.Entries()
		if err != nil {
			return err
		}
		last, err := journal.LastChanges()
		if err != nil {
			return err
		}
		in.LastChange, in.Abandoned = map[string]time.Time{}, map[string]bool{}
		for node, l := range last {
			in.LastChange[node] = l.At
			in.Abandoned[node] = l.Outcome == rollout.OutcomeAbandoned
		}
		in.Changing = rollout.Changing(entries)
	}
	var p *rebalance.Proposal
	if c.History != "" {
		if p, err = c.byPolicy(in); err != nil {
			return err
		}
	} else {
		p = rebalance.Propose(nodes, jobs, rebalance.Limits{MaxNodes: c.MaxNodes, MinWait: c.MinWait, Keep: c.Keep, Now: now,
			Changing: in.Changing, Abandoned: in.Abandoned})
	}
	if c.Apply {
		// The way back is any config of the file, not only those
		// --configs lets nodes take; only new changes need it.
		back := nodes
		if len(c.Configs) > 0 && len(p.Changes) > 0 {
			all, err := c.evaluator(cfg, cfg.Names())
			if err != nil {
				return err
			}
			if back, err = rebalance.Fleet(snaps, hw, states, all); err != nil {
				return err
			}
		}
		return c.apply(e, journal, p, back)
	}
	if err := cmdline.PrintReport(e.stdout, proposal{p, c.MinWait, rebalance.Refusals(nodes, c.Configs)}, c.JSON); err != nil {
		return err
	}
	if len(p.Changes) > 0 {
		return cmdline.Status(1) // changes proposed
	}
	return nil
}

// evaluator weighs the configs named of cfg.
func (c *rebalanceCmd) evaluator(cfg *migplan.Config, names []string) (*rebalance.Evaluator, error) {
	ev := &rebalance.Evaluator{Gres: gresgen.Options{TypeStyle: gresgen.TypeStyle(c.TypeStyle), TypeMap: c.TypeMap}}
	for _, name := range names {
		sel, err := cfg.Select(name)
		if err != nil {
			return nil, err
		}
		ev.Configs = append(ev.Configs, sel)
	}
	return ev, nil
}

// byPolicy proposes with Decide, from the history file and in.
func (c *rebalanceCmd) byPolicy(in rebalance.SlurmInput) (*rebalance.Proposal, error) {
	text, err := readInput(c.History, "a job history")
	if err != nil {
		return nil, err
	}
	if in.History, err = rebalance.ParseHistory(c.History, text, time.Local); err != nil {
		return nil, err
	}
	lim := rebalance.DefaultPolicyLimits()
	lim.MaxDraining = c.MaxNodes
	p, err := rebalance.ProposeByPolicy(in, rebalance.DefaultWindows(), lim, c.MinWait)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.History, err)
	}
	return p, nil
}

// readInput reads a file, or standard input for "-".
func readInput(path, what string) ([]byte, error) {
	if path == "-" {
		return fileio.ReadStream(os.Stdin, "standard input", 256<<20, what)
	}
	return fileio.ReadFile(path, 256<<20, what)
}

// proposal prints a proposal: each change with the jobs it lets start,
// then the fleet's slurm.conf lines after the changes.
type proposal struct {
	*rebalance.Proposal
	minWait time.Duration
	// refused are the configs named with --configs that nodes cannot take.
	refused []rebalance.Refusal
}

func (p proposal) WriteText(w io.Writer) error {
	if len(p.Changes) == 0 {
		if _, err := fmt.Fprintf(w, "nothing to do: %d pending jobs, %d asking one node for one GPU type, %d of them waiting longer than %s, %d that no change on an idle node would start\n",
			p.Pending, p.Demand, p.Waiting, p.minWait, len(p.Unserved)); err != nil {
			return err
		}
		return p.writeWhy(w)
	}
	for _, c := range p.Changes {
		if _, err := fmt.Fprintf(w, "%s: apply %s (Gres=%s, was %s): starts jobs %s\n", c.Node, c.Config, c.Gres, c.Was, strings.Join(c.Jobs, ",")); err != nil {
			return err
		}
	}
	if n := len(p.Unserved); n > 0 {
		const shown = 20 // a queue of thousands is said by its count
		ids := strings.Join(p.Unserved[:min(n, shown)], ",")
		if n > shown {
			ids += fmt.Sprintf(" and %d more", n-shown)
		}
		if _, err := fmt.Fprintf(w, "still waiting longer than %s, which no allowed change starts: %s\n", p.minWait, ids); err != nil {
			return err
		}
	}
	if err := p.writeWhy(w); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "# slurm.conf node lines after the changes:"); err != nil {
		return err
	}
	for _, l := range p.NodeLines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// writeWhy says what kept nodes and jobs out of the proposal, as --json
// does: held nodes, those of one reason on one line under a hostlist, and
// the types waiting jobs ask for that no node offers.
func (p proposal) writeWhy(w io.Writer) error {
	var reasons []string
	nodes := map[string][]string{}
	for _, h := range p.Held {
		why := h.Why + h.Hint // the hint after the reason, as say puts it
		if nodes[why] == nil {
			reasons = append(reasons, why)
		}
		nodes[why] = append(nodes[why], h.Node)
	}
	for _, why := range reasons {
		if _, err := fmt.Fprintf(w, "held %s: %s\n", slurmconf.CompressHostlist(nodes[why]), why); err != nil {
			return err
		}
	}
	for _, r := range p.refused {
		if _, err := fmt.Fprintf(w, "config %s refused for %s: %s%s\n", r.Config, slurmconf.CompressHostlist(r.Nodes), r.Why, r.Hint); err != nil {
			return err
		}
	}
	ask := "do the queue's type names match the nodes' (--type-style, --type-map)?"
	if len(p.refused) > 0 {
		ask = "do the queue's type names match the nodes' (--type-style, --type-map), and could the nodes take the configs refused above?"
	}
	for _, t := range p.Unoffered {
		if _, err := fmt.Fprintf(w, "no node offers gpu:%s, now or under an allowed config, though waiting jobs ask for it: %s\n", t, ask); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON says a held node's hint in its "why", after the reason, as
// the text does: one line for people (drift's verdict does the same).
func (p proposal) WriteJSON(w io.Writer) error {
	out := *p.Proposal
	out.Held = make([]rebalance.Held, len(p.Held))
	for i, h := range p.Held {
		out.Held[i] = rebalance.Held{Node: h.Node, Why: h.Why + h.Hint}
	}
	refused := make([]rebalance.Refusal, len(p.refused))
	for i, r := range p.refused {
		refused[i] = rebalance.Refusal{Config: r.Config, Nodes: r.Nodes, Why: r.Why + r.Hint}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*rebalance.Proposal
		Refused []rebalance.Refusal `json:"refused,omitempty"`
	}{&out, refused})
}

// explanation prints why each pending MIG job waits, a line a job.
type explanation []rebalance.Explanation

func (x explanation) WriteText(w io.Writer) error {
	if len(x) == 0 {
		_, err := fmt.Fprintln(w, "no pending job asks one node for one MIG type")
		return err
	}
	for _, e := range x {
		if _, err := fmt.Fprintf(w, "%s (%s:%d): %s: %s\n", e.Job, e.Type, e.Count, e.Why, e.Detail); err != nil {
			return err
		}
	}
	return nil
}

func (x explanation) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Pending []rebalance.Explanation `json:"pending"`
	}{append([]rebalance.Explanation{}, x...)})
}
