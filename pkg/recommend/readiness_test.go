package recommend

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// TestCompiledReadiness checks the readiness values CheckReady reads, as policy.Compile
// derives them from a spec (units: millicores for cpu, bytes otherwise).
func TestCompiledReadiness(t *testing.T) {
	defaultFloors := map[string]int64{"cpu": 25, "memory": 25 * mib, "ephemeral-storage": 2 * mib}
	cases := map[string]struct {
		in   v1.Readiness
		want policy.Readiness
	}{
		"blank gets every resolve-time default": {
			in:   v1.Readiness{},
			want: readiness(500, 24*time.Hour, "1.5", defaultFloors),
		},
		"chart preset": {
			in: v1.Readiness{MinDataPoints: 250, MinTimeSpan: "24h", MaxCV: "1.5",
				CVMeanFloor: map[string]string{"cpu": "25m", "memory": "25Mi", "ephemeral-storage": "2Mi"}},
			want: readiness(250, 24*time.Hour, "1.5", defaultFloors),
		},
		"explicit empty map disables every floor": {
			in:   v1.Readiness{MinDataPoints: 5, MinTimeSpan: "1m", MaxCV: "2.0", CVMeanFloor: map[string]string{}},
			want: readiness(5, time.Minute, "2", map[string]int64{}),
		},
		"explicit 0 floor and a missing resource": {
			in:   v1.Readiness{CVMeanFloor: map[string]string{"cpu": "0", "memory": "1Gi"}},
			want: readiness(500, 24*time.Hour, "1.5", map[string]int64{"cpu": 0, "memory": gib}),
		},
		"a blank floor entry is a missing entry": {
			in:   v1.Readiness{CVMeanFloor: map[string]string{"cpu": "", "memory": "1Gi"}},
			want: readiness(500, 24*time.Hour, "1.5", map[string]int64{"memory": gib}),
		},
		"cpu floor in cores becomes millicores": {
			in:   v1.Readiness{MaxCV: "0", CVMeanFloor: map[string]string{"cpu": "0.5"}},
			want: readiness(500, 24*time.Hour, "0", map[string]int64{"cpu": 500}),
		},
		"minDataPoints 0 means the default": {
			in:   v1.Readiness{MinDataPoints: 0, CVMeanFloor: map[string]string{}},
			want: readiness(500, 24*time.Hour, "1.5", map[string]int64{}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := compile(t, v1.ResourcePolicySpec{Readiness: tc.in}).Readiness
			if diff := cmp.Diff(tc.want, got, decimalCmp); diff != "" {
				t.Errorf("compiled readiness (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckReady(t *testing.T) {
	params := readiness(500, 24*time.Hour, "1.5", map[string]int64{"cpu": 25, "memory": 25 * mib})
	// A series that passes every gate; cases change one thing.
	base := Stats{Samples: 500, TimeSpan: 24 * time.Hour, Mean: 100 * mib, CV: 0.5}
	with := func(f func(*Stats)) Stats { s := base; f(&s); return s }

	cases := map[string]struct {
		res        string
		s          Stats
		params     policy.Readiness
		wantReason string
	}{
		"every gate passes":                    {res: "memory", s: base},
		"one sample short of minDataPoints":    {res: "memory", s: with(func(s *Stats) { s.Samples = 499 }), wantReason: NotReadyTooFewSamples},
		"exactly minDataPoints":                {res: "memory", s: with(func(s *Stats) { s.Samples = 500 })},
		"one nanosecond short of minTimeSpan":  {res: "memory", s: with(func(s *Stats) { s.TimeSpan = 24*time.Hour - 1 }), wantReason: NotReadyTimeSpanTooShort},
		"exactly minTimeSpan":                  {res: "memory", s: with(func(s *Stats) { s.TimeSpan = 24 * time.Hour })},
		"samples are checked before time span": {res: "memory", s: Stats{Samples: 1}, wantReason: NotReadyTooFewSamples},
		"cv above max":                         {res: "memory", s: with(func(s *Stats) { s.CV = 1.5001 }), wantReason: NotReadyVariationTooLarge},
		"cv exactly max":                       {res: "memory", s: with(func(s *Stats) { s.CV = 1.5 })},
		"NaN cv fails":                         {res: "memory", s: with(func(s *Stats) { s.CV = math.NaN() }), wantReason: NotReadyVariationTooLarge},
		"mean below memory floor waives cv": {res: "memory",
			s: with(func(s *Stats) { s.Mean, s.CV = 25*mib-1, 9 })},
		"mean exactly at floor is cv-checked": {res: "memory",
			s: with(func(s *Stats) { s.Mean, s.CV = 25*mib, 9 }), wantReason: NotReadyVariationTooLarge},
		"cpu floor compares millicores: 24m is below 25m": {res: "cpu",
			s: with(func(s *Stats) { s.Mean, s.CV = 24, 9 })},
		"cpu floor compares millicores: 26m is above 25m": {res: "cpu",
			s: with(func(s *Stats) { s.Mean, s.CV = 26, 9 }), wantReason: NotReadyVariationTooLarge},
		"no entry for the resource means no floor": {res: "ephemeral-storage",
			s: with(func(s *Stats) { s.Mean, s.CV = 1, 9 }), wantReason: NotReadyVariationTooLarge},
		"explicit 0 floor always cv-checks": {res: "cpu",
			params: readiness(500, 24*time.Hour, "1.5", map[string]int64{"cpu": 0}),
			s:      with(func(s *Stats) { s.Mean, s.CV = 0, 9 }), wantReason: NotReadyVariationTooLarge},
		"empty floor map always cv-checks": {res: "memory",
			params: readiness(500, 24*time.Hour, "1.5", map[string]int64{}),
			s:      with(func(s *Stats) { s.Mean, s.CV = 1, 9 }), wantReason: NotReadyVariationTooLarge},
		"maxCV 0 accepts only a flat series": {res: "memory",
			params: readiness(500, 24*time.Hour, "0", nil),
			s:      with(func(s *Stats) { s.CV = 0 })},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := params
			if tc.params.MinDataPoints != 0 {
				p = tc.params
			}
			reason, msg, ready := CheckReady(tc.res, tc.s, p)
			if reason != tc.wantReason || ready != (tc.wantReason == "") {
				t.Errorf("CheckReady = (%q, %q, %v), want reason %q", reason, msg, ready, tc.wantReason)
			}
			if !ready && msg == "" {
				t.Errorf("CheckReady gave reason %q without a message", reason)
			}
		})
	}
}

// Readiness flips exactly at the boundaries when the statistics come from a distribution.
func TestReadinessBoundariesFromSeries(t *testing.T) {
	params := compile(t, v1.ResourcePolicySpec{Readiness: v1.Readiness{MinDataPoints: 250, MinTimeSpan: "24h", MaxCV: "1.5"}}).Readiness
	last := t0.Add(48 * time.Hour)
	cases := map[string]struct {
		n     int
		span  time.Duration
		ready bool
	}{
		"249 samples over 24h":         {n: 249, span: 24 * time.Hour, ready: false},
		"250 samples over 24h":         {n: 250, span: 24 * time.Hour, ready: true},
		"250 samples over 24h less 1s": {n: 250, span: 24*time.Hour - time.Second, ready: false},
		"250 samples over 25h":         {n: 250, span: 25 * time.Hour, ready: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := fakeSeries(tc.n, last, tc.span, func(i int) float64 { return float64(200 + i%3*20) })
			_, msg, ready := CheckReady("memory", StatsOf(d, last), params)
			if ready != tc.ready {
				t.Errorf("ready = %v (%s), want %v", ready, msg, tc.ready)
			}
		})
	}
}
