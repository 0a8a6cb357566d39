package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// maxSnapshotBytes bounds a snapshot file: a node of 64 GPUs with every
// MIG device is a few hundred KiB.
const maxSnapshotBytes = 64 << 20

// LoadSnapshot reads and checks a snapshot file. Errors name the file.
func LoadSnapshot(path string) (*Node, error) {
	return NewSnapshotReader().Load(path)
}

// ParseSnapshot decodes and checks a snapshot. Fields this version does
// not know are ignored; a snapshot that contradicts itself is an error.
func ParseSnapshot(data []byte) (*Node, error) {
	return NewSnapshotReader().Parse(data)
}

// SnapshotReader reads snapshots one after another, as plan reads a
// fleet's, keeping from one to the next what it has learned: the read
// buffer, the snapshot's Go types, and the profile tables it has decoded
// (a fleet's GPUs have few). One reader serves one goroutine.
type SnapshotReader struct {
	buf []byte
	dec *fastDecoder
}

// NewSnapshotReader is a reader that has read nothing yet.
func NewSnapshotReader() *SnapshotReader {
	return &SnapshotReader{dec: newFastDecoder(requiredKeys())}
}

// Load reads and checks the snapshot file at path, as LoadSnapshot does.
func (r *SnapshotReader) Load(path string) (*Node, error) {
	data, err := fileio.ReadFileInto(r.buf, path, maxSnapshotBytes, "a snapshot")
	if err != nil {
		return nil, err
	}
	r.buf = data // the node holds nothing of it: strings are copies
	node, err := r.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	node.Snapshot = path
	return node, nil
}

// Parse decodes and checks a snapshot, as ParseSnapshot does.
func (r *SnapshotReader) Parse(data []byte) (*Node, error) {
	node, err := r.decode(data)
	if err != nil {
		return nil, err
	}
	// The hostname becomes NodeName= unless --node-name says otherwise.
	if node.Hostname != "" {
		if err := slurmconf.CheckNodeName(node.Hostname); err != nil {
			return nil, fmt.Errorf("hostname: %v", err)
		}
	}
	if err := node.Check(); err != nil {
		return nil, err
	}
	node.Sort()
	return node, nil
}

// decode decodes data into a node that gives every field it must
// (presence). Plain JSON that gives them, which is every snapshot
// slurm-mig writes, takes decodeFast; the rest, errors included,
// encoding/json, with the schema version checked first, so that a
// snapshot of a schema this version does not know says so rather than
// what it cannot decode.
func (r *SnapshotReader) decode(data []byte) (*Node, error) {
	var node Node
	if r.dec.decode(data, &node) {
		if err := checkVersion(&node.SchemaVersion); err != nil {
			return nil, err
		}
		return &node, nil
	}
	var version struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &version); err != nil {
		return nil, fmt.Errorf("not a snapshot: %v", jsonError(data, err))
	}
	if err := checkVersion(version.SchemaVersion); err != nil {
		return nil, err
	}
	node = Node{}
	if err := json.Unmarshal(data, &node); err != nil {
		return nil, fmt.Errorf("not a snapshot: %v", jsonError(data, err))
	}
	var present presence
	if err := json.Unmarshal(data, &present); err != nil {
		return nil, err
	}
	if err := present.check(); err != nil {
		return nil, err
	}
	return &node, nil
}

func checkVersion(version *int) error {
	if version == nil {
		return fmt.Errorf("not a snapshot: no schema_version")
	}
	if v := *version; v < OldestSchemaVersion || v > SchemaVersion {
		return fmt.Errorf("unsupported schema_version %d (this slurm-mig reads %d to %d)", v, OldestSchemaVersion, SchemaVersion)
	}
	return nil
}

// presence is which of the fields a snapshot must give it gives: those
// whose zero value would silently mean something (minor 0 is
// /dev/nvidia0).
type presence struct {
	SchemaVersion *int `json:"schema_version"`
	GPUs          []struct {
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

// requiredKeys are the keys presence asks for, by the type of the
// objects that must give them (schema_version of a Node; index, minor
// and name of a GPU; ...), read from presence itself, so that decodeFast
// and the check of presence ask for the same.
func requiredKeys() map[reflect.Type][]string {
	required := map[reflect.Type][]string{}
	var walk func(p, m reflect.Type)
	walk = func(p, m reflect.Type) {
		fields := map[string]reflect.Type{}
		for i := range m.NumField() {
			name, _, _ := strings.Cut(m.Field(i).Tag.Get("json"), ",")
			fields[name] = m.Field(i).Type
		}
		for i := range p.NumField() {
			f := p.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch f.Type.Kind() {
			case reflect.Pointer:
				required[m] = append(required[m], name)
			case reflect.Slice:
				walk(f.Type.Elem(), fields[name].Elem())
			}
		}
	}
	walk(reflect.TypeFor[presence](), reflect.TypeFor[Node]())
	return required
}

// check rejects a snapshot that leaves out a field it must give.
func (p *presence) check() error {
	for i, g := range p.GPUs {
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

// jsonError words a decoding error for people: the line of a syntax
// error (encoding/json gives a byte offset), and for a value of the wrong
// kind the field and what it should hold, never a Go type.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("line %d: %v", line, se) // a SyntaxError says no "json:"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		got := te.Value
		if kind, ok := jsonKinds[got]; ok {
			got = kind
		}
		if te.Field == "" {
			return fmt.Errorf("the file holds %s; a snapshot is a JSON object", got)
		}
		return fmt.Errorf("%s: %s where %s belongs", te.Field, got, wantKind(te.Type))
	}
	return err
}

// jsonKinds name the kinds of JSON value encoding/json reports.
var jsonKinds = map[string]string{
	"array": "a list", "object": "an object", "string": "a string", "number": "a number", "bool": "true or false",
}

// wantKind says in JSON's words what a field of type t holds.
func wantKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<t.Bits()-1)
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
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

// SnapshotFiles expands a command line's FILE and DIR arguments into the
// snapshot files to read, as merge expands its fragments: a file as
// given, a directory as its *.json files (not those starting with '.'),
// in name order. plan and rebalance, which read a fleet's snapshots,
// both take their arguments this way.
func SnapshotFiles(args []string) ([]string, error) {
	var files []string
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, arg)
			continue
		}
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, err
		}
		n := len(files)
		for _, e := range entries {
			if name := e.Name(); strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
				files = append(files, filepath.Join(arg, name))
			}
		}
		if len(files) == n {
			return nil, fmt.Errorf("%s: no *.json snapshots in this directory", arg)
		}
	}
	return files, nil
}
