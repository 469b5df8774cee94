package cgroup

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// PSILine is one line of a pressure file: the share of wall time (percent, 0–100) in which
// tasks were stalled, averaged over 10 s, 60 s and 300 s, and the cumulative stall time.
type PSILine struct {
	Avg10     float64
	Avg60     float64
	Avg300    float64
	TotalUsec uint64
}

// PSI is a pressure-stall file (cpu.pressure, memory.pressure, io.pressure). "some" is
// always present; "full" is absent from cpu.pressure on kernels before 5.13.
type PSI struct {
	Some    PSILine
	Full    PSILine
	HasFull bool
}

// ParsePSI parses a pressure file. Lines that start with "some" or "full" must be complete
// and well-formed; other lines are ignored, so a kernel that adds a line does not break
// the parser (the scenario2 fixture's cpu.pressure even carries capture-log lines after the
// kernel's two). A file without a "some" line is an error.
func ParsePSI(data []byte) (PSI, error) {
	if p, ok := parsePSIFast(data); ok {
		return p, nil
	}
	return parsePSI(data)
}

// parsePSI is ParsePSI for any input; parsePSIFast handles what the kernel writes.
func parsePSI(data []byte) (PSI, error) {
	var p PSI
	var hasSome bool
	for n, line := range lines(data) {
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		kind := string(fields[0])
		if kind != "some" && kind != "full" {
			continue
		}
		l, err := parsePSILine(fields[1:])
		if err != nil {
			return PSI{}, fmt.Errorf("parsing pressure line %d (%s): %w", n, kind, err)
		}
		switch {
		case kind == "some" && !hasSome:
			p.Some, hasSome = l, true
		case kind == "full" && !p.HasFull:
			p.Full, p.HasFull = l, true
		default:
			return PSI{}, fmt.Errorf("%w: pressure line %d repeats %q", ErrMalformed, n, kind)
		}
	}
	if !hasSome {
		return PSI{}, fmt.Errorf("%w: pressure file has no \"some\" line", ErrMissingKey)
	}
	return p, nil
}

// parsePSILine parses "avg10=0.00 avg60=0.00 avg300=0.00 total=9728" in any order; every
// one of the four fields is required exactly once.
func parsePSILine(fields [][]byte) (PSILine, error) {
	var l PSILine
	avgs := map[string]*float64{"avg10": &l.Avg10, "avg60": &l.Avg60, "avg300": &l.Avg300}
	seen := make(map[string]bool, 4)
	for _, f := range fields {
		key, val, ok := bytes.Cut(f, []byte("="))
		if !ok {
			return PSILine{}, fmt.Errorf("%w: field %q is not key=value", ErrMalformed, truncate(string(f)))
		}
		k := string(key)
		if seen[k] {
			return PSILine{}, fmt.Errorf("%w: field %q repeated", ErrMalformed, truncate(k))
		}
		seen[k] = true
		if dst, isAvg := avgs[k]; isAvg {
			v, err := strconv.ParseFloat(string(val), 64)
			if err != nil || math.IsNaN(v) || v < 0 || v > 100 {
				return PSILine{}, fmt.Errorf("%w: %s=%q is not a percentage", ErrMalformed, k, truncate(string(val)))
			}
			*dst = v
			continue
		}
		if k == "total" {
			v, err := strconv.ParseUint(string(val), 10, 64)
			if err != nil {
				return PSILine{}, fmt.Errorf("%w: total=%q is not an unsigned integer", ErrMalformed, truncate(string(val)))
			}
			l.TotalUsec = v
		}
		// Unknown keys are ignored for forward compatibility.
	}
	for _, k := range []string{"avg10", "avg60", "avg300", "total"} {
		if !seen[k] {
			return PSILine{}, fmt.Errorf("%w: no %s", ErrMissingKey, k)
		}
	}
	return l, nil
}

// parsePSIFast parses a pressure file as the kernel writes it, without allocating. It
// returns what parsePSI would, or ok false for anything else (a non-ASCII byte, a field
// other than the four, a repeated field or line, a value parsePSI rejects, no "some" line),
// which parsePSI then accepts or rejects with its error.
func parsePSIFast(data []byte) (p PSI, ok bool) {
	var hasSome bool
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		kind, rest, ok := cutField(line)
		if !ok {
			return PSI{}, false
		}
		var dst *PSILine
		switch {
		case string(kind) == "some" && !hasSome:
			dst, hasSome = &p.Some, true
		case string(kind) == "full" && !p.HasFull:
			dst, p.HasFull = &p.Full, true
		case string(kind) == "some" || string(kind) == "full":
			return PSI{}, false // repeated
		default:
			continue // not a pressure line (parsePSI ignores it too)
		}
		if *dst, ok = parsePSILineFast(rest); !ok {
			return PSI{}, false
		}
	}
	return p, hasSome
}

// parsePSILineFast parses the fields after "some" or "full" when they are exactly avg10,
// avg60, avg300 and total, once each, in any order, with values parsePSILine accepts.
func parsePSILineFast(rest []byte) (l PSILine, ok bool) {
	var seen uint8
	for {
		var f []byte
		if f, rest, ok = cutField(rest); !ok {
			return PSILine{}, false
		}
		if len(f) == 0 {
			break
		}
		i := bytes.IndexByte(f, '=')
		if i < 0 {
			return PSILine{}, false
		}
		key, val := f[:i], f[i+1:]
		var bit uint8
		var dst *float64
		switch string(key) {
		case "avg10":
			bit, dst = 1, &l.Avg10
		case "avg60":
			bit, dst = 2, &l.Avg60
		case "avg300":
			bit, dst = 4, &l.Avg300
		case "total":
			bit = 8
		default:
			return PSILine{}, false
		}
		if seen&bit != 0 {
			return PSILine{}, false
		}
		seen |= bit
		if dst == nil {
			if l.TotalUsec, ok = parseDecimal(val); !ok {
				return PSILine{}, false
			}
			continue
		}
		v, err := strconv.ParseFloat(string(val), 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 100 {
			return PSILine{}, false
		}
		*dst = v
	}
	return l, seen == 15
}
