package memfloor

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

var errEmpty = errors.New("empty value")

// ParseJVMSize parses a HotSpot memory size as -Xmx and -XX:MaxHeapSize take it: decimal
// digits with an optional k/K, m/M, g/G or t/T suffix (powers of 1024); no suffix means
// bytes. Signs, fractions and spaces are errors.
func ParseJVMSize(s string) (int64, error) {
	if s == "" {
		return 0, errEmpty
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'k', 'K':
		mult = 1 << 10
	case 'm', 'M':
		mult = 1 << 20
	case 'g', 'G':
		mult = 1 << 30
	case 't', 'T':
		mult = 1 << 40
	}
	digits := s
	if mult > 1 {
		digits = s[:len(s)-1]
	}
	n, err := parseDigits(digits)
	if err != nil {
		return 0, fmt.Errorf("jvm size %q: %w", s, err)
	}
	if n > maxBytes/mult {
		return 0, fmt.Errorf("jvm size %q: above 1Pi", s)
	}
	return n * mult, nil
}

// ParseGOMEMLIMIT parses GOMEMLIMIT the way the Go runtime does: a non-negative integer
// with an optional B, KiB, MiB, GiB or TiB suffix, or "off" (ok false: no limit).
func ParseGOMEMLIMIT(s string) (bytes int64, ok bool, err error) {
	if s == "off" {
		return 0, false, nil
	}
	if s == "" {
		return 0, false, errEmpty
	}
	mult := int64(1)
	digits := s
	for _, u := range [...]struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			mult, digits = u.mult, strings.TrimSuffix(s, u.suffix)
			break
		}
	}
	n, err := parseDigits(digits)
	if err != nil {
		return 0, false, fmt.Errorf("GOMEMLIMIT %q: %w", s, err)
	}
	if n > maxBytes/mult {
		return 0, false, fmt.Errorf("GOMEMLIMIT %q: above 1Pi", s)
	}
	return n * mult, true, nil
}

// ParseOldSpace parses the value of node's --max-old-space-size: whole MiB (V8 also
// takes a fraction, which is rounded up here).
func ParseOldSpace(s string) (int64, error) {
	if s == "" {
		return 0, errEmpty
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	n, err := parseDigits(whole)
	if err != nil {
		return 0, fmt.Errorf("--max-old-space-size %q: %w", s, err)
	}
	if hasFrac {
		if frac != "" {
			if _, err := parseDigits(frac); err != nil {
				return 0, fmt.Errorf("--max-old-space-size %q: %w", s, err)
			}
		}
		if strings.Trim(frac, "0") != "" {
			n++
		}
	}
	if n > maxBytes/mi {
		return 0, fmt.Errorf("--max-old-space-size %q: above 1Pi", s)
	}
	return n * mi, nil
}

// ParsePercent parses -XX:MaxRAMPercentage's value: a decimal in (0, 100].
func ParsePercent(s string) (*big.Rat, error) {
	if s == "" || strings.ContainsAny(s, "eE/+- ") {
		return nil, fmt.Errorf("MaxRAMPercentage %q: not a plain decimal", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() <= 0 || r.Cmp(big.NewRat(100, 1)) > 0 {
		return nil, fmt.Errorf("MaxRAMPercentage %q: must be a decimal in (0, 100]", s)
	}
	return r, nil
}

func parseDigits(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("no digits")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("unexpected %q", s[i])
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("out of range")
	}
	return n, nil
}
