package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/cmdline"
	"github.com/slurm-mig/slurm-mig/internal/rebalance"
	"github.com/slurm-mig/slurm-mig/internal/rollout"
	"github.com/slurm-mig/slurm-mig/internal/slurmhost"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// applyFlags are rebalance's flags for --apply: the controller that
// drains, changes and resumes the nodes of the proposal.
type applyFlags struct {
	Apply         bool          `help:"Apply the proposal (a dry run without it): drain each node with a reason naming slurm-mig and the config, wait until no job runs there, run --change-command, check that slurmctld holds the new counts, and resume it. Each step is kept in --journal first, so a later run finishes, or rolls back, what a killed one began. Exit 1 when a change was rolled back or failed."`
	ChangeCommand string        `type:"nonempty" placeholder:"CMD" help:"With --apply: the command, run with sh -c on this host, that changes one drained, empty node, with NODE, SELECT (the config) and MIG_CONFIG set: scripts/repartition/repartition.sh on the node, through ssh or Ansible (docs/rebalance.md). It must exit 0 once the node has registered its new devices."`
	Journal       string        `default:"/var/lib/slurm-mig/rebalance" placeholder:"DIR" help:"With --apply: the directory of the changes in progress, a file a node (default /var/lib/slurm-mig/rebalance)."`
	DrainTimeout  time.Duration `default:"4h" placeholder:"DURATION" help:"With --apply: how long a drained node may take to empty before its change is abandoned and it resumes (default 4h)."`
	ChangeTimeout time.Duration `default:"30m" placeholder:"DURATION" help:"With --apply: how long --change-command may run before it is killed, with all it started, and the change rolled back (default 30m)."`
}

func (f *applyFlags) check() error {
	switch {
	case !f.Apply:
		return nil
	case f.ChangeCommand == "":
		return fmt.Errorf("--apply needs --change-command: the command that changes one node")
	case f.DrainTimeout <= 0 || f.ChangeTimeout <= 0:
		return fmt.Errorf("--drain-timeout and --change-timeout must be more than 0")
	}
	return nil
}

// apply runs one pass of the rollout of proposal p.
func (c *rebalanceCmd) apply(e *env, journal *rollout.Journal, p *rebalance.Proposal, nodes []rebalance.Node) error {
	enc := json.NewEncoder(e.stdout)
	// The command runs from another directory, often on the node (ssh):
	// a relative path would name another file there.
	migConfig, err := filepath.Abs(c.MigConfig)
	if err != nil {
		return err
	}
	ctl := &rollout.Controller{
		Store: journal,
		Slurm: scontrolNodes{},
		Changer: rollout.Command{Shell: c.ChangeCommand, MigConfig: migConfig, Timeout: c.ChangeTimeout,
			Hold: journal.Lock(), Output: journal.OutputPath},
		Limits: rollout.Limits{MaxNodes: c.MaxNodes, DrainTimeout: c.DrainTimeout, MaxAttempts: 2},
		Now:    time.Now,
		Report: func(ev rollout.Event) {
			if c.JSON {
				enc.Encode(ev)
				return
			}
			detail := ""
			if ev.Detail != "" {
				detail = ": " + ev.Detail
			}
			fmt.Fprintf(e.stdout, "%s %s %s: %s%s\n", ev.Time.Format(slurmconf.TimeLayout), ev.Node, ev.Step, ev.What, detail)
		},
	}
	// What the run did is printed even when one node's step erred: the
	// journal's other changes went on.
	out, runErr := ctl.Run(rolloutChanges(p, nodes))
	if c.JSON {
		if err := enc.Encode(struct {
			Outcome rollout.Outcome `json:"outcome"`
		}{out}); err != nil {
			return err
		}
	} else if err := cmdline.Print(e.stdout, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "done %d, rolled back %d, abandoned %d, failed %d, waiting %d, skipped %d\n",
			len(out.Done), len(out.RolledBack), len(out.Abandoned), len(out.Failed), len(out.Waiting), len(out.Skipped))
		return err
	}); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if out.Troubled() {
		return cmdline.Status(1)
	}
	return nil
}

// rolloutChanges are the proposal's changes, each with its node's
// config now: the way back.
func rolloutChanges(p *rebalance.Proposal, nodes []rebalance.Node) []rollout.Change {
	now := map[string]string{}
	for i := range nodes {
		now[nodes[i].Name] = nodes[i].ConfigNow()
	}
	var out []rollout.Change
	for _, ch := range p.Changes {
		out = append(out, rollout.Change{Node: ch.Node, Config: ch.Config, Gres: ch.Gres, WasConfig: now[ch.Node], WasGres: ch.Was})
	}
	return out
}

// scontrolNodes is slurmctld, through scontrol.
type scontrolNodes struct{}

func (scontrolNodes) Node(name string) (slurmhost.Node, error) { return slurmhost.ShowNode(name) }
func (scontrolNodes) Drain(name, reason string) error          { return slurmhost.Drain(name, reason) }
func (scontrolNodes) Resume(name string) error                 { return slurmhost.Resume(name) }
