package snapshot

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// FuzzOnePassAgreesWithEncodingJSON: Parse decodes in one pass on the
// engine of encoding/json/v2 with encoding/json's semantics, each table
// once a reader, and words a refusal with encoding/json itself. For any
// input, encoding/json accepts it exactly when the one pass does, into
// the same node and tables, and a second pass of the same reader (its
// tables known by their bytes) gives the very same tables.
// Seeds: those of FuzzSnapshot, and a few that hold two errors or a
// table's bytes twice.
func FuzzOnePassAgreesWithEncodingJSON(f *testing.F) {
	addSnapshotSeeds(f)
	f.Add([]byte(`{"schema_version": 1, "gpus": [{"index": "0", "minor": 0, "name": "a"}], "x": [1,}`))
	f.Add([]byte(`{"schema_version": 1, "gpus": [{"index": 0, "minor": 0, "name": "a"}]} {}`))
	f.Add([]byte(`{"schema_version": 2, "profile_tables": {"0x1": [{"id": 1e40}]}, "gpus": []}`))
	f.Add([]byte(`{"schema_version": 3, "profile_tables": {"0x1": [{"id": 1, "placements": [{"start": 0, "size": 1}]}],
 "0x2": [{"id": 1, "placements": [{"start": 0, "size": 1}]}], "0x3": null, "0x4": [], "0x1": [{"Id": 2}]}, "gpus": []}`))
	f.Add([]byte(`{"schema_version": 3, "Profile_Tables": {"` + "\xff" + `": [{"id": 1}], "\u0030x1": [{"id": 2}]}, "profile_tables": {"0x2": []}, "gpus": []}`))
	f.Add([]byte(`{"schema_version": 3, "profile_tables": {"0x1": [{"id": 1}]}, "profile_tables": null, "gpus": []}`))
	f.Add([]byte(`{"schema_version": 3, "profile_tables": [], "gpus": []}`))
	f.Add([]byte(`{"schema_version": 1, "Hostname": "a", "HOSTNAME": "b", "gpus": [{"Index": 1, "index": null, "minor": 0, "name": "\xff\u00e9"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var std anySchema
		stdErr := json.Unmarshal(data, &std)
		r := NewReader(nil)
		w, tables, err := r.decodeOnePass(data)
		if (stdErr == nil) != (err == nil) {
			t.Fatalf("encoding/json: %v; one pass: %v\ninput:\n%s", stdErr, err, data)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(&std.Node, w); diff != "" {
			t.Fatalf("encoding/json and the one pass decode other nodes (-encoding/json +one pass):\n%s\ninput:\n%s", diff, data)
		}
		if len(tables) != len(std.ProfileTables) {
			t.Fatalf("encoding/json decodes %d tables, the one pass %d\ninput:\n%s", len(std.ProfileTables), len(tables), data)
		}
		for id, ps := range std.ProfileTables {
			var got []model.GIProfile
			if tables[id] != nil {
				got = tables[id].Profiles
			}
			if diff := cmp.Diff(profiles(ps), got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("table %q: encoding/json and the one pass differ (-encoding/json +one pass):\n%s\ninput:\n%s", id, diff, data)
			}
		}
		_, again, err := r.decodeOnePass(data)
		if err != nil {
			t.Fatalf("a second pass refuses what the first read: %v", err)
		}
		for id, table := range tables {
			if again[id] != table {
				t.Fatalf("table %q: a second pass of the reader gives another table\ninput:\n%s", id, data)
			}
		}
	})
}
