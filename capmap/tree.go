package capmap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/hostfs"
)

// deviceFileMinorKey starts the line of a capability file that holds its minor.
const deviceFileMinorKey = "DeviceFileMinor:"

// loadTree reads the older tree, dir/gpu<N>/mig/gi<X>[/ci<Y>]/access each
// holding "DeviceFileMinor: <m>"; missing says dir does not exist. Other
// names are skipped; a bad or unreadable access file is an error.
func loadTree(dir string) (m *Map, missing bool, err error) {
	gpus, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("reading MIG capability tree: %w", err)
	}
	m = newMap(dir, 0)
	for _, g := range gpus {
		gpu, ok := numbered(g.Name(), "gpu")
		if !ok || !isDir(dir, g) {
			continue
		}
		migDir := filepath.Join(dir, g.Name(), "mig")
		gis, err := os.ReadDir(migDir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, false, fmt.Errorf("reading MIG capability tree: %w", err)
		}
		for _, e := range gis {
			gi, ok := numbered(e.Name(), "gi")
			if !ok || !isDir(migDir, e) {
				continue
			}
			giDir := filepath.Join(migDir, e.Name())
			minor, err := readCapFile(filepath.Join(giDir, "access"))
			if err != nil {
				return nil, false, err
			}
			// Canonical names are unique within a directory: put never sees a
			// duplicate here.
			m.put(ciKey{gpu, gi, 0}, false, minor)

			cis, err := os.ReadDir(giDir)
			if err != nil {
				return nil, false, fmt.Errorf("reading MIG capability tree: %w", err)
			}
			for _, c := range cis {
				ci, ok := numbered(c.Name(), "ci")
				if !ok || !isDir(giDir, c) {
					continue
				}
				minor, err := readCapFile(filepath.Join(giDir, c.Name(), "access"))
				if err != nil {
					return nil, false, err
				}
				m.put(ciKey{gpu, gi, ci}, true, minor)
			}
		}
	}
	if m.Len() == 0 {
		return nil, false, fmt.Errorf("%s: %s", dir, errNoEntries)
	}
	return m, false, nil
}

// numbered parses name as prefix followed by a canonical unsigned decimal.
func numbered(name, prefix string) (uint32, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	return parseUint32([]byte(rest), true)
}

// isDir reports whether the entry e of parent is a directory, following a
// symbolic link.
func isDir(parent string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := os.Stat(filepath.Join(parent, e.Name()))
	return err == nil && fi.IsDir()
}

// readCapFile returns the DeviceFileMinor of one capability access file.
func readCapFile(path string) (uint32, error) {
	data, err := hostfs.ReadFileNoStat(path)
	if err != nil {
		return 0, fmt.Errorf("reading MIG capability file: %w", err)
	}
	return parseCapFile(data, path)
}

// parseCapFile finds the single "DeviceFileMinor: <m>" line in the content of
// a capability file; other lines ("DeviceFileMode: 256", ...) are ignored.
// path is used in error messages.
func parseCapFile(data []byte, path string) (uint32, error) {
	var (
		minor uint32
		found bool
	)
	for lineNo := 1; len(data) > 0; lineNo++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		rest, ok := bytes.CutPrefix(line, []byte(deviceFileMinorKey))
		if !ok {
			continue
		}
		v, ok := parseUint32(bytes.TrimSpace(rest), false)
		if !ok {
			return 0, fmt.Errorf("%s:%d: malformed %s line %s: want %q",
				path, lineNo, deviceFileMinorKey, quoteTrunc(string(line)), deviceFileMinorKey+" <minor>")
		}
		if found {
			return 0, fmt.Errorf("%s:%d: second %s line", path, lineNo, deviceFileMinorKey)
		}
		minor, found = v, true
	}
	if !found {
		return 0, fmt.Errorf("%s: no %s line", path, deviceFileMinorKey)
	}
	return minor, nil
}
