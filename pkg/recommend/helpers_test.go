package recommend

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// compile compiles spec as a ClusterResourcePolicy; the spec must be valid.
func compile(t testing.TB, spec v1.ResourcePolicySpec) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(v1.KindClusterResourcePolicy, "", "p", 1, spec, policy.Floors{})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return c
}

// dec parses a decimal test value.
func dec(s string) policy.Decimal {
	d, err := policy.ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

// readiness builds readiness settings as policy.Compile would.
func readiness(minDataPoints int64, minTimeSpan time.Duration, maxCV string, floors map[string]int64) policy.Readiness {
	return policy.Readiness{MinDataPoints: minDataPoints, MinTimeSpan: minTimeSpan, MaxCV: dec(maxCV), CVMeanFloor: floors}
}

// decimalCmp compares decimals by value.
var decimalCmp = cmp.Comparer(func(a, b policy.Decimal) bool { return a.Cmp(b) == 0 })
