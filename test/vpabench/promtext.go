package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// promSample is one sample of a Prometheus text exposition.
type promSample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// parseProm reads the samples of the metrics whose names start with one of prefixes (every
// sample when none is given) from a text exposition. Comment lines are skipped; a sample
// line it cannot read is an error naming its line number.
func parseProm(body string, prefixes ...string) ([]promSample, error) {
	var out []promSample
	for i, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if len(prefixes) > 0 && !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(line, p) }) {
			continue
		}
		s, err := parsePromLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// parsePromLine reads `name{k="v",...} value [timestamp]`.
func parsePromLine(line string) (promSample, error) {
	s := promSample{Labels: map[string]string{}}
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	s.Name, line = line[:end], line[end:]
	if line[0] == '{' {
		rest, err := parseLabels(line[1:], s.Labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	f := strings.Fields(line)
	if len(f) < 1 || len(f) > 2 {
		return s, fmt.Errorf("want a value and an optional timestamp after %s, got %q", s.Name, line)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, fmt.Errorf("value of %s: %w", s.Name, err)
	}
	s.Value = v
	return s, nil
}

// parseLabels reads `k="v",...}` into m and returns what follows the closing brace.
func parseLabels(in string, m map[string]string) (string, error) {
	for {
		in = strings.TrimLeft(in, " ,")
		if strings.HasPrefix(in, "}") {
			return in[1:], nil
		}
		eq := strings.IndexByte(in, '=')
		if eq <= 0 || len(in) < eq+2 || in[eq+1] != '"' {
			return "", fmt.Errorf("bad label in %q", in)
		}
		key := strings.TrimSpace(in[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(in) && in[i] != '"'; i++ {
			c := in[i]
			if c == '\\' && i+1 < len(in) {
				i++
				switch in[i] {
				case 'n':
					c = '\n'
				default:
					c = in[i] // \\ and \"
				}
			}
			val.WriteByte(c)
		}
		if i >= len(in) {
			return "", fmt.Errorf("unterminated value of label %s", key)
		}
		m[key] = val.String()
		in = in[i+1:]
	}
}

// matches reports whether s is named name and carries every label of match.
func (s promSample) matches(name string, match map[string]string) bool {
	if s.Name != name {
		return false
	}
	for k, v := range match {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}

// promSum sums the samples named name whose labels include match; ok is false when none is.
func promSum(ss []promSample, name string, match map[string]string) (sum float64, ok bool) {
	for _, s := range ss {
		if s.matches(name, match) {
			sum += s.Value
			ok = true
		}
	}
	return sum, ok
}

// promQuantile estimates quantile q of the histogram name (its _bucket series matching
// match, summed over other labels) as the upper bound of the bucket holding it, the way a
// reader of the buckets can bound it. NaN when the histogram is empty.
func promQuantile(ss []promSample, name string, match map[string]string, q float64) float64 {
	counts := map[float64]float64{}
	for _, s := range ss {
		if !s.matches(name+"_bucket", match) {
			continue
		}
		le, err := strconv.ParseFloat(s.Labels["le"], 64)
		if err != nil {
			continue
		}
		counts[le] += s.Value
	}
	return bucketQuantile(counts, q)
}

// bucketQuantile is promQuantile over cumulative bucket counts by upper bound.
func bucketQuantile(counts map[float64]float64, q float64) float64 {
	bounds := make([]float64, 0, len(counts))
	for le := range counts {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 || counts[bounds[len(bounds)-1]] == 0 {
		return math.NaN()
	}
	want := q * counts[bounds[len(bounds)-1]]
	for _, le := range bounds {
		if counts[le] >= want {
			return le
		}
	}
	return bounds[len(bounds)-1]
}

// bucketDelta subtracts two cumulative bucket snapshots (a later minus an earlier one).
func bucketDelta(later, earlier []promSample, name string, match map[string]string) map[float64]float64 {
	out := map[float64]float64{}
	for sign, ss := range map[float64][]promSample{1: later, -1: earlier} {
		for _, s := range ss {
			if !s.matches(name+"_bucket", match) {
				continue
			}
			if le, err := strconv.ParseFloat(s.Labels["le"], 64); err == nil {
				out[le] += sign * s.Value
			}
		}
	}
	return out
}
