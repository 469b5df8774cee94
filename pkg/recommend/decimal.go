package recommend

import (
	"errors"
	"math/big"
	"strings"
)

// MaxDecimalLen bounds the length of a decimal string; longer strings are rejected so a
// policy cannot make every computation convert a huge number.
const MaxDecimalLen = 64

var (
	errEmptyDecimal = errors.New("empty decimal")
	errLongDecimal  = errors.New("decimal too long")
	errBadDecimal   = errors.New("not a decimal")
)

// ParseDecimal parses a plain decimal string exactly: an optional sign, digits, and an
// optional fraction ("1.25", "-0.5", "2", ".5", "3."). Exponents, fractions written a/b,
// base prefixes, underscores and spaces are rejected. The result is exact, so 1.2 is 6/5
// and never the nearest float64.
func ParseDecimal(s string) (*big.Rat, error) {
	if s == "" {
		return nil, errEmptyDecimal
	}
	if len(s) > MaxDecimalLen {
		return nil, errLongDecimal
	}
	body, neg := s, false
	switch body[0] {
	case '-':
		neg = true
		body = body[1:]
	case '+':
		body = body[1:]
	}
	intPart, fracPart, _ := strings.Cut(body, ".")
	if intPart == "" && fracPart == "" || !allDigits(intPart) || !allDigits(fracPart) {
		return nil, errBadDecimal
	}
	num, ok := new(big.Int).SetString("0"+intPart+fracPart, 10)
	if !ok {
		return nil, errBadDecimal
	}
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(fracPart))), nil)
	r := new(big.Rat).SetFrac(num, den)
	if neg {
		r.Neg(r)
	}
	return r, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
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
