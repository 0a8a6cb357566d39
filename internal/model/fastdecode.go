package model

import (
	"bytes"
	"encoding"
	"encoding/json"
	"hash/maphash"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"
)

// decodeFast decodes data into v, a pointer to a struct, exactly as
// json.Unmarshal would, for the plain JSON that snapshots are: objects,
// arrays, strings without escapes, integers, true and false, into the
// structs, slices, pointers, strings, integers and booleans of this
// package. For anything else (a null, an escape, a fraction where an
// integer belongs, a key given twice or in other case, a value of the
// wrong kind, bad syntax) it reports false, having perhaps written part of
// v, and the caller decodes afresh with encoding/json, which also words
// the error. It also reports false where an object lacks a key that
// required lists for its struct type (by JSON name), so that the caller's
// own check finds it and names it.
//
// Why it exists: plan reads a fleet's snapshots, half a gigabyte for
// 10,000 nodes of eight GPUs, and encoding/json, which checks and then
// decodes its input in two passes of a byte-at-a-time state machine, takes
// seconds where this takes a fraction of one. Most of that half gigabyte
// is each GPU's MIG profile table, the same bytes for every GPU of a
// model: a list of structs whose bytes come again is decoded once and
// shared, as strings are, by the GPUs that have it.
func decodeFast(data []byte, v any, required map[reflect.Type][]string) bool {
	return newFastDecoder(required).decode(data, v)
}

// newFastDecoder is a decoder for decodeFast's work that keeps what it
// learns (types, lists) from one input to the next.
func newFastDecoder(required map[reflect.Type][]string) *fastDecoder {
	return &fastDecoder{types: map[reflect.Type]*fastType{}, required: required, memo: map[reflect.Type][]memoized{},
		seen: map[reflect.Type]map[uint64]bool{}, seed: maphash.MakeSeed()}
}

// decode is decodeFast with what d has learned.
func (d *fastDecoder) decode(data []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	d.data, d.pos = data, 0
	defer func() { d.data = nil }() // data is the caller's again
	if !d.plain(rv.Type().Elem(), 0) || !d.value(rv.Elem(), 0) {
		return false
	}
	d.space()
	return d.pos == len(d.data)
}

// maxFastDepth bounds the nesting decodeFast follows; a snapshot nests
// five deep, and deeper input goes to encoding/json, which has its own
// bound.
const maxFastDepth = 32

// minMemo is the size from which a list's bytes are remembered: a MIG
// profile table is about 5 kB; shorter lists cost less to decode than to
// look up, and a list of 16 kB or more (a node's GPUs) is one that never
// comes again. maxMemo is how many lists of a type are remembered, the
// latest: a fleet has a few GPU models, and a lookup tries each. maxSeen
// bounds the hashes kept of lists seen once.
const (
	minMemo      = 512
	maxMemoBytes = 16 << 10
	maxMemo      = 8
	maxSeen      = 4096
)

type fastDecoder struct {
	data     []byte
	pos      int
	types    map[reflect.Type]*fastType // the struct types learned
	required map[reflect.Type][]string
	memo     map[reflect.Type][]memoized      // lists of structs decoded, by type, latest last
	seen     map[reflect.Type]map[uint64]bool // hashes of lists seen once
	seed     maphash.Seed
}

// fastType is a struct type as decodeFast knows it: its fields by JSON
// name, the same names in ASCII lower case (to find a key that
// encoding/json would match without regard to case), and the mask of the
// fields an object must give.
type fastType struct {
	ok       bool // decodeFast decodes into it as encoding/json does
	fields   map[string]int
	folded   map[string]bool
	required uint64
}

// memoized is a list's JSON (a copy: the input's buffer is read into
// again) and what it decoded to.
type memoized struct {
	raw   []byte
	value reflect.Value
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// plain says whether decodeFast decodes into t as encoding/json does: a
// type with its own unmarshaling, a map, an interface, a float, an
// embedded field, a tag option such as ",string", or more than 64 fields
// (seen keys are a bit mask) is left to encoding/json. It learns every
// struct type it meets.
func (d *fastDecoder) plain(t reflect.Type, depth int) bool {
	if depth > maxFastDepth || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return d.plain(t.Elem(), depth+1)
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Struct:
	default:
		return false
	}
	if ft, seen := d.types[t]; seen {
		return ft.ok // true too while t is being learned: it may refer to itself
	}
	if t.NumField() > 64 {
		return false
	}
	ft := &fastType{ok: true, fields: map[string]int{}, folded: map[string]bool{}}
	d.types[t] = ft
	ft.ok = d.learn(ft, t, depth)
	return ft.ok
}

// learn fills in ft, of the struct type t, and says whether its fields
// are all plain.
func (d *fastDecoder) learn(ft *fastType, t reflect.Type, depth int) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous {
			return false
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "" && opts != "omitempty" || !d.plain(f.Type, depth+1) {
			return false
		}
		if name == "" {
			name = f.Name
		}
		ft.fields[name] = i
		ft.folded[strings.ToLower(name)] = true
	}
	for _, name := range d.required[t] {
		i, ok := ft.fields[name]
		if !ok {
			return false
		}
		ft.required |= 1 << i
	}
	return true
}

// value decodes the next value into v, of a type plain has passed.
func (d *fastDecoder) value(v reflect.Value, depth int) bool {
	d.space()
	if depth > maxFastDepth || d.pos >= len(d.data) {
		return false
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.object(v, depth)
	case reflect.Slice:
		return d.array(v, depth)
	case reflect.Pointer:
		if d.data[d.pos] == 'n' {
			return false // null: encoding/json's rules for it are its own
		}
		p := reflect.New(v.Type().Elem())
		if !d.value(p.Elem(), depth+1) {
			return false
		}
		v.Set(p)
		return true
	case reflect.String:
		s, ok := d.str()
		if ok {
			v.SetString(string(s))
		}
		return ok
	case reflect.Bool:
		switch {
		case d.literal("true"):
			v.SetBool(true)
		case d.literal("false"):
			v.SetBool(false)
		default:
			return false
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		neg, mag, ok := d.integer()
		limit := uint64(1)<<(v.Type().Bits()-1) - 1
		switch {
		case !ok, !neg && mag > limit, neg && mag > limit+1:
			return false
		case neg:
			v.SetInt(int64(-mag)) // two's complement: right for -1<<63 too
		default:
			v.SetInt(int64(mag))
		}
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		neg, mag, ok := d.integer()
		if !ok || neg || mag > math.MaxUint64>>(64-v.Type().Bits()) {
			return false // encoding/json refuses even -0 here
		}
		v.SetUint(mag)
		return true
	}
	return false
}

// object decodes a JSON object into the struct v. A key no field has is
// skipped, as encoding/json skips it, unless it names a field in other
// case, which encoding/json would fill.
func (d *fastDecoder) object(v reflect.Value, depth int) bool {
	if d.data[d.pos] != '{' {
		return false
	}
	d.pos++
	ft := d.types[v.Type()]
	var seen uint64
	for first := true; ; first = false {
		d.space()
		if first && d.expect('}') {
			return ft.required == 0
		}
		key, ok := d.str()
		if !ok || !d.expect(':') {
			return false
		}
		i, known := ft.fields[string(key)]
		switch {
		case known:
			if seen&(1<<i) != 0 {
				return false
			}
			seen |= 1 << i
			if !d.value(v.Field(i), depth+1) {
				return false
			}
		case ft.folds(key):
			return false
		default:
			if !d.skip(depth + 1) {
				return false
			}
		}
		if d.expect('}') {
			return seen&ft.required == ft.required
		}
		if !d.expect(',') {
			return false
		}
	}
}

// folds says whether encoding/json would fill a field with key, which
// no field has exactly: it matches keys without regard to case. A key
// not all ASCII is taken to match, as encoding/json folds some letters
// beyond ASCII (ſ is s, K is k).
func (ft *fastType) folds(key []byte) bool {
	lower := make([]byte, len(key))
	for i, c := range key {
		switch {
		case c >= utf8.RuneSelf:
			return true
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return ft.folded[string(lower)]
}

// array decodes a JSON array into the slice v: an empty array is an
// empty slice, not a nil one, as encoding/json makes it. A list of
// structs whose bytes have come twice before is the list they decoded
// to, shared (GPU.MigProfiles says so): a JSON array ends where its
// brackets balance, so the same bytes from here on are the same list.
func (d *fastDecoder) array(v reflect.Value, depth int) bool {
	if d.data[d.pos] != '[' {
		return false
	}
	memo := v.Type().Elem().Kind() == reflect.Struct
	if memo {
		for _, m := range d.memo[v.Type()] {
			if bytes.HasPrefix(d.data[d.pos:], m.raw) {
				v.Set(m.value)
				d.pos += len(m.raw)
				return true
			}
		}
	}
	start := d.pos
	d.pos++
	v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	if d.expect(']') {
		return true
	}
	for n := 0; ; n++ {
		if n == v.Cap() {
			grown := reflect.MakeSlice(v.Type(), n, max(4, 2*n))
			reflect.Copy(grown, v)
			v.Set(grown)
		}
		v.SetLen(n + 1)
		if !d.value(v.Index(n), depth+1) {
			return false
		}
		if d.expect(']') {
			break
		}
		if !d.expect(',') {
			return false
		}
	}
	if raw := d.data[start:d.pos]; memo && len(raw) >= minMemo && len(raw) < maxMemoBytes {
		d.remember(v, raw)
	}
	return true
}

// remember keeps the list v, decoded from raw, for the next time raw
// comes, once it has come twice: the first time, only a hash of it is
// kept, as a list seen once may be one that never comes again (a GPU's
// MIG devices), not worth a copy.
func (d *fastDecoder) remember(v reflect.Value, raw []byte) {
	h := maphash.Bytes(d.seed, raw)
	seen := d.seen[v.Type()]
	if seen == nil || len(seen) >= maxSeen {
		seen = map[uint64]bool{}
		d.seen[v.Type()] = seen
	}
	if !seen[h] {
		seen[h] = true
		return
	}
	lists := d.memo[v.Type()]
	if len(lists) == maxMemo {
		lists = lists[1:]
	}
	// The list itself, not v: v is a place in the node being decoded,
	// which holds another list once the node's GPUs are sorted.
	kept := reflect.New(v.Type()).Elem()
	kept.Set(v)
	d.memo[v.Type()] = append(lists, memoized{raw: bytes.Clone(raw), value: kept})
}

// skip passes over a value of a key no field has, checking its syntax as
// encoding/json would.
func (d *fastDecoder) skip(depth int) bool {
	d.space()
	if depth > maxFastDepth || d.pos >= len(d.data) {
		return false
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		d.pos++
		d.space()
		if d.expect('}') {
			return true
		}
		for {
			d.space()
			if _, ok := d.str(); !ok || !d.expect(':') || !d.skip(depth+1) {
				return false
			}
			if d.expect('}') {
				return true
			}
			if !d.expect(',') {
				return false
			}
		}
	case c == '[':
		d.pos++
		d.space()
		if d.expect(']') {
			return true
		}
		for {
			if !d.skip(depth + 1) {
				return false
			}
			if d.expect(']') {
				return true
			}
			if !d.expect(',') {
				return false
			}
		}
	case c == '"':
		_, ok := d.str()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return d.literal("true") || d.literal("false") || d.literal("null")
}

// str reads a string without escapes, of valid UTF-8 (encoding/json
// replaces what is not), and returns its bytes, which are data's.
func (d *fastDecoder) str() ([]byte, bool) {
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return nil, false
	}
	start := d.pos + 1
	ascii := true
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			s := d.data[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			d.pos = i + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// integer reads a JSON number that is an integer (no fraction or
// exponent): its sign and magnitude. Magnitudes near 2^64 are left to
// encoding/json, so that the sum below cannot overflow.
func (d *fastDecoder) integer() (neg bool, mag uint64, ok bool) {
	start := d.pos
	if !d.number() {
		return false, 0, false
	}
	digits := d.data[start:d.pos]
	if digits[0] == '-' {
		neg, digits = true, digits[1:]
	}
	for _, c := range digits {
		if c < '0' || c > '9' || mag > (math.MaxUint64-9)/10 {
			return false, 0, false
		}
		mag = mag*10 + uint64(c-'0')
	}
	return neg, mag, true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDecoder) number() bool {
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	start := d.pos
	if n := digits(); n == 0 || n > 1 && d.data[start] == '0' {
		return false
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return false
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// literal reads word (true, false, null) if it comes next.
func (d *fastDecoder) literal(word string) bool {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return false
	}
	d.pos += len(word)
	return true
}

// space passes over JSON's whitespace.
func (d *fastDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// expect reads c if it comes next, after whitespace.
func (d *fastDecoder) expect(c byte) bool {
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}
