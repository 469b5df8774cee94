package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Parse errors. Every parser wraps one of these, so callers can tell a file whose content
// is not what the kernel writes (ErrMalformed) from one that lacks a key the signal needs
// (ErrMissingKey, for example a truncated read or a kernel too old for the counter).
var (
	ErrMalformed  = errors.New("malformed cgroup file")
	ErrMissingKey = errors.New("cgroup file lacks a required key")
)

// Unlimited is the value ParseMemoryMax and ParseV1Limit return for "no limit".
const Unlimited = ^uint64(0)

// v1UnlimitedFloor: cgroup v1 reports "no limit" as PAGE_COUNTER_MAX × page size
// (9223372036854771712 with 4 KiB pages, a little less with larger pages). Any limit at or
// above 2^62 bytes (4 EiB) is treated as no limit.
const v1UnlimitedFloor = uint64(1) << 62

// ParseSingleValue parses a file holding one unsigned decimal integer and a newline:
// memory.current, memory.peak, memory.swap.current (bytes); cpuacct.usage (nanoseconds);
// memory.usage_in_bytes and memory.max_usage_in_bytes (bytes).
func ParseSingleValue(data []byte) (uint64, error) {
	if v, ok := parseDecimal(trimASCIISpace(data)); ok {
		return v, nil // what the kernel writes, read without allocating
	}
	return parseSingleValue(data)
}

// parseSingleValue is ParseSingleValue for any input.
func parseSingleValue(data []byte) (uint64, error) {
	s := string(bytes.TrimSpace(data))
	if s == "" {
		return 0, fmt.Errorf("%w: empty single-value file", ErrMalformed)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: single value %q is not an unsigned integer", ErrMalformed, truncate(s))
	}
	return v, nil
}

// ParseMemoryMax parses cgroup v2 memory.max (also memory.high, memory.swap.max): bytes,
// or "max" for no limit, which is returned as Unlimited.
func ParseMemoryMax(data []byte) (uint64, error) {
	if string(bytes.TrimSpace(data)) == "max" {
		return Unlimited, nil
	}
	v, err := ParseSingleValue(data)
	if err != nil {
		return 0, fmt.Errorf("parsing memory.max: %w", err)
	}
	return v, nil
}

// ParseV1Limit parses cgroup v1 memory.limit_in_bytes. Values of 4 EiB and more (the
// kernel's "no limit", rounded down to a page) are returned as Unlimited.
func ParseV1Limit(data []byte) (uint64, error) {
	v, err := ParseSingleValue(data)
	if err != nil {
		return 0, fmt.Errorf("parsing memory.limit_in_bytes: %w", err)
	}
	if v >= v1UnlimitedFloor {
		return Unlimited, nil
	}
	return v, nil
}

// ParseFlatKeyed parses a flat-keyed file ("key value" per line) such as cpu.stat,
// memory.stat, memory.events or memory.oom_control. Keys may come in any order and new
// kernels add keys, so every key is returned. Blank lines are ignored; a line that is not
// exactly a key and an unsigned integer, or a repeated key, is malformed.
func ParseFlatKeyed(data []byte) (map[string]uint64, error) {
	out := make(map[string]uint64)
	for n, line := range lines(data) {
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: line %d %q is not \"key value\"", ErrMalformed, n, truncate(string(line)))
		}
		key := string(fields[0])
		v, err := strconv.ParseUint(string(fields[1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: value of %q is not an unsigned integer", ErrMalformed, n, truncate(key))
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%w: line %d: key %q repeated", ErrMalformed, n, truncate(key))
		}
		out[key] = v
	}
	return out, nil
}

// scanFlatKeyed reads the listed keys of a flat-keyed file without allocating: vals[i] gets
// the value of keys[i] and bit i of found is set when it is present (at most 64 keys). It
// accepts exactly the files ParseFlatKeyed accepts, with the same values and errors: what
// its scan is not sure of (a non-ASCII byte, a malformed line, two keys with the same hash,
// a very long file) it leaves to ParseFlatKeyed.
func scanFlatKeyed(data []byte, keys []string, vals []uint64) (found uint64, err error) {
	// Key hashes seen so far, open addressing; 0 marks a free slot.
	var seen [flatKeyedSlots]uint64
	n := 0
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		// One pass over "key value": the key's FNV-1a hash, then the value's digits.
		i := skipASCIISpace(line, 0)
		if i == len(line) {
			continue // blank line
		}
		start, h := i, uint64(fnvOffset)
		for ; i < len(line) && !isASCIISpace(line[i]); i++ {
			if line[i] >= 0x80 {
				return flatKeyedSlow(data, keys, vals)
			}
			h = (h ^ uint64(line[i])) * fnvPrime
		}
		key := line[start:i]
		if i = skipASCIISpace(line, i); i == len(line) {
			return flatKeyedSlow(data, keys, vals) // no value
		}
		var v uint64
		for ; i < len(line) && !isASCIISpace(line[i]); i++ {
			d := uint64(line[i] - '0')
			if d > 9 || v > (math.MaxUint64-d)/10 {
				return flatKeyedSlow(data, keys, vals) // not an unsigned integer
			}
			v = v*10 + d
		}
		if skipASCIISpace(line, i) != len(line) || n == flatKeyedSlots/2 {
			return flatKeyedSlow(data, keys, vals) // a third field, or many keys
		}
		h |= 1
		for j := h; ; j++ {
			slot := &seen[j%flatKeyedSlots]
			if *slot == h {
				return flatKeyedSlow(data, keys, vals) // repeated key, or a hash collision
			}
			if *slot == 0 {
				*slot = h
				break
			}
		}
		n++
		for j, k := range keys {
			if string(key) == k {
				vals[j], found = v, found|1<<j
			}
		}
	}
	return found, nil
}

// flatKeyedSlots bounds the keys scanFlatKeyed tracks itself (memory.stat has about 60).
const flatKeyedSlots = 256

// flatKeyedSlow is scanFlatKeyed through ParseFlatKeyed.
func flatKeyedSlow(data []byte, keys []string, vals []uint64) (uint64, error) {
	kv, err := ParseFlatKeyed(data)
	if err != nil {
		return 0, err
	}
	var found uint64
	for i, k := range keys {
		if v, ok := kv[k]; ok {
			vals[i], found = v, found|1<<i
		}
	}
	return found, nil
}

// missingKey is the error for a required key that file lacks.
func missingKey(file, key string) error {
	return fmt.Errorf("%w: %s has no %q", ErrMissingKey, file, key)
}

// cutField returns the first field of b and what follows it, splitting at ASCII white space
// as bytes.Fields does; field is empty when b holds none. ok is false when a non-ASCII byte
// comes first (bytes.Fields would also split at Unicode spaces): the caller falls back to
// its general parser.
func cutField(b []byte) (field, rest []byte, ok bool) {
	i := skipASCIISpace(b, 0)
	j := i
	for j < len(b) && !isASCIISpace(b[j]) {
		if b[j] >= 0x80 {
			return nil, nil, false
		}
		j++
	}
	return b[i:j], b[j:], true
}

func isASCIISpace(c byte) bool {
	const spaces = 1<<'\t' | 1<<'\n' | 1<<'\v' | 1<<'\f' | 1<<'\r' | 1<<' '
	return c <= ' ' && spaces>>c&1 != 0
}

// skipASCIISpace returns the index of the first byte of b at or after i that is not ASCII
// white space, or len(b).
func skipASCIISpace(b []byte, i int) int {
	for i < len(b) && isASCIISpace(b[i]) {
		i++
	}
	return i
}

// trimASCIISpace trims ASCII white space from both ends of b.
func trimASCIISpace(b []byte) []byte {
	for len(b) > 0 && isASCIISpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isASCIISpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// parseDecimal parses b when it is nothing but decimal digits and fits in a uint64 (what
// strconv.ParseUint(b, 10, 64) accepts), without allocating.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// The 64-bit FNV-1a hash.
const fnvOffset, fnvPrime = 14695981039346656037, 1099511628211

// lines yields each line of data (without its newline) and its 1-based number.
func lines(data []byte) func(yield func(int, []byte) bool) {
	return func(yield func(int, []byte) bool) {
		n := 0
		for len(data) > 0 {
			n++
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if !yield(n, line) {
				return
			}
		}
	}
}

// required copies the listed keys of kv into the destinations, failing on the first one
// that is absent.
func required(file string, kv map[string]uint64, dst map[string]*uint64) error {
	for key, p := range dst {
		v, ok := kv[key]
		if !ok {
			return missingKey(file, key)
		}
		*p = v
	}
	return nil
}

// optional copies the listed keys of kv that are present.
func optional(kv map[string]uint64, dst map[string]*uint64) {
	for key, p := range dst {
		if v, ok := kv[key]; ok {
			*p = v
		}
	}
}

// truncate shortens s for an error message, so garbage input cannot blow up a log line.
func truncate(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
