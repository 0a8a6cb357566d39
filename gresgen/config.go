package gresgen

import (
	"fmt"

	"github.com/slurm-mig/slurm-mig/discover"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Config is what slurm-mig writes for one node: its gres.conf records and
// the Gres= counts that slurm.conf must declare for them.
type Config struct {
	NodeName string // empty: the lines apply to every node reading them
	Records  []slurmconf.GresRecord
	Counts   []slurmconf.GresCount
}

// Generate builds the node's config (Records, then their counts).
func Generate(n *discover.Node, o Options) (*Config, error) {
	recs, err := Records(n, o)
	if err != nil {
		return nil, err
	}
	counts, err := slurmconf.CountGres(recs)
	if err != nil {
		return nil, err
	}
	return &Config{NodeName: o.NodeName, Records: recs, Counts: counts}, nil
}

// Devices is how many GRES the config offers Slurm.
func (c *Config) Devices() int {
	n := 0
	for _, cnt := range c.Counts {
		n += cnt.Count
	}
	return n
}

// CheckEmpty refuses a config that offers Slurm nothing, unless allowed
// (then warn says so): after an NVML failure an empty gres.conf takes a
// node's GPUs away. what names the output in the refusal.
func (c *Config) CheckEmpty(what string, allow bool, warn func(string)) error {
	switch {
	case len(c.Records) > 0:
	case allow:
		warn("no GPU or MIG device to offer Slurm on this node")
	default:
		return fmt.Errorf("no GPU or MIG device found; refusing to write an empty %s (pass --allow-empty if this node really has none)", what)
	}
	return nil
}

// DeviceCount says n devices in words: "1 device", "14 devices".
func DeviceCount(n int) string {
	if n == 1 {
		return "1 device"
	}
	return fmt.Sprintf("%d devices", n)
}

// GresConf is the gres.conf text: a header saying who wrote it (version)
// and, with a node name, the slurm.conf line it needs; then the records,
// merged into File= ranges when compact.
func (c *Config) GresConf(version string, compact bool) []byte {
	recs := c.Records
	if compact {
		recs = slurmconf.Compact(recs)
	}
	comments := []string{"gres.conf written by slurm-mig " + version + "; regenerate it, do not edit by hand."}
	if c.NodeName != "" {
		comments = append(comments, "slurm.conf: "+slurmconf.NodeLine(c.NodeName, c.Counts))
	}
	return []byte(slurmconf.FormatGresConf(comments, recs))
}

// NodeLine is the slurm.conf line declaring the node's GRES, with
// hardware (slurmd -C's words) before Gres=.
func (c *Config) NodeLine(hardware ...string) string {
	return slurmconf.NodeLine(c.NodeName, c.Counts, hardware...)
}

// UpdateSlurmConf is the slurm.conf at path with the gpu items of Gres=
// set to the counts on the node's own NodeName= line, every other item,
// key and byte kept. The counts are all gpu: gen makes gpu records only.
func (c *Config) UpdateSlurmConf(path string) ([]byte, error) {
	if c.NodeName == "" {
		return nil, fmt.Errorf("--update needs the node's name; drop --no-node-name")
	}
	return slurmconf.UpdateNodeGresFile(path, c.NodeName, slurmconf.GresList(c.Counts))
}
