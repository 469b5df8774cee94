package policy

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// ReasonInvalidBoost: behaviors.startupBoost.cpu is neither a multiplier 1 < x ≤
// MaxBoostFactor ("2x") nor a cpu quantity > 0, or readyFor is not a duration > 0.
const ReasonInvalidBoost = "InvalidBoost"

// MaxBoostFactor is the largest startup boost multiplier: like MaxHeadroom, a larger one
// is a typo or an attack on the cluster's capacity.
const MaxBoostFactor = 10

// Boost is a parsed behaviors.startupBoost. Exactly one of Factor (a multiplier > 1) and
// MilliCPU (an absolute request, in millicores) is set.
type Boost struct {
	// Factor multiplies each container's cpu request, and its limit when set.
	Factor Decimal
	// MilliCPU is the absolute cpu request the boost raises each container to.
	MilliCPU int64
	// ReadyFor is how long the pod must have been Ready before the boost is taken back.
	ReadyFor time.Duration
}

// String renders the boost the way a policy writes it: "2x" or "1500m".
func (b Boost) String() string {
	if b.Factor.Sign() > 0 {
		return b.Factor.String() + "x"
	}
	return resource.NewMilliQuantity(b.MilliCPU, resource.DecimalSI).String()
}

// ParseBoostCPU parses behaviors.startupBoost.cpu: a multiplier "2x" or "1.5x" (the "x"
// is required, 1 < x ≤ MaxBoostFactor) or a cpu quantity > 0 such as "2" or "1500m".
func ParseBoostCPU(s string) (factor Decimal, milliCPU int64, ok bool) {
	if body, isFactor := strings.CutSuffix(s, "x"); isFactor {
		d, err := ParseDecimal(body)
		if err != nil || d.CmpInt64(1) <= 0 || d.CmpInt64(MaxBoostFactor) > 0 {
			return Decimal{}, 0, false
		}
		return d, 0, true
	}
	if len(s) > MaxDecimalLen {
		return Decimal{}, 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return Decimal{}, 0, false
	}
	// A cpu beyond any node (a million cores) is a typo; it also keeps MilliValue exact.
	if q.Cmp(resource.MustParse("1M")) > 0 {
		return Decimal{}, 0, false
	}
	return Decimal{}, q.MilliValue(), true
}

// parseBoost validates and parses behaviors.startupBoost; nil when absent.
func parseBoost(b *ballastv1.StartupBoost) (*Boost, *ValidationError) {
	if b == nil {
		return nil, nil
	}
	f, m, ok := ParseBoostCPU(b.CPU)
	if !ok {
		return nil, invalid(ReasonInvalidBoost,
			"behaviors.startupBoost.cpu %q: must be a multiplier such as 2x (greater than 1, at most %dx) or a cpu quantity > 0 such as 1500m",
			b.CPU, MaxBoostFactor)
	}
	out := &Boost{Factor: f, MilliCPU: m}
	readyFor := b.ReadyFor
	if readyFor == "" {
		readyFor = ballastv1.DefaultStartupBoostReadyFor
	}
	d, err := ParsePositiveDuration(readyFor)
	if err != nil {
		return nil, invalid(ReasonInvalidBoost, "behaviors.startupBoost.readyFor %q: must be a Go duration > 0 such as 60s", b.ReadyFor)
	}
	out.ReadyFor = d
	return out, nil
}
