package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// writeTable prints the node for people (slurm-mig list): one row per
// GPU and one per MIG device under it, with the device files of each.
// Every MIG device must have its cap minors resolved.
func writeTable(w io.Writer, node *model.Node) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tMINOR\tNAME\tMIG\tGI\tCI\tPROFILE\tUUID\tFILES")
	for i := range node.GPUs {
		gpu := &node.GPUs[i]
		mode := onOff(gpu.MigEnabled)
		if gpu.MigChangePending() {
			mode += " (pending " + onOff(gpu.MigPending) + ")"
		}
		files := "-" // a GPU in MIG mode: only its MIG devices are usable
		if f := gpu.Files(); len(f) > 0 {
			files = strings.Join(f, ",")
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t\t\t\t%s\t%s\n", gpu.Index, gpu.Minor, gpu.Name, mode, gpu.UUID, files)
		for j := range gpu.MigDevices {
			m := &gpu.MigDevices[j]
			fmt.Fprintf(tw, "\t\t\t\t%d\t%d\t%s\t%s\t%s\n", m.GPUInstanceID, m.ComputeInstanceID, m.Profile, m.UUID,
				strings.Join(m.Files(gpu), ","))
		}
	}
	return tw.Flush()
}

// listing is list --json's form of a node, for scripts: its keys are the
// snapshot's where they mean the same, and its lists are never null, so a
// script need not tell an absent list from an empty one.
type listing struct {
	Hostname string       `json:"hostname"`
	GPUs     []listingGPU `json:"gpus"`
}

// listingGPU is a GPU of a listing. Files are the device files a job of
// the whole GPU is given: none for a GPU in MIG mode, which is used only
// through its MIG devices.
type listingGPU struct {
	Index      int          `json:"index"`
	Minor      int          `json:"minor"`
	Name       string       `json:"name"`
	UUID       string       `json:"uuid"`
	PCIBusID   string       `json:"pci_bus_id"`
	MigEnabled bool         `json:"mig_enabled"`
	MigPending bool         `json:"mig_pending"`
	Files      []string     `json:"files"`
	MigDevices []listingMig `json:"mig_devices"`
}

// listingMig is a MIG device of a listingGPU, with the device files a job
// of it is given: its GPU's, its GI cap's and its CI cap's.
type listingMig struct {
	GPUInstanceID     int      `json:"gpu_instance_id"`
	ComputeInstanceID int      `json:"compute_instance_id"`
	Profile           string   `json:"profile"`
	UUID              string   `json:"uuid"`
	Files             []string `json:"files"`
}

// writeListing prints the node's listing as indented JSON (slurm-mig list
// --json). Every MIG device must have its cap minors resolved.
func writeListing(w io.Writer, node *model.Node) error {
	l := listing{Hostname: node.Hostname, GPUs: []listingGPU{}}
	for i := range node.GPUs {
		g := &node.GPUs[i]
		lg := listingGPU{Index: g.Index, Minor: g.Minor, Name: g.Name, UUID: g.UUID, PCIBusID: g.PCIBusID,
			MigEnabled: g.MigEnabled, MigPending: g.MigPending, Files: append([]string{}, g.Files()...), MigDevices: []listingMig{}}
		for j := range g.MigDevices {
			m := &g.MigDevices[j]
			lg.MigDevices = append(lg.MigDevices, listingMig{GPUInstanceID: m.GPUInstanceID, ComputeInstanceID: m.ComputeInstanceID,
				Profile: m.Profile, UUID: m.UUID, Files: m.Files(g)})
		}
		l.GPUs = append(l.GPUs, lg)
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
