package policy

import (
	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// defaultThreshold is ballastv1.DefaultThreshold (10%) parsed: the end of the resize
// threshold chain (Resize.Threshold).
var defaultThreshold = mustPercentage(ballastv1.DefaultThreshold)

func mustPercentage(s string) Decimal {
	d, err := ParsePercentage(s)
	if err != nil {
		panic("policy: built-in percentage " + s + " does not parse: " + err.Error())
	}
	return d
}
