package slurmconf

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Hostlist limits: Slurm's per range and per bracket, and ours on a whole
// expansion (docs/slurm-syntax.md has the syntax as hostlist.c reads it).
const (
	maxHostlistRange  = 64 * 1024 // Slurm MAX_RANGE
	maxHostlistPrefix = 64 * 1024 // Slurm MAX_PREFIX_CNT
	maxHostlistNames  = 1 << 20
	maxHostlistBytes  = 64 << 20
)

// numRange is the numbers lo..hi, each printed with at least width digits
// (zero-padded).
type numRange struct {
	lo, hi uint64
	width  int
}

// hostRange is a run of names prefix+number. A name without a numeric
// suffix is a single: prefix is the whole name and the numRange is unused.
type hostRange struct {
	prefix string
	numRange
	single bool
}

// ExpandHostlist expands a Slurm hostlist expression into names, in order and
// with duplicates, as Slurm does; it refuses what Slurm silently misreads
// (docs/slurm-syntax.md). The names share one backing string.
func ExpandHostlist(expr string) ([]string, error) {
	return expandHostlist(expr, maxHostlistNames, "")
}

// maxRunNames bounds all the hostlists of one run together (NameBudget):
// a few short lines of a million names each would cost minutes and
// gigabytes, and the largest clusters have tens of thousands of nodes.
const maxRunNames = 1 << 18

// NameBudget bounds the names all the hostlists of one run expand to, on
// top of each hostlist's own bound; a nil NameBudget bounds each alone.
// It may be shared by goroutines.
type NameBudget struct {
	left atomic.Int64
	err  atomic.Pointer[error] // the first refusal
}

// ErrNameBudget is what a refusal by a NameBudget wraps: the run's
// bound, not anything Slurm would say of the hostlist.
var ErrNameBudget = errors.New("too many names in all")

// overError is a hostlist refused for its number of names.
type overError struct{ error }

// budgetError is a hostlist refused by a NameBudget: it says what the
// hostlist's refusal says, and is ErrNameBudget.
type budgetError struct{ error }

func (budgetError) Is(target error) bool { return target == ErrNameBudget }

// Err is the budget's first refusal, or nil: a reader that goes on past
// a hostlist it could not expand (check's lines, which slurmd would skip)
// refuses the run with it instead.
func (b *NameBudget) Err() error {
	if b == nil {
		return nil
	}
	if p := b.err.Load(); p != nil {
		return *p
	}
	return nil
}

// NewNameBudget is the budget of one run.
func NewNameBudget() *NameBudget {
	b := &NameBudget{}
	b.left.Store(maxRunNames)
	return b
}

// Expand is ExpandHostlist, counting the names against the budget: a
// hostlist that would take the run past it is refused, before it is
// expanded.
func (b *NameBudget) Expand(expr string) ([]string, error) {
	if b == nil {
		return ExpandHostlist(expr)
	}
	over := "names past the " + strconv.Itoa(maxRunNames) + " that all of a run's hostlists may name"
	most := int(max(0, min(maxHostlistNames, b.left.Load())))
	names, err := expandHostlist(expr, most, over)
	// Readers that share the budget may have expanded meanwhile: only
	// what is left once these names are taken counts.
	if err == nil && b.left.Add(-int64(len(names))) < 0 {
		names, err = nil, overError{hostlistError(expr, "expands to "+over)}
	}
	if _, ok := err.(overError); ok && most < maxHostlistNames {
		err = budgetError{err}
		b.err.CompareAndSwap(nil, &err)
	}
	return names, err
}

// expandHostlist is ExpandHostlist within most names; over is what the
// refusal says of the bound, when it is not the hostlist's own.
func expandHostlist(expr string, most int, over string) ([]string, error) {
	if over == "" {
		over = "more than " + strconv.Itoa(maxHostlistNames) + " names"
	}
	var (
		items []hostItem
		names int
		size  int
	)
	for start, i, depth := 0, 0, 0; i <= len(expr); i++ {
		if i < len(expr) {
			switch c := expr[i]; {
			case c == '[':
				depth++
				continue
			case c == ']':
				depth--
				continue
			case depth > 0 || (c != ',' && c != ' ' && c != '\t'):
				continue
			}
		}
		if i > start {
			it, err := parseHostItem(expr[start:i])
			if err != nil {
				return nil, hostlistError(expr, err.Error())
			}
			if names += it.count; names > most {
				return nil, overError{hostlistError(expr, "expands to "+over)}
			}
			if size += it.size; size > maxHostlistBytes {
				return nil, hostlistError(expr, "expands to more than "+strconv.Itoa(maxHostlistBytes>>20)+" MiB of names")
			}
			items = append(items, it)
		}
		start = i + 1
	}

	var b strings.Builder
	b.Grow(size)
	ends := make([]int, 0, names)
	for i := range items {
		ends = items[i].expand(&b, ends)
	}
	if len(ends) == 0 {
		return nil, nil
	}
	all := b.String()
	out := make([]string, len(ends))
	from := 0
	for i, end := range ends {
		out[i] = all[from:end]
		from = end
	}
	return out, nil
}

// hostlistError is a refusal of expr, quoted short: a hostlist may be
// megabytes long, and an error is one line.
func hostlistError(expr, msg string) error {
	return errors.New("hostlist " + QuoteShort(expr) + ": " + msg)
}

// maxQuoted is how much of a value an error quotes.
const maxQuoted = 64

// QuoteShort quotes s for an error, cut to its first bytes where it is
// long, with how long it was.
func QuoteShort(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// hostItem is one comma-separated item: text[0] bracket[0] text[1] ...
// bracket[k-1] text[k], where text[k] is "" when k > 0.
type hostItem struct {
	text     []string
	brackets [][]numRange
	count    int // names it expands to
	size     int // upper bound on their bytes
}

func parseHostItem(s string) (hostItem, error) {
	var it hostItem
	if !strings.ContainsAny(s, "[]") {
		it.text, it.count, it.size = []string{s}, 1, len(s)
		return it, nil
	}
	literal := 0
	for rest := s; ; {
		open := strings.IndexAny(rest, "[]")
		if open < 0 {
			if len(it.brackets) > 0 && rest != "" {
				return it, errors.New("text " + strconv.Quote(rest) + " after the last ']' (Slurm 22.05 allows none)")
			}
			it.text = append(it.text, rest)
			literal += len(rest)
			break
		}
		if rest[open] == ']' {
			return it, errors.New("']' without '['")
		}
		end := strings.IndexAny(rest[open+1:], "[]")
		if end < 0 {
			return it, errors.New("'[' without ']'")
		}
		end += open + 1
		if rest[end] == '[' {
			return it, errors.New("nested '['")
		}
		ranges, err := parseRangeList(rest[open+1 : end])
		if err != nil {
			return it, err
		}
		it.text = append(it.text, rest[:open])
		literal += open
		it.brackets = append(it.brackets, ranges)
		rest = rest[end+1:]
	}

	it.count, it.size = 1, literal
	for i, ranges := range it.brackets {
		n, digits := 0, 0
		for _, r := range ranges {
			n += int(r.hi - r.lo + 1)
			digits = max(digits, r.width, numDigits(r.hi))
		}
		if i < len(it.brackets)-1 && n > maxHostlistPrefix {
			return it, errors.New("bracket " + strconv.Itoa(i+1) + " has more than " + strconv.Itoa(maxHostlistPrefix) + " values")
		}
		if n > maxHostlistNames/it.count {
			return it, errors.New("expands to more than " + strconv.Itoa(maxHostlistNames) + " names")
		}
		it.count *= n
		it.size += digits
	}
	if it.size > maxHostlistBytes/it.count {
		return it, errors.New("expands to more than " + strconv.Itoa(maxHostlistBytes>>20) + " MiB of names")
	}
	it.size *= it.count
	return it, nil
}

// parseRangeList parses the inside of a bracket: "lo[-hi],...".
func parseRangeList(s string) ([]numRange, error) {
	ranges := make([]numRange, 0, strings.Count(s, ",")+1)
	for _, item := range strings.Split(s, ",") {
		lo, hi, dash := strings.Cut(item, "-")
		a, errA := strconv.ParseUint(lo, 10, 64) // digits only: no sign, space or '_'
		b, errB := a, errA
		if dash {
			b, errB = strconv.ParseUint(hi, 10, 64)
		}
		switch {
		case item == "":
			return nil, errors.New("empty range in [" + s + "]")
		case errA != nil || errB != nil || a > b:
			return nil, errors.New("invalid range " + strconv.Quote(item))
		case b-a >= maxHostlistRange:
			return nil, errors.New("range " + strconv.Quote(item) + " has more than " + strconv.Itoa(maxHostlistRange) + " values")
		}
		ranges = append(ranges, numRange{lo: a, hi: b, width: len(lo)})
	}
	return ranges, nil
}

// expand writes the item's names to b, and appends each one's end offset
// in b to ends.
func (it *hostItem) expand(b *strings.Builder, ends []int) []int {
	k := len(it.brackets)
	type cursor struct {
		r int    // index into the bracket's ranges
		v uint64 // current value
	}
	cur := make([]cursor, k)
	for i, ranges := range it.brackets {
		cur[i] = cursor{0, ranges[0].lo}
	}
	// Slurm's loop order, slowest first: brackets k-2, k-3, ..., 0, then k-1.
	order := make([]int, 0, k)
	for i := k - 2; i >= 0; i-- {
		order = append(order, i)
	}
	if k > 0 {
		order = append(order, k-1)
	}
	var tmp [32]byte
	for {
		for i, text := range it.text {
			b.WriteString(text)
			if i < k {
				b.Write(appendPadded(tmp[:0], cur[i].v, it.brackets[i][cur[i].r].width))
			}
		}
		ends = append(ends, b.Len())

		l := k - 1
		for ; l >= 0; l-- {
			ranges, c := it.brackets[order[l]], &cur[order[l]]
			if c.v < ranges[c.r].hi {
				c.v++
				break
			}
			if c.r+1 < len(ranges) {
				c.r++
				c.v = ranges[c.r].lo
				break
			}
			*c = cursor{0, ranges[0].lo}
		}
		if l < 0 {
			return ends
		}
	}
}

// appendPadded appends n in decimal, zero-padded to width digits.
func appendPadded(buf []byte, n uint64, width int) []byte {
	for i := numDigits(n); i < width; i++ {
		buf = append(buf, '0')
	}
	return strconv.AppendUint(buf, n, 10)
}

// CompressHostlist returns names in Slurm's ranged form, exactly as
// `scontrol show hostlist` prints them joined by commas: not sorted, with
// duplicates kept, empty names skipped.
func CompressHostlist(names []string) string {
	ranges := make([]hostRange, 0, 16)
	for _, name := range names {
		if name == "" {
			continue
		}
		hr := parseHostname(name)
		if n := len(ranges); n > 0 && joins(&ranges[n-1], &hr) {
			ranges[n-1].hi = hr.hi
			continue
		}
		ranges = append(ranges, hr)
	}

	size := 0 // bound on the output: "prefix[" lo "-" hi "],"
	for _, r := range ranges {
		size += len(r.prefix) + 4 + 2*max(r.width, numDigits(r.hi))
	}
	var b strings.Builder
	b.Grow(size)
	var tmp [64]byte
	for i := 0; i < len(ranges); {
		if i > 0 {
			b.WriteByte(',')
		}
		first := ranges[i]
		b.WriteString(first.prefix)
		if first.single {
			i++
			continue
		}
		j := i + 1
		for j < len(ranges) && !ranges[j].single && ranges[j].prefix == first.prefix {
			j++
		}
		bracket := j-i > 1 || first.hi > first.lo
		if bracket {
			b.WriteByte('[')
		}
		for k := i; k < j; k++ {
			if k > i {
				b.WriteByte(',')
			}
			r := ranges[k]
			num := appendPadded(tmp[:0], r.lo, r.width)
			if r.hi > r.lo {
				num = append(num, '-')
				num = appendPadded(num, r.hi, r.width)
			}
			b.Write(num)
		}
		if bracket {
			b.WriteByte(']')
		}
		i = j
	}
	return b.String()
}

// parseHostname splits a name into prefix and numeric suffix, as Slurm does:
// the suffix is the trailing run of digits, its width their count. A name
// with no trailing digits, or with more than uint64 holds, is a single.
func parseHostname(name string) hostRange {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) {
		return hostRange{prefix: name, single: true}
	}
	n, err := strconv.ParseUint(name[i:], 10, 64)
	if err != nil {
		return hostRange{prefix: name, single: true}
	}
	return hostRange{prefix: name[:i], numRange: numRange{lo: n, hi: n, width: len(name) - i}}
}

// joins reports whether hr continues tail: same prefix, hr.lo == tail.hi+1,
// and compatible widths (Slurm's hostlist_push_range).
func joins(tail, hr *hostRange) bool {
	return !tail.single && !hr.single && hr.lo == tail.hi+1 && hr.lo != 0 &&
		tail.prefix == hr.prefix && widthsCompatible(tail.lo, tail.width, hr.lo, hr.width)
}

// widthsCompatible is Slurm's _width_equiv: n and m, wn and wm wide, may
// share a width if wn == wm or either pads alike under both. It skips
// Slurm's copy of one width over the other, a no-op for CompressHostlist.
func widthsCompatible(n uint64, wn int, m uint64, wm int) bool {
	return wn == wm || zeroPad(n, wn) == zeroPad(n, wm) || zeroPad(m, wm) == zeroPad(m, wn)
}

// zeroPad is how many zeros pad n to width digits.
func zeroPad(n uint64, width int) int {
	return max(width-numDigits(n), 0)
}

// numDigits is the length of n in decimal.
func numDigits(n uint64) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// OneHost reports whether a hostlist expression is one plain name, as most
// NodeName= values are: ExpandHostlist gives back just expr.
func OneHost(expr string) bool { return expr != "" && !strings.ContainsAny(expr, "[], \t") }

// SortHostnames orders names so that CompressHostlist makes the fewest
// ranges: by the text before the trailing number, then number, then width
// (n1 before n01); a name without a number precedes those of its prefix.
func SortHostnames(names []string) {
	type named struct {
		hostRange
		name string
	}
	keys := make([]named, len(names))
	for i, n := range names {
		keys[i] = named{parseHostname(n), n}
	}
	slices.SortFunc(keys, func(a, b named) int {
		switch {
		case a.prefix != b.prefix:
			return strings.Compare(a.prefix, b.prefix)
		case a.single != b.single:
			if a.single {
				return -1
			}
			return 1
		case a.lo != b.lo:
			return cmp.Compare(a.lo, b.lo)
		}
		return cmp.Compare(a.width, b.width)
	})
	for i := range keys {
		names[i] = keys[i].name
	}
}
