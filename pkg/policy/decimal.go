package policy

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// Decimal is an exact decimal number parsed from a policy string (headroom, maxCV,
// percentages). Arithmetic on it is exact: 1.2 is 6/5, not a binary approximation, so
// 240Mi × 1.2 is 288Mi to the byte. The zero Decimal is 0.
type Decimal struct {
	r     *big.Rat // nil means 0
	scale int      // digits after the point, for String
}

var errNotDecimal = errors.New("not a decimal")

// ParseDecimal parses an optionally signed decimal: digits with an optional fraction
// ("1", "1.25", ".5", "5."). Exponents, fractions ("6/5"), hex, underscores, spaces and
// unit suffixes are rejected.
func ParseDecimal(s string) (Decimal, error) {
	if len(s) > MaxDecimalLen {
		return Decimal{}, errNotDecimal
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return Decimal{}, errNotDecimal
	}
	intPart, frac, hasPoint := strings.Cut(body, ".")
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return Decimal{}, errNotDecimal
	}
	num, ok := new(big.Int).SetString(intPart+frac+"0", 10) // trailing 0 keeps "" and "." parseable
	if !ok {
		return Decimal{}, errNotDecimal
	}
	if s[0] == '-' {
		num.Neg(num)
	}
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac)+1)), nil)
	scale := 0
	if hasPoint {
		scale = max(len(frac), 1)
	}
	return Decimal{r: new(big.Rat).SetFrac(num, den), scale: scale}, nil
}

// MaxDecimalLen bounds the length of a decimal string: longer strings are rejected, so a
// policy cannot make every computation convert a huge number.
const MaxDecimalLen = 64

// ParsePercentage parses a percentage string: a decimal with an optional trailing "%"
// ("15%" ≡ "15"). The result is in percent (15, not 0.15).
func ParsePercentage(s string) (Decimal, error) {
	d, err := ParseDecimal(strings.TrimSuffix(s, "%"))
	if err != nil {
		return Decimal{}, errors.New("not a percentage")
	}
	return d, nil
}

// ParsePositiveDuration parses a Go duration that must be > 0.
func ParsePositiveDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %s is not > 0", d)
	}
	return d, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (d Decimal) rat() *big.Rat {
	if d.r == nil {
		return new(big.Rat)
	}
	return d.r
}

// Rat returns the exact value as a new big.Rat the caller may modify.
func (d Decimal) Rat() *big.Rat { return new(big.Rat).Set(d.rat()) }

// Sign returns -1, 0 or +1.
func (d Decimal) Sign() int { return d.rat().Sign() }

// Cmp compares d and o exactly: -1 if d < o, 0 if equal, +1 if d > o.
func (d Decimal) Cmp(o Decimal) int { return d.rat().Cmp(o.rat()) }

// CmpInt64 compares d with the integer n exactly.
func (d Decimal) CmpInt64(n int64) int { return d.rat().Cmp(new(big.Rat).SetInt64(n)) }

// Float64 returns the nearest float64, for comparisons with floating-point statistics.
func (d Decimal) Float64() float64 {
	f, _ := d.rat().Float64()
	return f
}

// MulTrunc returns trunc(x × d) toward zero, computed exactly. A result outside int64
// saturates to math.MaxInt64 or math.MinInt64.
func (d Decimal) MulTrunc(x int64) int64 {
	r := d.rat()
	n := new(big.Int).Mul(big.NewInt(x), r.Num())
	n.Quo(n, r.Denom()) // Quo truncates toward zero
	switch {
	case n.IsInt64():
		return n.Int64()
	case n.Sign() > 0:
		return math.MaxInt64
	default:
		return math.MinInt64
	}
}

// String renders the value with the number of fraction digits it was written with
// ("1.20" ⇒ "1.20", "15" ⇒ "15").
func (d Decimal) String() string { return d.rat().FloatString(d.scale) }
