package snapshot

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	v3 "github.com/slurm-mig/slurm-mig/internal/api/snapshot/v3"
	"github.com/slurm-mig/slurm-mig/internal/testkit/fixture"
)

// TestSnapshotDocNamesEveryKey holds docs/snapshot.md to what
// WriteSnapshot writes: the first column of its field tables names every
// JSON key of Node, nested ones included, and no key Node lacks.
func TestSnapshotDocNamesEveryKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(fixture.Root(t), "docs/snapshot.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	inFields := false // in a table whose header is | field | ...
	for _, l := range strings.Split(string(doc), "\n") {
		switch {
		case !strings.HasPrefix(l, "|"):
			inFields = false
		case strings.HasPrefix(l, "| field |"):
			inFields = true
		case inFields:
			if m := docField.FindStringSubmatch(l); m != nil {
				seen[m[1]] = true
			}
		}
	}
	var documented []string
	for k := range seen {
		documented = append(documented, k)
	}
	sort.Strings(documented)
	written := jsonKeys(reflect.TypeOf(v3.Node{}), map[string]bool{})
	if diff := cmp.Diff(written, documented); diff != "" {
		t.Errorf("docs/snapshot.md's field tables differ from the keys a snapshot has (-written +documented):\n%s", diff)
	}
}

// docField is the first cell of a row of a field table: | `key` | ...
var docField = regexp.MustCompile("^\\| `([a-z_]+)` \\|")

// jsonKeys are the JSON keys of t's fields and of the structs in them,
// sorted, each once.
func jsonKeys(t reflect.Type, keys map[string]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			keys[name] = true
			jsonKeys(f.Type, keys)
		}
	}
	var out []string
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestSnapshotDocExample reads the example in docs/snapshot.md as a
// snapshot: it must be one.
func TestSnapshotDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(fixture.Root(t), "docs/snapshot.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	example, _, closed := strings.Cut(rest, "```\n")
	if !ok || !closed {
		t.Fatal("docs/snapshot.md has no ```json example")
	}
	node, err := Parse([]byte(example))
	if err != nil {
		t.Fatalf("docs/snapshot.md's example: %v", err)
	}
	if node.Hardware == nil || len(node.GPUs) == 0 || node.GPUs[0].Cores == "" || len(node.GPUs[0].NVLinks) == 0 {
		t.Errorf("docs/snapshot.md's example lacks hardware, cores or nvlinks: %+v", node)
	}
}
