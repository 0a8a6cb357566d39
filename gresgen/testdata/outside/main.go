// Command outside is a program of another module that uses slurm-mig's
// public packages alone: it reads a snapshot, fills in its cap minors
// from a node's mig-minors, and prints the node's gres.conf records.
package main

import (
	"fmt"
	"os"

	"github.com/slurm-mig/slurm-mig/capmap"
	"github.com/slurm-mig/slurm-mig/gresgen"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: outside SNAPSHOT ROOT")
		os.Exit(2)
	}
	node, err := gresgen.ReadSnapshot(os.Args[1])
	if err == nil {
		err = capmap.Resolve(node, func() (*capmap.Map, error) { return capmap.Load(os.Args[2]) })
	}
	var recs []slurmconf.GresRecord
	if err == nil {
		recs, err = gresgen.Records(node, gresgen.Options{NodeName: "demo", NoCores: true})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "outside:", err)
		os.Exit(1)
	}
	fmt.Print(slurmconf.FormatGresConf(nil, recs))
}
