package gresgen

import (
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/internal/snapshot"
)

// Node, GPU and MigDevice are the node model gresgen works on, named
// here so that a program outside this module can hold and inspect them;
// their package is internal.
type (
	Node      = model.Node
	GPU       = model.GPU
	MigDevice = model.MigDevice
)

// ReadSnapshot reads a snapshot file (`slurm-mig snapshot`, any schema
// docs/snapshot.md describes) into a Node. Cap minors it lacks are
// filled in by capmap.Resolve.
func ReadSnapshot(path string) (*Node, error) { return snapshot.Load(path) }
