// Package snapshot reads and writes snapshot files: a node's model in the
// wire form of internal/api/snapshot (schema 3 written; 1, 2 and 3 read).
package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	v2 "github.com/slurm-mig/slurm-mig/internal/api/snapshot/v2"
	v3 "github.com/slurm-mig/slurm-mig/internal/api/snapshot/v3"
	"github.com/slurm-mig/slurm-mig/internal/fileio"
	"github.com/slurm-mig/slurm-mig/internal/model"
	"github.com/slurm-mig/slurm-mig/slurmconf"
)

// Oldest is the oldest schema this package reads; v3.Version the newest,
// and the one it writes.
const Oldest = 1

// maxBytes bounds a snapshot file: a node of 64 GPUs with every MIG
// device is a few hundred KiB.
const maxBytes = 64 << 20

// Load reads and checks the snapshot file at path. Errors name the file.
func Load(path string) (*model.Node, error) {
	return NewReader(nil).Load(path)
}

// Parse decodes and checks a snapshot. Keys this version does not know
// are ignored; a snapshot that contradicts itself is an error.
func Parse(data []byte) (*model.Node, error) {
	return NewReader(nil).Parse(data)
}

// Reader reads snapshots one after another into nodes whose equal
// profile tables are one *model.ProfileTable, across every reader that
// shares its Tables. One reader serves one goroutine.
type Reader struct {
	buf    []byte
	tables *model.Tables
	// known are the node-wide tables this reader has decoded, by their
	// bytes: a fleet's snapshots repeat a few tables byte for byte.
	known map[string]*model.ProfileTable
}

// maxKnown bounds Reader.known, for snapshots whose tables all differ.
const maxKnown = 16

// NewReader is a reader that interns tables in tables, or in tables of
// its own where tables is nil.
func NewReader(tables *model.Tables) *Reader {
	if tables == nil {
		tables = &model.Tables{}
	}
	return &Reader{tables: tables, known: map[string]*model.ProfileTable{}}
}

// Load reads and checks the snapshot file at path.
func (r *Reader) Load(path string) (*model.Node, error) {
	data, err := fileio.ReadFileInto(r.buf, path, maxBytes, "a snapshot")
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

// Parse decodes and checks one snapshot.
func (r *Reader) Parse(data []byte) (*model.Node, error) {
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

// anySchema holds the keys of every schema this package reads (schema 3's
// node-wide tables, schema 2's per GPU), for encoding/json to read any
// snapshot into for a refusal's words; decodeOnePass must agree with it.
type anySchema struct {
	v2.Node
	ProfileTables map[string][]v3.GIProfile `json:"profile_tables"`
}

// onePass is anySchema with the node-wide tables read by tableSet.
type onePass struct {
	v2.Node
	ProfileTables tableSet `json:"profile_tables"`
}

// tableSet reads profile_tables as encoding/json reads a map into
// anySchema, each table by way of its reader's known tables.
type tableSet struct {
	r      *Reader
	tables map[string]*model.ProfileTable
}

// UnmarshalJSONFrom reads null as no tables, and an object's tables into
// those read before, as encoding/json reads a map.
func (s *tableSet) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		s.tables = nil
		return err
	case '{':
	default:
		return fmt.Errorf("profile_tables: %v where an object belongs", dec.PeekKind())
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	if s.tables == nil {
		s.tables = map[string]*model.ProfileTable{}
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		id := name.String() // before dec reads on
		t, err := s.r.table(dec)
		if err != nil {
			return err
		}
		s.tables[id] = t
	}
	_, err := dec.ReadToken()
	return err
}

// decode reads a snapshot in one pass, then by its schema version.
func (r *Reader) decode(data []byte) (*model.Node, error) {
	w, tables, err := r.decodeOnePass(data)
	if err != nil {
		return nil, refusal(data, err)
	}
	if err := checkVersion(w.SchemaVersion); err != nil {
		return nil, err
	}
	if *w.SchemaVersion == v3.Version {
		return fromV3(w, tables)
	}
	return r.fromV2(w)
}

// decodeOnePass decodes data as encoding/json does into anySchema, to the
// same values (FuzzOnePassAgreesWithEncodingJSON), but in one pass with
// encoding/json/v2, sharing equal node-wide tables; errors are worded anew.
func (r *Reader) decodeOnePass(data []byte) (*v2.Node, map[string]*model.ProfileTable, error) {
	w := onePass{ProfileTables: tableSet{r: r}}
	if err := jsonv2.Unmarshal(data, &w, v1Semantics); err != nil {
		return nil, nil, err
	}
	return &w.Node, w.ProfileTables.tables, nil
}

// table reads one node-wide table: the one of the same bytes that this
// reader has met, or one decoded and made one value with every equal one.
func (r *Reader) table(dec *jsontext.Decoder) (*model.ProfileTable, error) {
	raw, err := dec.ReadValue() // checked, and valid until dec reads on
	if err != nil {
		return nil, err
	}
	if known, ok := r.known[string(raw)]; ok {
		return known, nil
	}
	var ps []v3.GIProfile
	if err := jsonv2.Unmarshal(raw, &ps, v1Semantics); err != nil {
		return nil, err
	}
	t := r.tables.Intern(profiles(ps))
	if len(r.known) < maxKnown {
		r.known[string(raw)] = t
	}
	return t, nil
}

// v1Semantics decode with encoding/json's semantics, stopping at the
// first error met.
var v1Semantics = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))

// refusal says why data is not a snapshot, in encoding/json's words. A
// snapshot is first asked its version alone, so that one of a schema this
// version does not know says so rather than what it cannot decode.
func refusal(data []byte, err error) error {
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if json.Unmarshal(data, &head) == nil {
		if err := checkVersion(head.SchemaVersion); err != nil {
			return err
		}
	}
	if stdErr := json.Unmarshal(data, new(anySchema)); stdErr != nil {
		err = stdErr
	}
	return fmt.Errorf("not a snapshot: %v", jsonError(data, err))
}

func checkVersion(version *int) error {
	if version == nil {
		return fmt.Errorf("not a snapshot: no schema_version")
	}
	if v := *version; v < Oldest || v > v3.Version {
		return fmt.Errorf("unsupported schema_version %d (this slurm-mig reads %d to %d)", v, Oldest, v3.Version)
	}
	return nil
}

// fromV3 makes the node of a schema 3 snapshot: each GPU takes the table
// filed under its PCI device id.
func fromV3(w *v2.Node, tables map[string]*model.ProfileTable) (*model.Node, error) {
	n := node(w.SchemaVersion, w.Hostname, w.DriverVersion, w.Hardware, len(w.GPUs))
	for i := range w.GPUs {
		g, err := gpu(i, &w.GPUs[i].GPU)
		if err != nil {
			return nil, err
		}
		if g.PCIDeviceID != "" {
			g.Profiles = tables[g.PCIDeviceID]
		}
		n.GPUs = append(n.GPUs, g)
	}
	return n, nil
}

// fromV2 makes the node of a schema 1 or 2 snapshot: each GPU's own table,
// made one value with every equal one.
func (r *Reader) fromV2(w *v2.Node) (*model.Node, error) {
	n := node(w.SchemaVersion, w.Hostname, w.DriverVersion, w.Hardware, len(w.GPUs))
	for i := range w.GPUs {
		g, err := gpu(i, &w.GPUs[i].GPU)
		if err != nil {
			return nil, err
		}
		g.Profiles = r.tables.Intern(profiles(w.GPUs[i].MigProfiles))
		n.GPUs = append(n.GPUs, g)
	}
	return n, nil
}

func node(version *int, hostname, driver string, hw *v3.Hardware, gpus int) *model.Node {
	n := &model.Node{SchemaVersion: *version, Hostname: hostname, DriverVersion: driver, GPUs: make([]model.GPU, 0, gpus)}
	if hw != nil {
		h := model.Hardware(*hw)
		n.Hardware = &h
	}
	return n
}

// gpu is the model of a wire GPU; a key it must give and does not is an
// error naming it (a zero there would silently mean something: minor 0
// is /dev/nvidia0).
func gpu(i int, w *v3.GPU) (model.GPU, error) {
	switch {
	case w.Index == nil:
		return model.GPU{}, fmt.Errorf("gpus[%d]: no index", i)
	case w.Minor == nil:
		return model.GPU{}, fmt.Errorf("gpus[%d]: no minor", i)
	case w.Name == nil:
		return model.GPU{}, fmt.Errorf("gpus[%d]: no name", i)
	}
	g := model.GPU{Index: *w.Index, Minor: *w.Minor, UUID: w.UUID, Name: *w.Name, PCIBusID: w.PCIBusID,
		MemoryMiB: w.MemoryMiB, MigEnabled: w.MigEnabled, MigPending: w.MigPending, CPUAffinity: w.CPUAffinity,
		Cores: w.Cores, PCIDeviceID: w.PCIDeviceID}
	if len(w.NVLinks) > 0 {
		g.NVLinks = make([]model.NVLink, 0, len(w.NVLinks))
	}
	for _, l := range w.NVLinks {
		g.NVLinks = append(g.NVLinks, model.NVLink(l))
	}
	if len(w.MigDevices) > 0 {
		g.MigDevices = make([]model.MigDevice, 0, len(w.MigDevices))
	}
	for j := range w.MigDevices {
		m := &w.MigDevices[j]
		switch {
		case m.GPUInstanceID == nil:
			return model.GPU{}, fmt.Errorf("gpus[%d].mig_devices[%d]: no gpu_instance_id", i, j)
		case m.ComputeInstanceID == nil:
			return model.GPU{}, fmt.Errorf("gpus[%d].mig_devices[%d]: no compute_instance_id", i, j)
		case m.Profile == nil:
			return model.GPU{}, fmt.Errorf("gpus[%d].mig_devices[%d]: no profile", i, j)
		}
		md := model.MigDevice{GPUInstanceID: *m.GPUInstanceID, ComputeInstanceID: *m.ComputeInstanceID, UUID: m.UUID,
			Profile: *m.Profile, GISlices: m.GISlices, MemoryMiB: m.MemoryMiB, GICapMinor: m.GICapMinor, CICapMinor: m.CICapMinor}
		for _, p := range m.Processes {
			md.Processes = append(md.Processes, model.Process(p))
		}
		g.MigDevices = append(g.MigDevices, md)
	}
	return g, nil
}

func profiles(w []v3.GIProfile) []model.GIProfile {
	if len(w) == 0 {
		return nil
	}
	out := make([]model.GIProfile, len(w))
	for i, p := range w {
		out[i] = model.GIProfile{ID: p.ID, Name: p.Name, Instances: p.Instances, MemoryMiB: p.MemoryMiB, Slices: p.Slices}
		for _, pl := range p.Placements {
			out[i].Placements = append(out[i].Placements, model.Placement(pl))
		}
		for _, c := range p.CIProfiles {
			out[i].CIProfiles = append(out[i].CIProfiles, model.CIProfile(c))
		}
	}
	return out
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
		return fmt.Errorf("%s: %s where %s belongs", jsonPath(te.Field), got, wantKind(te.Type))
	}
	return err
}

// jsonPath is encoding/json's path of a field without the names of the
// Go structs embedded on the way (v2's GPU embeds v3's): every key of a
// snapshot is lower case.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	keep := parts[:0]
	for _, p := range parts {
		if p != "" && (p[0] < 'A' || p[0] > 'Z') {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ".")
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
