package cgroup

import (
	"bytes"
	"errors"
	"fmt"
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
			return fmt.Errorf("%w: %s has no %q", ErrMissingKey, file, key)
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
