package synth

import (
	"fmt"
	"io"
	"strings"

	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// FleetLayouts is how many node layouts a synthetic fleet has.
const FleetLayouts = 4

// FleetLayout is node i's layout, of FleetLayouts: of ten nodes, six have
// eight whole H100s (0), two four A100s of seven 1g.10gb (1), one four whole
// and four split H100s (2), and one layout 1 as a repartition leaves it (3).
func FleetLayout(i int) int {
	switch i % 10 {
	case 6, 7:
		return 1
	case 8:
		return 2
	case 9:
		return 3
	}
	return 0
}

// FleetRecords are the gres.conf records `slurm-mig gen` writes for node
// i of a synthetic fleet, with device paths under dev (normally "/dev").
func FleetRecords(i int, dev string) []slurmconf.GresRecord {
	node := ClusterNode(i)
	gpu := func(g int) string { return fmt.Sprintf("%s/nvidia%d", dev, g) }
	mig := func(g, gi, ci int, typ, cores string) slurmconf.GresRecord {
		giMinor := 3 + 135*g + 9*gi
		return slurmconf.GresRecord{NodeName: node, Name: "gpu", Type: typ, Cores: cores, MultipleFiles: []string{
			gpu(g), fmt.Sprintf("%s/nvidia-caps/nvidia-cap%d", dev, giMinor), fmt.Sprintf("%s/nvidia-caps/nvidia-cap%d", dev, giMinor+1+ci)}}
	}
	cores := func(g, gpus int) string {
		if g < gpus/2 {
			return "0-31"
		}
		return "32-63"
	}
	var recs []slurmconf.GresRecord
	switch FleetLayout(i) {
	case 0:
		for g := range 8 {
			links := make([]string, 8)
			for p := range links {
				links[p] = "18"
			}
			links[g] = "-1"
			recs = append(recs, slurmconf.GresRecord{NodeName: node, Name: "gpu", Type: "h100", File: gpu(g),
				Cores: cores(g, 8), Links: strings.Join(links, ",")})
		}
	case 1, 3:
		for g := range 4 {
			gis := giIDs[:]
			if FleetLayout(i) == 3 && g%2 == 1 {
				gis = []int{7, 8, 9, 11, 12, 13, 14}
			}
			for _, gi := range gis {
				recs = append(recs, mig(g, gi, 0, "a100_1g.10gb", cores(g, 4)))
			}
		}
	case 2:
		for g := range 4 {
			recs = append(recs, slurmconf.GresRecord{NodeName: node, Name: "gpu", Type: "h100", File: gpu(g), Cores: cores(g, 8)})
		}
		for g := 4; g < 8; g++ {
			recs = append(recs,
				mig(g, 1, 0, "h100_3g.40gb", cores(g, 8)),
				mig(g, 3, 0, "h100_2g.20gb", cores(g, 8)),
				mig(g, 9, 0, "h100_1g.10gb", cores(g, 8)),
				mig(g, 10, 0, "h100_1g.10gb", cores(g, 8)))
		}
	}
	return recs
}

// WriteFleetFragment writes node i's gres.conf as `slurm-mig gen` does: its
// header, with the slurm.conf line, and its records. The header copies
// gresgen.Config.GresConf's, since gresgen's benchmarks import synth.
func WriteFleetFragment(w io.Writer, i int, dev string) error {
	recs := FleetRecords(i, dev)
	counts, err := slurmconf.CountGres(recs)
	if err != nil {
		return err
	}
	return slurmconf.WriteGresConf(w, []string{
		"gres.conf written by slurm-mig dev; regenerate it, do not edit by hand.",
		"slurm.conf: " + slurmconf.NodeLine(ClusterNode(i), counts),
	}, recs)
}
