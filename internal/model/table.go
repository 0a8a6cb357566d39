package model

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints the node for people (slurm-mig list): one row per
// GPU and one per MIG device under it, with the device files of each.
// Every MIG device must have its cap minors resolved.
func WriteTable(w io.Writer, node *Node) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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
				gpu.DevicePath(), CapPath(*m.GICapMinor), CapPath(*m.CICapMinor))
		}
	}
	return tw.Flush()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
