package recommend

import (
	"errors"
	"math/big"

	"github.com/ballastk8s/ballast/pkg/policy"
)

// MaxDecimalLen bounds the length of a decimal string (the policy package's limit: a
// policy that validates always computes).
const MaxDecimalLen = policy.MaxDecimalLen

// ParseDecimal parses a plain decimal string exactly with the policy package's grammar: an
// optional sign, digits, and an optional fraction ("1.25", "-0.5", "2", ".5", "3.").
// Exponents, fractions written a/b, base prefixes, underscores and spaces are rejected. The
// result is exact, so 1.2 is 6/5 and never the nearest float64.
func ParseDecimal(s string) (*big.Rat, error) {
	d, err := policy.ParseDecimal(s)
	if err != nil {
		return nil, err
	}
	return d.Rat(), nil
}

// ParseHeadroom parses metrics[].headroom: blank means 1.0 (the compute-time default),
// anything else must be a decimal > 0.
func ParseHeadroom(s string) (*big.Rat, error) {
	if s == "" {
		return big.NewRat(1, 1), nil
	}
	r, err := ParseDecimal(s)
	if err != nil || r.Sign() <= 0 {
		return nil, errors.New("must be a decimal > 0")
	}
	return r, nil
}
