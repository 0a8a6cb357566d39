package gresgen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/advice"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Config is what slurm-mig writes for one node: its gres.conf records and
// the Gres= counts that slurm.conf must declare for them.
type Config struct {
	NodeName string // empty: the lines apply to every node reading them
	Records  []slurmconf.GresRecord
	Counts   []slurmconf.GresCount
	// Shares are the header's "# share: " lines, from which merge
	// --accounting learns each type's share (none without profile tables).
	Shares []string
	// Warnings are what is legal but likely not what the admin wants (a
	// pending MIG mode change, GPU names that share a type: advice.TypeMap).
	Warnings []error `json:"-"`
}

// Generate builds the node's config (Records, then their counts), with
// Records's warnings.
func Generate(n *Node, o Options) (*Config, error) {
	recs, warnings, err := records(n, o)
	if err != nil {
		return nil, err
	}
	counts, err := slurmconf.CountGres(recs)
	if err != nil {
		return nil, err
	}
	return &Config{NodeName: o.NodeName, Records: recs, Counts: counts, Warnings: warnings}, nil
}

// Devices is how many GRES the config offers Slurm.
func (c *Config) Devices() int {
	n := 0
	for _, cnt := range c.Counts {
		n += cnt.Count
	}
	return n
}

// CheckEmpty refuses a config that offers Slurm nothing, naming what, with
// advice.AllowEmpty; allowed, it returns a warning instead.
func (c *Config) CheckEmpty(what string, allow bool) (warning, err error) {
	switch {
	case len(c.Records) > 0:
	case allow:
		return errors.New("no GPU or MIG device to offer Slurm on this node"), nil
	default:
		return nil, advice.Wrap(fmt.Errorf("no GPU or MIG device found; refusing to write an empty %s", what), advice.AllowEmpty)
	}
	return nil, nil
}

// DeviceCount says n devices in words: "1 device", "14 devices".
func DeviceCount(n int) string {
	if n == 1 {
		return "1 device"
	}
	return fmt.Sprintf("%d devices", n)
}

// The header of gen's gres.conf: who wrote it, then, with a node name,
// the slurm.conf line it needs. Unchanged takes these two lines at the top
// of a file for gen's own, whatever build and counts they name.
const (
	headerWrittenBy = "gres.conf written by slurm-mig "
	headerNodeLine  = "slurm.conf: "
	// HeaderShare starts each share line of the header.
	HeaderShare = "share: "
)

// GresConf is the gres.conf text: a header saying who wrote it (version)
// and, with a node name, the slurm.conf line it needs; then the records,
// merged into File= ranges when compact.
func (c *Config) GresConf(version string, compact bool) []byte {
	recs := c.Records
	if compact {
		recs = slurmconf.Compact(recs)
	}
	comments := []string{headerWrittenBy + version + "; regenerate it, do not edit by hand."}
	if c.NodeName != "" {
		comments = append(comments, headerNodeLine+slurmconf.NodeLine(c.NodeName, c.Counts))
	}
	for _, s := range c.Shares {
		comments = append(comments, HeaderShare+s)
	}
	return []byte(slurmconf.FormatGresConf(comments, recs))
}

// isHeader says whether line num of a gres.conf, a comment, is one of the
// header lines GresConf writes.
func isHeader(num int, line string) bool {
	return num == 1 && strings.HasPrefix(line, "# "+headerWrittenBy) ||
		num == 2 && strings.HasPrefix(line, "# "+headerNodeLine) ||
		num >= 2 && strings.HasPrefix(line, "# "+HeaderShare)
}

// writtenFor is the node a gres.conf that GresConf wrote was written
// for, as its header's slurm.conf line names it; "" when the file has no
// such header or cannot be read.
func writtenFor(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for num := 1; num <= 2 && sc.Scan(); num++ {
		rest, ok := strings.CutPrefix(sc.Text(), "# "+headerNodeLine+"NodeName=")
		if num == 2 && ok {
			name, _, _ := strings.Cut(rest, " ")
			return name
		}
	}
	return ""
}

// Unchanged reports whether the gres.conf at path holds the config's records
// already, as diff compares them, header aside (a new build rewrites no file);
// a line gen does not write, or an unreadable file, is an error (advice).
func (c *Config) Unchanged(path string) (bool, error) {
	recs, err := slurmconf.ReadOwnGpuRecords(path, c.NodeName, isHeader)
	var foreign *slurmconf.ForeignLine
	switch {
	case errors.As(err, &foreign) && c.NodeName != "":
		if old := writtenFor(path); old != "" && old != c.NodeName {
			if _, err := slurmconf.ReadOwnGpuRecords(path, old, isHeader); err == nil {
				// The whole file is gen's, for a node called old: the
				// node was renamed, or --node-name is not the one used.
				return false, advice.Wrap(fmt.Errorf("%s was written by slurm-mig for node %s, and this node is %s", path, old, c.NodeName), advice.GresConfRenamed, path, old, c.NodeName)
			}
		}
		return false, advice.Wrap(foreign, advice.GresConfForeignLine, path)
	case errors.As(err, &foreign):
		return false, advice.Wrap(foreign, advice.GresConfForeignLine, path)
	case err != nil:
		return false, advice.Wrap(err, advice.GresConfUnreadable, path)
	}
	current := make([]slurmconf.GresRecord, len(recs))
	for i, r := range recs {
		current[i] = r.GresRecord
	}
	cur, err := slurmconf.SplitUnits(current)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	gen, err := slurmconf.SplitUnits(c.Records)
	if err != nil {
		return false, err
	}
	d := slurmconf.DiffUnits(cur, gen)
	return d.Same(), nil
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
		return nil, errors.New("updating a slurm.conf needs the node's name, and the config names none")
	}
	return slurmconf.UpdateNodeGresFile(path, c.NodeName, slurmconf.GresList(c.Counts))
}
