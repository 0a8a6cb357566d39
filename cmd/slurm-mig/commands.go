package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// sourceFlags choose where the node model comes from.
type sourceFlags struct {
	From string `placeholder:"FILE" help:"Work from a snapshot (slurm-mig snapshot) instead of NVML. Cap minors it lacks are read from mig-minors under --root."`

	nvmlOnly bool // the command has no --from (snapshot): do not suggest it
}

// load discovers the node (or reads the snapshot) and resolves cap minors
// under the global --root.
func (s *sourceFlags) load(e *env, g *cli) (*discover.Node, error) {
	var node *discover.Node
	var err error
	if s.From != "" {
		node, err = discover.LoadSnapshot(s.From)
	} else {
		node, err = discoverWithin(e, g.Root, g.Timeout)
		if discover.NoNVMLLibrary(err) && !s.nvmlOnly {
			err = fmt.Errorf("%w (use --from SNAPSHOT on hosts without it)", err)
		}
	}
	if err != nil {
		return nil, err
	}
	for _, w := range node.Warnings {
		e.warn(w)
	}
	if err := discover.ResolveCapMinors(node, e.host); err != nil {
		return nil, err
	}
	return node, nil
}

// discoverWithin runs NVML discovery, giving up after timeout: a call
// into a hung driver cannot be interrupted, but the process can exit
// without it, having written nothing.
func discoverWithin(e *env, root string, timeout time.Duration) (*discover.Node, error) {
	host, err := e.hostname()
	if err != nil {
		return nil, fmt.Errorf("reading the hostname: %w", err)
	}
	e.host.Prefetch() // while NVML initialises
	type result struct {
		node *discover.Node
		err  error
	}
	done := make(chan result, 1)
	go func() {
		node, err := discover.FromNVML(e.nvml(), host, root)
		done <- result{node, err}
	}()
	select {
	case r := <-done:
		return r.node, r.err
	case <-time.After(timeout):
		return nil, fmt.Errorf("nvml: no answer within %s (a hung GPU or driver?); nothing was written", timeout)
	}
}

// recordFlags shape the GRES records, shared by gen and node so that their
// types and counts always agree.
type recordFlags struct {
	NodeName   string            `placeholder:"NAME" help:"NodeName= to write (default: the short hostname; with --from, the snapshot's)."`
	NoNodeName bool              `help:"Leave NodeName= out."`
	TypeStyle  string            `enum:"model,profile,autodetect" default:"model" help:"GRES type names: model (a100, a100_1g.10gb), profile (a100, 1g.10gb), autodetect (the names of Slurm's AutoDetect=nvml). One of: ${enum}."`
	TypeMap    map[string]string `mapsep:"none" placeholder:"NAME=TYPE" help:"Use TYPE as the model part of types for GPUs whose NVML name or short model is NAME (repeatable)."`
	Files      string            `enum:"multiple,ci" default:"multiple" help:"MIG device files: multiple (MultipleFiles=/dev/nvidiaN,GI cap,CI cap; Slurm >= 20.11) or ci (File=CI cap; older Slurm). One of: ${enum}."`
	NoCores    bool              `help:"Leave out Cores= (the abstract core ids near each GPU, from NVML's CPU affinity and the CPU topology under --root)."`
	NoLinks    bool              `help:"Leave out Links= (active NVLinks between whole GPUs)."`
	Flags      string            `placeholder:"FLAGS" help:"Write Flags=FLAGS on every line (nvidia_gpu_env, ...); checked against the flags Slurm knows."`
}

func (f *recordFlags) records(e *env, node *discover.Node) ([]slurmconf.GresRecord, string, error) {
	name, err := f.nodeName(e, node)
	if err != nil {
		return nil, "", err
	}
	if !f.NoCores {
		e.resolveCores(node)
	}
	res, err := gresgen.Records(node, gresgen.Options{
		NodeName:  name,
		TypeStyle: gresgen.TypeStyle(f.TypeStyle),
		FileStyle: gresgen.FileStyle(f.Files),
		TypeMap:   f.TypeMap,
		NoCores:   f.NoCores,
		NoLinks:   f.NoLinks,
		Flags:     f.Flags,
	})
	if err != nil {
		return nil, "", err
	}
	for _, w := range res.Warnings {
		e.warn(w)
	}
	return res.Records, name, nil
}

// resolveCores turns the GPUs' CPU affinity into Cores= through the CPU
// topology under root. Without the topology the config is still right,
// only less precise, so that is a warning, given once.
func (e *env) resolveCores(node *discover.Node) {
	if err := discover.ResolveTopology(node, e.host, false); err != nil {
		e.warn(fmt.Sprintf("%v; Cores= left out", err))
	}
}

// nodeName is the NodeName= to write: none with --no-node-name, else
// the flag or the default.
func (f *recordFlags) nodeName(e *env, node *discover.Node) (string, error) {
	switch {
	case f.NoNodeName && f.NodeName != "":
		return "", fmt.Errorf("--node-name and --no-node-name exclude each other")
	case f.NoNodeName:
		return "", nil
	case f.NodeName != "":
		if err := slurmconf.CheckNodeName(f.NodeName); err != nil {
			return "", fmt.Errorf("--node-name: %w", err)
		}
		return f.NodeName, nil
	}
	return f.defaultNodeName(e, node)
}

// defaultNodeName is the short name of the host the model describes: the
// snapshot's host, or this one.
func (f *recordFlags) defaultNodeName(e *env, node *discover.Node) (string, error) {
	host := node.Hostname
	if host == "" {
		h, err := e.hostname()
		if err != nil {
			return "", fmt.Errorf("the snapshot names no host and this host's name is unknown (%v); pass --node-name", err)
		}
		e.warn(fmt.Sprintf("the snapshot names no host; using this host's name %q", h))
		host = h
	}
	short, _, _ := strings.Cut(host, ".")
	if err := slurmconf.CheckNodeName(short); err != nil {
		return "", fmt.Errorf("host %q: %w; pass --node-name", host, err)
	}
	return short, nil
}

// renderFlags are what gen and node share: where the node comes from, how
// its records are shaped, where the result goes.
type renderFlags struct {
	sourceFlags
	recordFlags
	outputFlags
}

// render loads the node and builds its records and counts, refusing an
// empty result unless asked; what names the output in that refusal.
func (r *renderFlags) render(e *env, g *cli, what string) (*discover.Node, []slurmconf.GresRecord, string, []slurmconf.GresCount, error) {
	node, err := r.load(e, g)
	if err != nil {
		return nil, nil, "", nil, err
	}
	recs, name, err := r.records(e, node)
	if err != nil {
		return nil, nil, "", nil, err
	}
	if err := r.checkEmpty(e, recs, what); err != nil {
		return nil, nil, "", nil, err
	}
	return node, recs, name, slurmconf.CountGres(recs), nil
}

type genCmd struct {
	renderFlags
	Compact bool `help:"Merge lines that differ only in File= into Slurm ranges (File=/dev/nvidia[0-3])."`
}

func (c *genCmd) Run(e *env, g *cli) error {
	_, recs, name, counts, err := c.render(e, g, "gres.conf")
	if err != nil {
		return err
	}
	if c.Compact {
		recs = slurmconf.Compact(recs)
	}
	comments := []string{"gres.conf written by slurm-mig " + e.version + "; regenerate it, do not edit by hand."}
	if name != "" {
		comments = append(comments, "slurm.conf: "+slurmconf.NodeLine(name, counts))
	}
	var buf bytes.Buffer
	if err := slurmconf.WriteGresConf(&buf, comments, recs); err != nil {
		return err
	}
	return c.emit(e, buf.Bytes(), counts)
}

type nodeCmd struct {
	renderFlags
	Compact bool   `help:"Accepted as gen takes it; no effect on the node line, whose counts are the same either way."`
	Update  string `placeholder:"SLURM_CONF" help:"Set Gres= on this node's own NodeName= line of SLURM_CONF in place, keeping every other byte."`
	Full    bool   `help:"Print the whole node line, as slurmd -C does (CPUs, Boards, SocketsPerBoard, CoresPerSocket, ThreadsPerCore, RealMemory), with Gres=."`
}

func (c *nodeCmd) Run(e *env, g *cli) error {
	switch {
	case c.Update != "" && c.Output != "":
		return fmt.Errorf("--update and -o exclude each other")
	case c.Update != "" && c.Full:
		return fmt.Errorf("--update sets only Gres=; drop --full")
	}
	node, _, name, counts, err := c.render(e, g, "node line")
	if err != nil {
		return err
	}
	if c.Update != "" {
		return c.update(e, name, counts)
	}
	line := slurmconf.NodeLine(name, counts)
	if c.Full {
		if err := discover.ResolveTopology(node, e.host, true); err != nil {
			return fmt.Errorf("node --full: %w", err)
		}
		line = fullNodeLine(name, node.Hardware.String(), counts)
	}
	return c.emit(e, []byte(line+"\n"), counts)
}

// fullNodeLine is slurmd -C's line with Gres= added.
func fullNodeLine(name, hardware string, counts []slurmconf.GresCount) string {
	parts := []string{hardware}
	if name != "" {
		parts = append([]string{"NodeName=" + name}, parts...)
	}
	if len(counts) > 0 {
		parts = append(parts, "Gres="+slurmconf.GresList(counts))
	}
	return strings.Join(parts, " ")
}

// update rewrites the Gres= of the node's line in a slurm.conf.
func (c *nodeCmd) update(e *env, name string, counts []slurmconf.GresCount) error {
	if name == "" {
		return fmt.Errorf("--update needs the node's name; drop --no-node-name")
	}
	old, err := os.ReadFile(c.Update)
	if err != nil {
		return err
	}
	updated, err := slurmconf.UpdateNodeGres(string(old), c.Update, name, slurmconf.GresList(counts))
	if err != nil {
		return err
	}
	c.Output = outputPath(c.Update)
	return c.emit(e, []byte(updated), counts)
}

type listCmd struct {
	sourceFlags
}

func (c *listCmd) Run(e *env, g *cli) error {
	node, err := c.load(e, g)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	writeTable(&buf, node)
	return writeAll(e.stdout, &buf)
}

// writeTable prints one row per GPU and one per MIG device under it.
func writeTable(buf *bytes.Buffer, node *discover.Node) {
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tMINOR\tNAME\tMIG\tGI\tCI\tPROFILE\tUUID\tFILES")
	for i := range node.GPUs {
		gpu := &node.GPUs[i]
		mode := onOff(gpu.MigEnabled)
		if gpu.MigChangePending() {
			mode += " (pending " + onOff(gpu.MigPending) + ")"
		}
		files := gpu.DevicePath()
		if gpu.MigEnabled {
			files = "-" // only its MIG devices are usable
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t\t\t\t%s\t%s\n", gpu.Index, gpu.Minor, gpu.Name, mode, gpu.UUID, files)
		for j := range gpu.MigDevices {
			m := &gpu.MigDevices[j]
			fmt.Fprintf(tw, "\t\t\t\t%d\t%d\t%s\t%s\t%s,%s,%s\n", m.GPUInstanceID, m.ComputeInstanceID, m.Profile, m.UUID,
				gpu.DevicePath(), discover.CapPath(*m.GICapMinor), discover.CapPath(*m.CICapMinor))
		}
	}
	tw.Flush()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

type snapshotCmd struct{}

func (c *snapshotCmd) Run(e *env, g *cli) error {
	src := sourceFlags{nvmlOnly: true} // snapshots are always taken from NVML
	node, err := src.load(e, g)
	if err != nil {
		return err
	}
	// The snapshot carries Cores and the hardware so that --from gives the
	// same output on another machine.
	if err := discover.ResolveTopology(node, e.host, true); err != nil {
		e.warn(fmt.Sprintf("%v; the snapshot has no cores or hardware", err))
	}
	var buf bytes.Buffer
	if err := discover.WriteSnapshot(&buf, node); err != nil {
		return err
	}
	return writeAll(e.stdout, &buf)
}
