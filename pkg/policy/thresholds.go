package policy

import (
	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// ResizeThreshold returns the drift threshold, in percent, of (resource, field) for
// resize (SPEC §8.3): the first usable value of
// thresholds.resize.resourceThresholds[resource].request|limit, thresholds.resize.default,
// thresholds.default, and finally 10%. A value is usable when it is non-blank and parses to
// a percentage > 0. field is FieldRequest or FieldLimit.
func ResizeThreshold(spec ballastv1.ResourcePolicySpec, resource, field string) Decimal {
	th := spec.Behaviors.Thresholds
	perField := ""
	if ft, ok := th.Resize.ResourceThresholds[resource]; ok {
		switch field {
		case FieldRequest:
			perField = ft.Request
		case FieldLimit:
			perField = ft.Limit
		}
	}
	for _, v := range []string{perField, th.Resize.Default, th.Default} {
		if d, err := ParsePercentage(v); err == nil && d.Sign() > 0 {
			return d
		}
	}
	return defaultThreshold
}

// defaultThreshold is ballastv1.DefaultThreshold (10%) parsed.
var defaultThreshold = func() Decimal {
	d, err := ParsePercentage(ballastv1.DefaultThreshold)
	if err != nil {
		panic("policy: DefaultThreshold does not parse: " + err.Error())
	}
	return d
}()
