package recommend

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// presetMetrics are the metrics of the default ClusterResourcePolicy (SPEC §5.2).
func presetMetrics() []v1.MetricSpec {
	return []v1.MetricSpec{
		{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
		{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
		{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
		{Resource: "ephemeral-storage", Field: "request", Source: "kubelet-summary", Aggregation: "p90", Headroom: "1.0"},
		{Resource: "ephemeral-storage", Field: "limit", Source: "kubelet-summary", Aggregation: "p99", Headroom: "1.2"},
	}
}

// repeat returns v n times.
func repeat(n int, v float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = v
	}
	return xs
}

// workedSeries are series whose statistics are the worked example of SPEC §5.2:
// cpu mean 240m; memory p75 192Mi and p99 240Mi; ephemeral-storage p90 1200Mi and p99 1800Mi.
func workedSeries(first, last time.Time) map[string]Distribution {
	// Each has 300 samples, enough for the preset's minDataPoints of 250.
	cpu := append(repeat(150, 200), repeat(150, 280)...)
	mem := slices.Concat(repeat(225, 192*mib), repeat(69, 200*mib), repeat(3, 240*mib), repeat(3, 250*mib))
	eph := slices.Concat(repeat(270, 1200*mib), repeat(24, 1500*mib), repeat(3, 1800*mib), repeat(3, 2000*mib))
	return map[string]Distribution{
		"cpu":               newFakeDistribution(first, last, cpu...),
		"memory":            newFakeDistribution(first, last, mem...),
		"ephemeral-storage": newFakeDistribution(first, last, eph...),
	}
}

func TestRecommendWorkedExample(t *testing.T) {
	metrics := compile(t, v1.ResourcePolicySpec{Metrics: presetMetrics()}).Metrics
	series := workedSeries(t0, t0.Add(24*time.Hour))
	want := map[string]v1.Recommendation{
		"cpu": {Request: "300m", RequestBasis: "avg 240m × 1.25 = 300m"},
		"memory": {Request: "192Mi", Limit: "288Mi",
			RequestBasis: "p75 192.00Mi × 1.0 = 192Mi", LimitBasis: "p99 240.00Mi × 1.2 = 288Mi"},
		"ephemeral-storage": {Request: "1200Mi", Limit: "2160Mi",
			RequestBasis: "p90 1.17Gi × 1.0 = 1200Mi", LimitBasis: "p99 1.76Gi × 1.2 = 2160Mi"},
	}
	got := map[string]v1.Recommendation{}
	for res, d := range series {
		a, err := Recommend(res, StatsOf(d, t0), metrics)
		if err != nil {
			t.Fatalf("Recommend(%s): %v", res, err)
		}
		got[res] = a.Recommendation(res)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("worked example (-want +got):\n%s", diff)
	}
}

func TestRecommendLaterEntryWins(t *testing.T) {
	metrics := compile(t, v1.ResourcePolicySpec{Metrics: []v1.MetricSpec{
		{Resource: "memory", Field: "request", Source: "s", Aggregation: "p50"},
		{Resource: "memory", Field: "limit", Source: "s", Aggregation: "max"},
		{Resource: "memory", Field: "request", Source: "s", Aggregation: "p99"},
		{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg"},
	}}).Metrics
	got, err := Recommend("memory", Stats{Samples: 4, P50: 100 * mib, P99: 300 * mib, Max: 400 * mib}, metrics)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Amounts{Request: 300 * mib, Limit: 400 * mib, HasRequest: true, HasLimit: true,
		RequestBasis: "p99 300.00Mi × 1.0 = 300Mi", LimitBasis: "max 400.00Mi × 1.0 = 400Mi"}); got != want {
		t.Errorf("Recommend = %+v, want %+v", got, want)
	}
	none, _ := Recommend("ephemeral-storage", Stats{Samples: 4, P50: 1}, metrics)
	if !none.IsZero() {
		t.Errorf("Recommend for a resource no metric names = %+v, want zero", none)
	}
}

func TestRecommendRoundsBytesUpToMiB(t *testing.T) {
	metrics := compile(t, v1.ResourcePolicySpec{Metrics: []v1.MetricSpec{
		{Resource: "memory", Field: "limit", Source: "s", Aggregation: "p99", Headroom: "1.2"},
		{Resource: "cpu", Field: "request", Source: "s", Aggregation: "p99", Headroom: "1.2"},
	}}).Metrics
	// 192Mi × 1.2 = 241591910.4 bytes ⇒ 241591910 ⇒ rounded up to 231Mi.
	mem, err := Recommend("memory", Stats{Samples: 4, P99: 192 * mib}, metrics)
	if err != nil {
		t.Fatal(err)
	}
	if r := mem.Recommendation("memory"); r.LimitBasis != "p99 192.00Mi × 1.2 = 230.40Mi, rounded up to 231Mi" {
		t.Errorf("memory limit basis = %q", r.LimitBasis)
	}
	if mem.Limit != 231*mib || mem.Recommendation("memory").Limit != "231Mi" {
		t.Errorf("memory limit = %d (%s), want 231Mi", mem.Limit, mem.Recommendation("memory").Limit)
	}
	// cpu stays in millicores: 191m × 1.2 = 229.2m ⇒ 229m.
	cpu, _ := Recommend("cpu", Stats{Samples: 4, P99: 191}, metrics)
	if cpu.Request != 229 {
		t.Errorf("cpu request = %dm, want 229m", cpu.Request)
	}
}

func TestRoundUpMiB(t *testing.T) {
	cases := map[int64]int64{0: 0, -3: -3, 1: mib, mib: mib, mib + 1: 2 * mib, 241591910: 231 * mib,
		math.MaxInt64: math.MaxInt64 &^ (mib - 1)}
	for in, want := range cases {
		if got := RoundUpMiB(in); got != want || (in > 0 && got < in && in <= math.MaxInt64&^(mib-1)) {
			t.Errorf("RoundUpMiB(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestRecommendedValue(t *testing.T) {
	// rat is a headroom as policy.Compile parses it (blank is 1.0).
	rat := func(s string) policy.Decimal {
		if s == "" {
			s = v1.DefaultHeadroom
		}
		return dec(s)
	}
	cases := map[string]struct {
		s        Stats
		agg      string
		headroom policy.Decimal
		want     int64
		wantErr  bool
	}{
		"cpu mean 240m x 1.25 is 300m": {s: Stats{Samples: 10, Sum: 2400, Mean: 240}, agg: "avg", headroom: rat("1.25"), want: 300},
		"240Mi x 1.2 is exactly 288Mi": {s: Stats{P99: 240 * mib}, agg: "p99", headroom: rat("1.2"), want: 288 * mib},
		// float64(100) * 1.15 is 114.99999999999999.
		"100m x 1.15 is 115m, not 114m":              {s: Stats{P90: 100}, agg: "p90", headroom: rat("1.15"), want: 115},
		"histogram edge noise is rounded away":       {s: Stats{P99: 240*mib - 1e-7}, agg: "p99", headroom: rat("1.2"), want: 288 * mib},
		"truncates toward zero":                      {s: Stats{P50: 100}, agg: "p50", headroom: rat("1.005"), want: 100},
		"mean fraction counts before truncation":     {s: Stats{Samples: 10, Sum: 2407, Mean: 240.7}, agg: "avg", headroom: rat("1.25"), want: 300},
		"mean fraction can carry into the next unit": {s: Stats{Samples: 10, Sum: 2408, Mean: 240.8}, agg: "avg", headroom: rat("1.25"), want: 301},
		"mean of an empty series is 0":               {s: Stats{}, agg: "avg", headroom: rat("2"), want: 0},
		"zero headroom (unset) is 1":                 {s: Stats{Max: 1234}, agg: "max", headroom: policy.Decimal{}, want: 1234},
		"blank headroom is 1":                        {s: Stats{P75: 192 * mib}, agg: "p75", headroom: rat(""), want: 192 * mib},
		"headroom below 1 shrinks":                   {s: Stats{P95: 1000}, agg: "p95", headroom: rat("0.333"), want: 333},
		"saturates at the int64 range":               {s: Stats{Max: 1e18}, agg: "max", headroom: rat("100"), want: math.MaxInt64},
		"negative statistic gives 0":                 {s: Stats{P50: -5}, agg: "p50", headroom: rat("1"), want: 0},
		"NaN statistic is an error":                  {s: Stats{P50: math.NaN()}, agg: "p50", headroom: rat("1"), wantErr: true},
		"infinite sum is an error":                   {s: Stats{Samples: 1, Sum: math.Inf(1)}, agg: "avg", headroom: rat("1"), wantErr: true},
		"unknown aggregation is an error":            {s: Stats{}, agg: "p98", headroom: rat("1"), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RecommendedValue(tc.s, tc.agg, tc.headroom)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RecommendedValue error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("RecommendedValue = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBasisShowsTheMeansFraction(t *testing.T) {
	metrics := compile(t, v1.ResourcePolicySpec{Metrics: []v1.MetricSpec{
		{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg", Headroom: "1.25"}}}).Metrics
	a, err := Recommend("cpu", Stats{Samples: 10, Sum: 1809, Mean: 180.9}, metrics)
	if err != nil {
		t.Fatal(err)
	}
	if r := a.Recommendation("cpu"); r.Request != "226m" || r.RequestBasis != "avg 180.9m × 1.25 = 226m" {
		t.Errorf("recommendation = %+v, want 226m from avg 180.9m × 1.25", r)
	}
}
