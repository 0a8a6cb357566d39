// Package capmap maps MIG GI and CI capability names to the minors of their
// /dev/nvidia-caps/nvidia-cap<M> files, read from the driver's mig-minors
// file or, on older drivers, the per-capability tree; never computed, as
// the driver's layout is an observation, not a contract. "gpuN" is the GPU's
// device minor (/dev/nvidiaN, NVML GetMinorNumber), not its NVML index.
package capmap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"

	"github.com/slurm-mig/slurm-mig/internal/hostfs"
)

// MigMinorsPath is the path of the mig-minors file relative to a root ("/" on
// a live node, a fixture directory in tests).
const MigMinorsPath = "proc/driver/nvidia-caps/mig-minors"

// CapabilitiesDir is the directory of the older per-capability tree relative
// to a root.
const CapabilitiesDir = "proc/driver/nvidia/capabilities"

// maxLineLen is the longest line Parse accepts. Real lines are under 30 bytes.
const maxLineLen = 64 * 1024

// giKey names gpu<GPU>/gi<GI>/access.
type giKey struct{ gpu, gi uint32 }

// ciKey names gpu<GPU>/gi<GI>/ci<CI>/access.
type ciKey struct{ gpu, gi, ci uint32 }

// inlineCIs is how many compute instances (ids 0 to inlineCIs-1) a giRec
// holds. Drivers list ci0 to ci7 for every GI; higher ids go to Map.wideCI.
const inlineCIs = 8

// giRec holds the entries of one GPU instance: its own minor and those of
// its compute instances with small ids. Grouping them lets Parse touch the
// map once per GI rather than once per line.
type giRec struct {
	ci  [inlineCIs]uint32 // ci[Y]: minor of ciY/access, valid when bit Y of has is set
	gi  uint32            // minor of giX/access, valid when bit giBit of has is set
	has uint16
}

// giBit is the bit of giRec.has that marks giRec.gi valid.
const giBit = inlineCIs

// slot returns the has-bit for the GI itself (isCI false) or for CI ci
// (isCI true, ci < inlineCIs), and the slot holding its minor.
func (r *giRec) slot(isCI bool, ci uint32) (uint16, *uint32) {
	if isCI {
		return 1 << ci, &r.ci[ci]
	}
	return 1 << giBit, &r.gi
}

// put stores minor in r unless the entry is already there; then it returns
// the minor held and dup true.
func (r *giRec) put(isCI bool, ci, minor uint32) (old uint32, dup bool) {
	b, v := r.slot(isCI, ci)
	if r.has&b != 0 {
		return *v, true
	}
	r.has |= b
	*v = minor
	return 0, false
}

// Map resolves (GPU minor, GI) and (GPU minor, GI, CI) to capability device
// minors. A Map is read-only after Load or Parse and safe for concurrent use.
type Map struct {
	gis    map[giKey]giRec  // every GI, with its CIs of id < inlineCIs
	wideCI map[ciKey]uint32 // CIs of id >= inlineCIs; nil when there are none
	n      int              // number of GI and CI entries
	source string
}

// GI returns the minor of gpu<gpuMinor>/gi<gi>/access.
func (m *Map) GI(gpuMinor, gi uint32) (uint32, bool) {
	if m == nil {
		return 0, false
	}
	r, ok := m.gis[giKey{gpuMinor, gi}]
	return r.gi, ok && r.has&(1<<giBit) != 0
}

// CI returns the minor of gpu<gpuMinor>/gi<gi>/ci<ci>/access.
func (m *Map) CI(gpuMinor, gi, ci uint32) (uint32, bool) {
	if m == nil {
		return 0, false
	}
	if ci >= inlineCIs {
		v, ok := m.wideCI[ciKey{gpuMinor, gi, ci}]
		return v, ok
	}
	r, ok := m.gis[giKey{gpuMinor, gi}]
	return r.ci[ci], ok && r.has&(1<<ci) != 0
}

// Source names where the map came from (the file or directory path), for
// error messages by callers.
func (m *Map) Source() string {
	if m == nil {
		return ""
	}
	return m.source
}

// Len returns the number of GI and CI entries held.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return m.n
}

// newMap returns an empty Map sized for about lines entries, assuming the
// driver's mix of one GI per eight CIs (a hint only).
func newMap(source string, lines int) *Map {
	return &Map{
		gis:    make(map[giKey]giRec, lines/(inlineCIs+1)+1),
		source: source,
	}
}

// put stores one entry straight into m. Parse batches entries by GI through
// parser.put instead; this is for the capabilities tree and for wide CIs.
func (m *Map) put(key ciKey, isCI bool, minor uint32) (old uint32, dup bool) {
	if isCI && key.ci >= inlineCIs {
		if m.wideCI == nil {
			m.wideCI = make(map[ciKey]uint32)
		}
		if old, dup := m.wideCI[key]; dup {
			return old, true
		}
		m.wideCI[key] = minor
		m.n++
		return 0, false
	}
	k := giKey{key.gpu, key.gi}
	r := m.gis[k]
	if old, dup := r.put(isCI, key.ci, minor); dup {
		return old, true
	}
	m.gis[k] = r
	m.n++
	return 0, false
}

// errNoEntries is the reason given when a source lists no GI or CI at all.
const errNoEntries = "no MIG capability entries"

// Load reads MigMinorsPath under root ("/" on the node itself), within
// hostfs's bound, or else the older tree at CapabilitiesDir. Its errors
// name the path; with neither there, both, wrapping fs.ErrNotExist.
func Load(root string) (*Map, error) {
	host := hostfs.FS(root)
	minorsPath := host.Path(MigMinorsPath)
	data, err := hostfs.ReadFileNoStat(minorsPath)
	if err == nil {
		return Parse(bytes.NewReader(data), minorsPath)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err // it names the path
	}
	capDir := host.Path(CapabilitiesDir)
	m, missing, err := loadTree(capDir)
	if missing {
		return nil, fmt.Errorf("no MIG capability minors: neither %s nor %s exists: %w",
			minorsPath, capDir, fs.ErrNotExist)
	}
	return m, err
}

// Parse reads mig-minors lines "<name> <minor>" from r (Source returns name),
// skipping names but gpu<N>/gi<X>[/ci<Y>]/access. A bad line or an entry of
// two minors is an error "name:LINE: ..."; no MIG entry at all, "name: ...".
func Parse(r io.Reader, name string) (*Map, error) {
	p := parser{m: newMap(name, sizeHint(r))}

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 8*1024), maxLineLen)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		if err := p.addLine(sc.Bytes()); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line too long (limit %d bytes): %w",
				name, lineNo+1, maxLineLen, err)
		}
		return nil, fmt.Errorf("%s: read error after line %d: %w", name, lineNo, err)
	}
	p.flush()
	if p.m.Len() == 0 {
		return nil, fmt.Errorf("%s: %s", name, errNoEntries)
	}
	return p.m, nil
}

// parser holds the state of one Parse. It keeps the current run of entries
// that share a GI in cur and writes it to m when the run ends; input in any
// order gives the same Map.
type parser struct {
	m      *Map
	curKey giKey
	cur    giRec
	open   bool // cur holds a run not yet written to m
}

// put stores one entry, returning the minor held and dup true when the entry
// is already known.
func (p *parser) put(key ciKey, isCI bool, minor uint32) (old uint32, dup bool) {
	if isCI && key.ci >= inlineCIs {
		return p.m.put(key, isCI, minor)
	}
	k := giKey{key.gpu, key.gi}
	if !p.open || k != p.curKey {
		p.flush()
		p.curKey, p.cur, p.open = k, p.m.gis[k], true
	}
	if old, dup := p.cur.put(isCI, key.ci, minor); dup {
		return old, true
	}
	p.m.n++
	return 0, false
}

// flush writes the current run to the map.
func (p *parser) flush() {
	if p.open {
		p.m.gis[p.curKey] = p.cur
		p.open = false
	}
}

// sizeHint guesses the number of lines r holds, from its length when r is an
// in-memory reader. Files under /proc report size 0, so the default is the
// size of today's driver listing (32 GPUs x 135 entries).
func sizeHint(r io.Reader) int {
	const avgLine = 24 // "gpu12/gi3/ci4/access 1234\n" and kin
	const defaultLines = 32 * 135
	if l, ok := r.(interface{ Len() int }); ok {
		n := l.Len() / avgLine
		if n > 0 && n < 1<<20 {
			return n
		}
	}
	return defaultLines
}

// lineError is the error for a line that is not "<name> <minor>" or whose MIG
// name is mangled. Line text is quoted and truncated so junk stays readable.
type lineError struct {
	line   string
	reason string
}

func (e *lineError) Error() string {
	return fmt.Sprintf("malformed line %s: %s", quoteTrunc(e.line), e.reason)
}

func quoteTrunc(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

const wantShape = `want "<name> <minor>"`

// isSpace reports whether c separates fields or surrounds a line.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// addLine parses one line of mig-minors and records it.
func (p *parser) addLine(line []byte) error {
	// Fast path for GI and CI lines as the driver writes them. Any other
	// line takes the general path below, which accepts the same lines and
	// more, and words the errors.
	if kind, key, sp, minor, ok := fastLine(line); ok {
		return p.add(line, line[:sp], kind, key, "", minor)
	}

	// General path: find up to two fields and reject anything but
	// printable ASCII and blanks.
	var start, end [2]int
	n := 0
	inField := false
	for i, c := range line {
		if c > ' ' && c < 0x7f {
			if !inField {
				if n == len(start) {
					return &lineError{string(line), wantShape}
				}
				start[n] = i
				n++
				inField = true
			}
			continue
		}
		if !isSpace(c) {
			return &lineError{string(line), fmt.Sprintf("byte %#02x at column %d is not printable ASCII", c, i+1)}
		}
		if inField {
			end[n-1] = i
			inField = false
		}
	}
	if inField {
		end[n-1] = len(line)
	}
	switch n {
	case 0:
		return nil // blank line
	case 1:
		return &lineError{string(line), wantShape}
	}
	name := line[start[0]:end[0]]
	minor, ok := parseUint32(line[start[1]:end[1]], false)
	if !ok {
		return &lineError{string(line), wantShape}
	}

	kind, key, bad := parseName(name)
	return p.add(line, name, kind, key, bad, minor)
}

// add records the entry parsed from line, or returns the line's error.
func (p *parser) add(line, name []byte, kind nameKind, key ciKey, bad string, minor uint32) error {
	switch kind {
	case nameGI, nameCI:
		if old, dup := p.put(key, kind == nameCI, minor); dup && old != minor {
			return fmt.Errorf("duplicate entry %q with minor %d, listed before with minor %d", name, minor, old)
		}
	case nameBad:
		return &lineError{string(line), fmt.Sprintf("bad %s number in name %q", bad, name)}
	}
	return nil
}

type nameKind int

const (
	nameOther nameKind = iota // not a MIG GI/CI entry: skipped
	nameGI                    // gpu<N>/gi<X>/access
	nameCI                    // gpu<N>/gi<X>/ci<Y>/access
	nameBad                   // shaped like a GI/CI entry, but a number is bad
)

// parseName classifies a capability name; see Parse for the rules. For
// nameBad, bad names the part ("gpu", "gi" or "ci") whose number is bad.
func parseName(name []byte) (kind nameKind, key ciKey, bad string) {
	if len(name) < 3 || name[0] != 'g' || name[1] != 'p' || name[2] != 'u' {
		return nameOther, key, ""
	}
	// Positions of the first slashes: 2 for a GI, 3 for a CI.
	var cut [3]int
	n := 0
	for i, c := range name {
		if c == '/' {
			if n < len(cut) {
				cut[n] = i
			}
			n++
		}
	}
	if n < 2 || n > len(cut) || string(name[cut[n-1]+1:]) != "access" {
		return nameOther, key, ""
	}
	gi := name[cut[0]+1 : cut[1]]
	if len(gi) < 2 || gi[0] != 'g' || gi[1] != 'i' {
		return nameOther, key, ""
	}
	var ci []byte
	if n == 3 {
		ci = name[cut[1]+1 : cut[2]]
		if len(ci) < 2 || ci[0] != 'c' || ci[1] != 'i' {
			return nameOther, key, ""
		}
	}
	var ok bool
	if key.gpu, ok = parseUint32(name[len("gpu"):cut[0]], true); !ok {
		return nameBad, key, "gpu"
	}
	if key.gi, ok = parseUint32(gi[len("gi"):], true); !ok {
		return nameBad, key, "gi"
	}
	if n == 2 {
		return nameGI, key, ""
	}
	if key.ci, ok = parseUint32(ci[len("ci"):], true); !ok {
		return nameBad, key, "ci"
	}
	return nameCI, key, ""
}

// fastLine parses a GI or CI line written exactly as the driver writes it
// ("gpu0/gi0/ci0/access 4"); sp is the index of the space after the name.
// Any other line gives ok false and goes the general way, to the same answer.
func fastLine(b []byte) (kind nameKind, key ciKey, sp int, minor uint32, ok bool) {
	const access = "access "
	if len(b) < len("gpu0/gi0/access 0") || b[0] != 'g' || b[1] != 'p' || b[2] != 'u' {
		return nameOther, key, 0, 0, false
	}
	i := 3
	if key.gpu, i, ok = canonDigits(b, i); !ok || len(b)-i < 3 || b[i] != '/' || b[i+1] != 'g' || b[i+2] != 'i' {
		return nameOther, key, 0, 0, false
	}
	if key.gi, i, ok = canonDigits(b, i+3); !ok || i == len(b) || b[i] != '/' {
		return nameOther, key, 0, 0, false
	}
	i++
	kind = nameGI
	if len(b)-i >= 2 && b[i] == 'c' && b[i+1] == 'i' {
		if key.ci, i, ok = canonDigits(b, i+2); !ok || i == len(b) || b[i] != '/' {
			return nameOther, key, 0, 0, false
		}
		i++
		kind = nameCI
	}
	if len(b)-i < len(access) || string(b[i:i+len(access)]) != access {
		return nameOther, key, 0, 0, false
	}
	sp = i + len(access) - 1
	if minor, ok = parseUint32(b[sp+1:], false); !ok {
		return nameOther, key, 0, 0, false
	}
	return kind, key, sp, minor, true
}

// canonDigits parses the canonical unsigned decimal (no leading zeros, 32
// bits) that starts b[i:] and ends at the first non-digit; next is the index
// of that non-digit.
func canonDigits(b []byte, i int) (v uint32, next int, ok bool) {
	start := i
	var acc uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		acc = acc*10 + uint64(b[i]-'0')
		if acc > math.MaxUint32 {
			return 0, i, false
		}
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return 0, i, false
	}
	return uint32(acc), i, true
}

// parseUint32 parses an unsigned decimal that fits in 32 bits: digits only,
// no sign. With canonical set, leading zeros are refused as well ("0" is fine).
func parseUint32(b []byte, canonical bool) (uint32, bool) {
	if len(b) == 0 || (canonical && len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
		if v > math.MaxUint32 {
			return 0, false
		}
	}
	return uint32(v), true
}
