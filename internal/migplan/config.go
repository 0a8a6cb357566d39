// Package migplan works out what a node's GPUs will be once NVIDIA's
// mig-parted applies one config of its file (v1): which entry each GPU
// matches, the MIG devices it will have, and whether the GPU can hold
// them at all. It is pure: it reads the config file it is given and the
// node's model, and changes nothing.
package migplan

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/NVIDIA/mig-parted/api/spec/v1"
	yaml "gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/slurm-mig/slurm-mig/internal/fileio"
)

// maxConfigSize bounds the config file read: NVIDIA's default file, with
// every GPU it knows, is about 30 KiB.
const maxConfigSize = 4 << 20

// Config is a mig-parted config file, decoded as mig-parted decodes it
// (sigs.k8s.io/yaml into its api/spec/v1 types) so that plan accepts what
// mig-parted accepts; gopkg.in/yaml.v3 reads it again for line numbers.
type Config struct {
	File    string
	configs map[string]*Selected
}

// Selected is one config of the file: its entries, in file order, as
// mig-parted walks them.
type Selected struct {
	File    string
	Name    string
	Entries []Entry
}

// Entry is one entry of a config and where it stands in the file.
type Entry struct {
	Spec v1.MigConfigSpec
	// Line is the entry's line in the file; Number its place in the
	// config, from 1.
	Line, Number int
}

// ReadConfig reads the mig-parted config file at path.
func ReadConfig(path string) (*Config, error) {
	data, err := fileio.ReadFile(path, maxConfigSize, "a mig-parted config")
	if err != nil {
		return nil, err
	}
	return ParseConfig(path, data)
}

// ParseConfig reads data, the mig-parted config file named file. Every
// error names the file, and the line where one is known.
func ParseConfig(file string, data []byte) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	c := &Config{File: file, configs: map[string]*Selected{}}
	if err := c.walk(&doc); err != nil {
		return nil, err
	}
	// The whole file as mig-parted reads it. Only a file it refuses is
	// decoded again entry by entry, to say on which line the refused entry
	// stands; what that does not find is still refused, without a line.
	var spec v1.Spec
	if err := sigsyaml.Unmarshal(data, &spec); err != nil {
		if err := c.entries(&doc); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	for name, sel := range c.configs {
		specs := spec.MigConfigs[name]
		if len(specs) != len(sel.Entries) {
			// A config named twice: both readers keep the last, so this
			// is only a guard.
			return nil, fmt.Errorf("%s: config %q: mig-parted reads %d entries where this reader found %d", file, name, len(specs), len(sel.Entries))
		}
		for i := range sel.Entries {
			sel.Entries[i].Spec = specs[i]
		}
	}
	return c, nil
}

// yamlLine finds the line yaml.v3 puts in its messages ("yaml: line 3:
// did not find expected key").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError is a YAML syntax error as file:line: message.
func yamlError(file string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: %s", file, m[1], strings.TrimPrefix(msg, m[0]))
	}
	return fmt.Errorf("%s: %s", file, strings.TrimPrefix(msg, "yaml: "))
}

// at is an error at a node's line.
func (c *Config) at(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", c.File, n.Line, fmt.Sprintf(format, args...))
}

// walk finds the configs and their entries, decoding each entry with
// mig-parted's types.
func (c *Config) walk(doc *yaml.Node) error {
	if len(doc.Content) == 0 {
		return fmt.Errorf("%s:1: empty; a mig-parted config starts with version: v1", c.File)
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return c.at(top, "not a mig-parted config (want version: v1 and mig-configs:)")
	}
	var version, configs *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, value := top.Content[i], top.Content[i+1]
		switch key.Value {
		case "version":
			version = value
		case "mig-configs":
			configs = value
		default:
			return c.at(key, "unexpected field %q (a mig-parted config v1 has version and mig-configs)", key.Value)
		}
	}
	switch {
	case version == nil:
		return c.at(top, "no version (want version: v1)")
	case version.Kind != yaml.ScalarNode || version.Value != v1.Version:
		return c.at(version, "unknown version %q (want %s)", version.Value, v1.Version)
	case configs == nil || configs.Kind != yaml.MappingNode || len(configs.Content) == 0:
		at := top
		if configs != nil {
			at = configs
		}
		return c.at(at, "mig-configs needs at least one config")
	}
	for i := 0; i+1 < len(configs.Content); i += 2 {
		key, value := configs.Content[i], configs.Content[i+1]
		sel, err := c.config(key, value)
		if err != nil {
			return err
		}
		c.configs[key.Value] = sel
	}
	return nil
}

// entryFields are the fields of an entry (mig-parted's MigConfigSpec),
// named here only to say on which line an unknown one stands.
var entryFields = []string{"device-filter", "devices", "mig-enabled", "mig-devices"}

// config reads one config: a list of entries.
func (c *Config) config(key, value *yaml.Node) (*Selected, error) {
	name := key.Value
	if value.Kind != yaml.SequenceNode || len(value.Content) == 0 {
		return nil, c.at(key, "config %q: needs at least one entry", name)
	}
	sel := &Selected{File: c.File, Name: name}
	for i, entry := range value.Content {
		if entry.Kind != yaml.MappingNode {
			return nil, c.at(entry, "config %q: entry %d is not a mapping of %s", name, i+1, strings.Join(entryFields, ", "))
		}
		for j := 0; j+1 < len(entry.Content); j += 2 {
			if k := entry.Content[j]; !contains(entryFields, k.Value) {
				return nil, c.at(k, "config %q: entry %d: unexpected field %q (an entry has %s)", name, i+1, k.Value, strings.Join(entryFields, ", "))
			}
		}
		sel.Entries = append(sel.Entries, Entry{Line: entry.Line, Number: i + 1})
	}
	return sel, nil
}

// entries decodes each entry alone, as YAML again, as mig-parted does, and
// returns the error of the first it refuses, at its line. Scalars keep their
// style, so "yes" is still the YAML 1.1 boolean sigs.k8s.io/yaml reads.
func (c *Config) entries(doc *yaml.Node) error {
	configs := doc.Content[0]
	for i := 0; i+1 < len(configs.Content); i += 2 {
		if configs.Content[i].Value == "mig-configs" {
			configs = configs.Content[i+1]
			break
		}
	}
	for i := 0; i+1 < len(configs.Content); i += 2 {
		name := configs.Content[i].Value
		for j, entry := range configs.Content[i+1].Content {
			text, err := yaml.Marshal(entry)
			if err != nil {
				return c.at(entry, "config %q: entry %d: %v", name, j+1, err)
			}
			var spec v1.MigConfigSpec
			if err := sigsyaml.Unmarshal(text, &spec); err != nil {
				return c.at(entry, "config %q: entry %d: %v", name, j+1, cleanError(err))
			}
		}
	}
	return nil
}

// cleanError drops the wrapping sigs.k8s.io/yaml puts around the message
// of the type that refused the value, and the ": <nil>" mig-parted
// v0.10.0 ends a refused count with (it wraps a nil error).
func cleanError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: ")
	msg = strings.TrimPrefix(msg, "while decoding JSON: ")
	return strings.TrimSuffix(msg, ": <nil>")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Names are the file's configs, sorted.
func (c *Config) Names() []string {
	names := make([]string, 0, len(c.configs))
	for n := range c.configs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrUnknownConfig is the error of a config name the file does not have.
var ErrUnknownConfig = errors.New("no such config")

// Select is the config called name, as mig-parted's --selected-config
// picks it.
func (c *Config) Select(name string) (*Selected, error) {
	sel, ok := c.configs[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w %s (it has %s)", c.File, ErrUnknownConfig, strconv.Quote(name), strings.Join(c.Names(), ", "))
	}
	return sel, nil
}
