package sizing

import (
	"math/big"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Compute-time fallbacks of the resize settings (SPEC §2.3, §8.3).
const (
	// DefaultThresholdPercent ends the threshold chain.
	DefaultThresholdPercent = 10.0
	// DefaultMaxChangePercent caps a step when maxChangePerCycle is blank or unusable.
	DefaultMaxChangePercent = 50.0
)

// ResizeSettings are the policy inputs of the resize calculator.
type ResizeSettings struct {
	// Managed is the set of (resource, field) the policy's metrics manage.
	Managed Managed
	// Threshold returns the drift threshold of (res, field) in percent; nil, NaN or a
	// negative value means DefaultThresholdPercent.
	Threshold func(res corev1.ResourceName, f Field) float64
	// MaxChangePerCycle caps one cycle's step, in percent of the gap; ≤ 0 or NaN means
	// DefaultMaxChangePercent.
	MaxChangePerCycle float64
}

// NewResizeSettings derives the resize settings of a policy spec: the managed set from
// metrics, the threshold per (resource, field) as the first usable value of
// thresholds.resize.resourceThresholds[res].request|limit → thresholds.resize.default →
// thresholds.default → 10%, and maxChangePerCycle (50% when blank or unusable).
func NewResizeSettings(spec v1.ResourcePolicySpec) ResizeSettings {
	th := spec.Behaviors.Thresholds
	s := ResizeSettings{
		Managed: ManagedFromMetrics(spec.Metrics),
		Threshold: func(res corev1.ResourceName, f Field) float64 {
			per := th.Resize.ResourceThresholds[string(res)]
			field := per.Request
			if f == Limit {
				field = per.Limit
			}
			for _, candidate := range [...]string{field, th.Resize.Default, th.Default} {
				if v, ok := ParsePercent(candidate); ok {
					return v
				}
			}
			return DefaultThresholdPercent
		},
		MaxChangePerCycle: DefaultMaxChangePercent,
	}
	if v, ok := ParsePercent(spec.Behaviors.Resize.MaxChangePerCycle); ok && v > 0 {
		s.MaxChangePerCycle = v
	}
	return s
}

func (s ResizeSettings) threshold(res corev1.ResourceName, f Field) *big.Rat {
	if s.Threshold == nil {
		return percent(DefaultThresholdPercent, DefaultThresholdPercent)
	}
	return percent(s.Threshold(res, f), DefaultThresholdPercent)
}

func (s ResizeSettings) maxChange() *big.Rat {
	if !(s.MaxChangePerCycle > 0) {
		return percent(DefaultMaxChangePercent, DefaultMaxChangePercent)
	}
	return percent(s.MaxChangePerCycle, DefaultMaxChangePercent)
}
