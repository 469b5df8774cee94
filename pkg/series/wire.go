package series

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Wire format of a window or rollup hash. Bucket counters are fields named by the decimal
// bucket index (Valkey stores such fields as compact integers); the other fields are:
const (
	FieldCount      = "n"  // number of samples (HINCRBY)
	FieldSum        = "s"  // Σx (HINCRBYFLOAT)
	FieldSumSquares = "q"  // Σx² (HINCRBYFLOAT)
	FieldMin        = "lo" // smallest sample (kept if smaller)
	FieldMax        = "hi" // largest sample (kept if larger)
	FieldFirst      = "t0" // oldest sample time, unix seconds (kept if smaller)
	FieldLast       = "t1" // newest sample time, unix seconds (kept if larger)

	// Optional: present only when some samples came through the fallback source
	// (metrics.k8s.io, for pods on nodes without a live node agent).
	FieldFallbackCount      = "fb" // how many of the samples are fallback samples (HINCRBY)
	FieldFallbackResolution = "fr" // coarsest resolution of those samples, seconds (kept if larger)
)

// Op is how a field update combines with the stored value. Every op is commutative and
// associative, so writers never read before they write and the order of updates from many
// nodes does not matter.
type Op byte

// Ops.
const (
	OpAdd      Op = 'a' // integer add (HINCRBY)
	OpAddFloat Op = 'f' // float add (HINCRBYFLOAT)
	OpMin      Op = '<' // keep the smaller number
	OpMax      Op = '>' // keep the larger number
)

// statOps is the table StatOps returns; Decode reads it on every window, so it is built once.
var statOps = map[string]Op{
	FieldCount: OpAdd, FieldSum: OpAddFloat, FieldSumSquares: OpAddFloat,
	FieldMin: OpMin, FieldMax: OpMax, FieldFirst: OpMin, FieldLast: OpMax,
	FieldFallbackCount: OpAdd, FieldFallbackResolution: OpMax,
}

// StatOps maps every non-bucket field to its op. Fields not listed are bucket counters,
// combined with OpAdd. The store builds its server-side merge from this table. The map is a
// copy the caller may keep.
func StatOps() map[string]Op {
	return maps.Clone(statOps)
}

// WindowUpdate is one locally aggregated window of one series, ready to be added to the
// store.
type WindowUpdate struct {
	Series SeriesID
	// Start is the window start, WindowStart(t, layout.Window) of its samples.
	Start time.Time
	Hist  *Histogram
	// Node, when set, is the writing node: the window also gets its tally (NodeFields).
	Node string
}

// Validate checks that u can be written under l.
func (u WindowUpdate) Validate(l Layout) error {
	if err := u.Series.Validate(); err != nil {
		return err
	}
	if !WindowStart(u.Start, l.Window).Equal(u.Start) {
		return fmt.Errorf("window of %s at %s: start is not aligned to %v", u.Series, u.Start.UTC().Format(time.RFC3339), l.Window)
	}
	if u.Hist == nil || u.Hist.N == 0 {
		return fmt.Errorf("window of %s at %s: no samples", u.Series, u.Start.UTC().Format(time.RFC3339))
	}
	if u.Node != "" {
		if err := CheckNodeName(u.Node); err != nil {
			return fmt.Errorf("window of %s at %s: %w", u.Series, u.Start.UTC().Format(time.RFC3339), err)
		}
	}
	if end := u.Start.Add(l.Window).Unix(); u.Hist.FirstUnix < u.Start.Unix() || u.Hist.LastUnix >= end {
		return fmt.Errorf("window of %s at %s: samples from %d to %d lie outside it", u.Series, u.Start.UTC().Format(time.RFC3339), u.Hist.FirstUnix, u.Hist.LastUnix)
	}
	return nil
}

// WireFields encodes h as field/value pairs, each to be combined with the stored hash by
// the field's op (StatOps, buckets OpAdd). An empty histogram encodes to nothing. The order
// is fixed: the stat fields, then buckets by index.
func (h *Histogram) WireFields() []string {
	if h.N == 0 {
		return nil
	}
	out := make([]string, 0, 14+2*len(h.Buckets))
	out = append(out,
		FieldCount, strconv.FormatInt(h.N, 10),
		FieldSum, formatNumber(h.Total),
		FieldSumSquares, formatNumber(h.TotalSquares),
		FieldMin, formatNumber(h.Lo),
		FieldMax, formatNumber(h.Hi),
		FieldFirst, strconv.FormatInt(h.FirstUnix, 10),
		FieldLast, strconv.FormatInt(h.LastUnix, 10),
	)
	if h.FallbackN > 0 {
		out = append(out, FieldFallbackCount, strconv.FormatInt(h.FallbackN, 10),
			FieldFallbackResolution, strconv.FormatInt(h.FallbackResolutionSec, 10))
	}
	for _, i := range sortedBuckets(h.Buckets) {
		out = append(out, strconv.FormatInt(int64(i), 10), strconv.FormatInt(h.Buckets[i], 10))
	}
	return out
}

// formatNumber renders v exactly (shortest round-trip form) and compactly: plain decimals
// for ordinary magnitudes, so whole numbers are stored by Valkey as integers, and exponent
// form only for the very small or very large.
func formatNumber(v float64) string {
	if a := math.Abs(v); a == 0 || (a >= 1e-4 && a < 1e21) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func sortedBuckets(b map[int32]int64) []int32 {
	idx := make([]int32, 0, len(b))
	for i := range b {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	return idx
}

// Decode parses a window or rollup hash (as returned by HGETALL) into a histogram. An empty
// hash is an empty histogram. Node tallies (DecodeNodes) are skipped. Unknown fields,
// unparsable or out-of-range numbers, missing stat fields and inconsistent values (count ≠
// Σ buckets, min above max, extremes outside the outermost buckets) are errors.
func Decode(fields map[string]string) (*Histogram, error) {
	h := &Histogram{}
	if len(fields) == 0 {
		return h, nil
	}
	ops := statOps
	h.Buckets = make(map[int32]int64, len(fields))
	var total int64
	lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
	for f, v := range fields {
		if _, ok := ops[f]; ok || isNodeField(f) {
			continue
		}
		i, err := strconv.ParseInt(f, 10, 32)
		if err != nil || !validBucket(int32(i)) || !canonicalInt(f) {
			return nil, fmt.Errorf("decoding histogram: unknown field %q", f)
		}
		lo, hi = min(lo, int32(i)), max(hi, int32(i))
		c, err := strconv.ParseInt(v, 10, 64)
		if err != nil || c < 1 {
			return nil, fmt.Errorf("decoding histogram: bucket %s count %q is not a positive integer", f, v)
		}
		if total > math.MaxInt64-c {
			return nil, fmt.Errorf("decoding histogram: bucket counts overflow int64")
		}
		total += c
		h.Buckets[int32(i)] = c
	}
	var err error
	field := func(name string) string {
		s, ok := fields[name]
		if !ok && err == nil {
			err = fmt.Errorf("decoding histogram: missing field %q", name)
		}
		return s
	}
	h.N = parseInt(field(FieldCount), FieldCount, &err)
	h.Total = parseNumber(field(FieldSum), FieldSum, &err)
	h.TotalSquares = parseNumber(field(FieldSumSquares), FieldSumSquares, &err)
	h.Lo = parseNumber(field(FieldMin), FieldMin, &err)
	h.Hi = parseNumber(field(FieldMax), FieldMax, &err)
	h.FirstUnix = parseInt(field(FieldFirst), FieldFirst, &err)
	h.LastUnix = parseInt(field(FieldLast), FieldLast, &err)
	if v, ok := fields[FieldFallbackCount]; ok {
		h.FallbackN = parseInt(v, FieldFallbackCount, &err)
		h.FallbackResolutionSec = parseInt(fields[FieldFallbackResolution], FieldFallbackResolution, &err)
	}
	if err != nil {
		return nil, err
	}
	if _, ok := fields[FieldFallbackCount]; ok && (h.FallbackN < 1 || h.FallbackN > h.N || h.FallbackResolutionSec < 1) {
		return nil, fmt.Errorf("decoding histogram: %d fallback samples (resolution %ds) of %d", h.FallbackN, h.FallbackResolutionSec, h.N)
	}
	if h.N != total || h.N == 0 {
		return nil, fmt.Errorf("decoding histogram: count %d does not match the %d samples in its buckets", h.N, total)
	}
	if h.Lo > h.Hi || h.FirstUnix > h.LastUnix {
		return nil, fmt.Errorf("decoding histogram: min %v > max %v or first %d > last %d", h.Lo, h.Hi, h.FirstUnix, h.LastUnix)
	}
	if BucketIndex(h.Lo) != lo || BucketIndex(h.Hi) != hi {
		return nil, fmt.Errorf("decoding histogram: min %v or max %v lies outside the buckets %d..%d", h.Lo, h.Hi, lo, hi)
	}
	return h, nil
}

// canonicalInt reports whether s, which strconv.ParseInt accepted, is in the form
// strconv.FormatInt writes: no sign but a leading '-', no leading zeros, no "-0".
func canonicalInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	return d != "" && d[0] != '+' && (d[0] != '0' || s == "0")
}

func parseInt(s, name string, err *error) int64 {
	if *err != nil {
		return 0
	}
	v, e := strconv.ParseInt(s, 10, 64)
	if e != nil {
		*err = fmt.Errorf("decoding histogram: field %q = %q is not an integer", name, s)
	}
	return v
}

func parseNumber(s, name string, err *error) float64 {
	if *err != nil {
		return 0
	}
	v, e := strconv.ParseFloat(s, 64)
	if e != nil || CheckValue(v) != nil {
		*err = fmt.Errorf("decoding histogram: field %q = %q is not a finite number ≥ 0", name, s)
	}
	return v
}
