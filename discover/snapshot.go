package discover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// maxSnapshotBytes bounds a snapshot file: a node of 64 GPUs with every
// MIG device is a few hundred KiB.
const maxSnapshotBytes = 64 << 20

// LoadSnapshot reads and checks a snapshot file. Errors name the file.
func LoadSnapshot(path string) (*Node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSnapshotBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxSnapshotBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB; not a snapshot", path, maxSnapshotBytes>>20)
	}
	node, err := ParseSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return node, nil
}

// ParseSnapshot decodes and checks a snapshot. Fields this version does
// not know are ignored; a snapshot that contradicts itself is an error.
func ParseSnapshot(data []byte) (*Node, error) {
	var version struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &version); err != nil {
		return nil, fmt.Errorf("not a snapshot: %v", jsonError(data, err))
	}
	if version.SchemaVersion == nil {
		return nil, fmt.Errorf("not a snapshot: no schema_version")
	}
	if *version.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("unsupported schema_version %d (this slurm-mig reads %d)", *version.SchemaVersion, SchemaVersion)
	}
	var node Node
	if err := json.Unmarshal(data, &node); err != nil {
		return nil, fmt.Errorf("not a snapshot: %v", jsonError(data, err))
	}
	if err := checkRequired(data); err != nil {
		return nil, err
	}
	if err := node.Check(); err != nil {
		return nil, err
	}
	node.Sort()
	return &node, nil
}

// checkRequired rejects a snapshot that leaves out a field whose zero value
// would silently mean something (minor 0 is /dev/nvidia0).
func checkRequired(data []byte) error {
	var presence struct {
		GPUs []struct {
			Index      *int    `json:"index"`
			Minor      *int    `json:"minor"`
			Name       *string `json:"name"`
			MigDevices []struct {
				GI      *int    `json:"gpu_instance_id"`
				CI      *int    `json:"compute_instance_id"`
				Profile *string `json:"profile"`
			} `json:"mig_devices"`
		} `json:"gpus"`
	}
	if err := json.Unmarshal(data, &presence); err != nil {
		return err
	}
	for i, g := range presence.GPUs {
		switch {
		case g.Index == nil:
			return fmt.Errorf("gpus[%d]: no index", i)
		case g.Minor == nil:
			return fmt.Errorf("gpus[%d]: no minor", i)
		case g.Name == nil:
			return fmt.Errorf("gpus[%d]: no name", i)
		}
		for j, m := range g.MigDevices {
			switch {
			case m.GI == nil:
				return fmt.Errorf("gpus[%d].mig_devices[%d]: no gpu_instance_id", i, j)
			case m.CI == nil:
				return fmt.Errorf("gpus[%d].mig_devices[%d]: no compute_instance_id", i, j)
			case m.Profile == nil:
				return fmt.Errorf("gpus[%d].mig_devices[%d]: no profile", i, j)
			}
		}
	}
	return nil
}

// jsonError adds the line of a syntax error, which encoding/json gives only
// as a byte offset.
func jsonError(data []byte, err error) error {
	if se, ok := err.(*json.SyntaxError); ok {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("line %d: %v", line, err)
	}
	return err
}

// WriteSnapshot writes n as indented JSON, the same bytes for the same node.
func WriteSnapshot(w io.Writer, n *Node) error {
	data, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
