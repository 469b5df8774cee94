package policy

import (
	"fmt"
	"strconv"
	"strings"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// ReasonInvalidConcurrency: behaviors.resize.maxConcurrentResizes does not parse.
const ReasonInvalidConcurrency = "InvalidConcurrency"

// maxConcurrencyValue bounds a whole-number cap; larger values are surely typos.
const maxConcurrencyValue = 1_000_000

// IntOrPercent is a cap written as a whole number ("2") or a percentage of a count
// ("10%"). The zero value is "no value".
type IntOrPercent struct {
	// Value is the number, or the percentage in whole percent when Percent.
	Value int32
	// Percent is true for a percentage.
	Percent bool
}

// ParseIntOrPercent parses a cap: a whole number ≥ 1 or a whole percentage in [1%, 100%].
func ParseIntOrPercent(s string) (IntOrPercent, error) {
	v, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	if v == "" {
		return IntOrPercent{}, fmt.Errorf("empty value")
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return IntOrPercent{}, fmt.Errorf("not a whole number or a whole percentage")
		}
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 || n > maxConcurrencyValue {
		return IntOrPercent{}, fmt.Errorf("must be between 1 and %d", maxConcurrencyValue)
	}
	if pct && n > 100 {
		return IntOrPercent{}, fmt.Errorf("a percentage must be ≤ 100%%")
	}
	return IntOrPercent{Value: int32(n), Percent: pct}, nil
}

// Of is the cap over total items: a percentage of total rounded down, never below 1;
// a whole number as written.
func (c IntOrPercent) Of(total int) int {
	if !c.Percent {
		return int(c.Value)
	}
	n := total * int(c.Value) / 100
	return max(n, 1)
}

// String renders the cap as written ("10%", "2").
func (c IntOrPercent) String() string {
	if c.Percent {
		return strconv.Itoa(int(c.Value)) + "%"
	}
	return strconv.Itoa(int(c.Value))
}

// parseConcurrency parses behaviors.resize.maxConcurrentResizes into r, with the default
// perWorkload of 10% when blank.
func parseConcurrency(m *ballastv1.MaxConcurrentResizes, r *Resize) *ValidationError {
	pw := ballastv1.DefaultMaxConcurrentPerWorkload
	if m != nil && m.PerWorkload != "" {
		pw = m.PerWorkload
	}
	c, err := ParseIntOrPercent(pw)
	if err != nil {
		return invalid(ReasonInvalidConcurrency, "behaviors.resize.maxConcurrentResizes.perWorkload %q: %v (a whole number such as 2 or a percentage such as 10%%)", pw, err)
	}
	r.PerWorkload = c
	if m != nil && m.PerNode != nil {
		if *m.PerNode < 1 {
			return invalid(ReasonInvalidConcurrency, "behaviors.resize.maxConcurrentResizes.perNode %d: must be ≥ 1 (leave it unset for no cap)", *m.PerNode)
		}
		r.PerNode = *m.PerNode
	}
	return nil
}
