package recommend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestFormatStat(t *testing.T) {
	cases := map[string]struct {
		res  string
		v    float64
		want string
	}{
		"cpu millicores":                 {res: "cpu", v: 230, want: "230m"},
		"cpu fraction truncates":         {res: "cpu", v: 230.99, want: "230m"},
		"cpu 1000m is 1":                 {res: "cpu", v: 1000, want: "1"},
		"cpu 999.9m stays in millicores": {res: "cpu", v: 999.9, want: "999m"},
		"cpu 1500m":                      {res: "cpu", v: 1500, want: "1500m"},
		"cpu 2000m is 2":                 {res: "cpu", v: 2000, want: "2"},
		"cpu zero":                       {res: "cpu", v: 0, want: "0"},
		"cpu below 1m":                   {res: "cpu", v: 0.7, want: "0"},
		"cpu NaN":                        {res: "cpu", v: math.NaN(), want: "0"},
		"memory 176Mi":                   {res: "memory", v: 176 * mib, want: "176.00Mi"},
		"memory exactly 1Gi":             {res: "memory", v: gib, want: "1.00Gi"},
		"memory 1 byte under 1Gi":        {res: "memory", v: gib - 1, want: "1024.00Mi"},
		"memory 1.5Gi":                   {res: "memory", v: 1.5 * gib, want: "1.50Gi"},
		"memory exactly 1Mi":             {res: "memory", v: mib, want: "1.00Mi"},
		"memory 1 byte under 1Mi":        {res: "memory", v: mib - 1, want: "1024.00Ki"},
		"memory 512 bytes":               {res: "memory", v: 512, want: "0.50Ki"},
		"memory zero":                    {res: "memory", v: 0, want: "0.00Ki"},
		"memory mean with a fraction":    {res: "memory", v: 1234567.891, want: "1.18Mi"},
		"ephemeral-storage 2160Mi":       {res: "ephemeral-storage", v: 2160 * mib, want: "2.11Gi"},
		"ephemeral-storage 300Mi":        {res: "ephemeral-storage", v: 300 * mib, want: "300.00Mi"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := FormatStat(tc.res, tc.v); got != tc.want {
				t.Errorf("FormatStat(%q, %v) = %q, want %q", tc.res, tc.v, got, tc.want)
			}
		})
	}
}

func TestFormatTimeSpan(t *testing.T) {
	cases := map[string]struct {
		d    time.Duration
		want string
	}{
		"zero":                            {d: 0, want: "0s"},
		"negative":                        {d: -time.Minute, want: "0s"},
		"whole":                           {d: 24*time.Hour + 5*time.Minute, want: "24h5m0s"},
		"fraction below half rounds down": {d: 24*time.Hour + 5*time.Minute + 499*time.Millisecond, want: "24h5m0s"},
		"half second rounds up":           {d: 1500 * time.Millisecond, want: "2s"},
		"under half a second":             {d: 400 * time.Millisecond, want: "0s"},
		"one nanosecond":                  {d: 1, want: "0s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := FormatTimeSpan(tc.d); got != tc.want {
				t.Errorf("FormatTimeSpan(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

func TestFormatCV(t *testing.T) {
	cases := map[string]struct {
		cv   float64
		want string
	}{
		"zero":         {cv: 0, want: "0.000"},
		"three places": {cv: 0.52223, want: "0.522"},
		"rounds":       {cv: 1.4996, want: "1.500"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := FormatCV(tc.cv); got != tc.want {
				t.Errorf("FormatCV(%v) = %q, want %q", tc.cv, got, tc.want)
			}
		})
	}
}

func TestFormatValue(t *testing.T) {
	cases := map[string]struct {
		res  string
		v    int64
		want string
	}{
		"cpu 288m":                              {res: "cpu", v: 288, want: "288m"},
		"cpu 300m":                              {res: "cpu", v: 300, want: "300m"},
		"cpu 2000m is 2":                        {res: "cpu", v: 2000, want: "2"},
		"cpu 1000m is 1":                        {res: "cpu", v: 1000, want: "1"},
		"cpu 1001m":                             {res: "cpu", v: 1001, want: "1001m"},
		"memory 192Mi":                          {res: "memory", v: 192 * mib, want: "192Mi"},
		"memory 288Mi":                          {res: "memory", v: 288 * mib, want: "288Mi"},
		"memory one byte under 128Mi rounds up": {res: "memory", v: 134217727, want: "128Mi"},
		"memory one byte over 128Mi rounds up":  {res: "memory", v: 128*mib + 1, want: "129Mi"},
		"memory 1 byte is 1Mi":                  {res: "memory", v: 1, want: "1Mi"},
		"memory 192Mi x 1.2 is 231Mi":           {res: "memory", v: 241591910, want: "231Mi"},
		"memory 1Gi":                            {res: "memory", v: gib, want: "1Gi"},
		"memory 1536Mi":                         {res: "memory", v: 1536 * mib, want: "1536Mi"},
		"memory zero":                           {res: "memory", v: 0, want: "0"},
		"ephemeral-storage 2160Mi":              {res: "ephemeral-storage", v: 2160 * mib, want: "2160Mi"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := FormatValue(tc.res, tc.v); got != tc.want {
				t.Errorf("FormatValue(%q, %d) = %q, want %q", tc.res, tc.v, got, tc.want)
			}
		})
	}
}

func TestUsageStats(t *testing.T) {
	now := t0.Add(25 * time.Hour)
	s := Stats{Samples: 300, TimeSpan: 24*time.Hour + 5*time.Minute + 700*time.Millisecond,
		P50: 150 * mib, P75: 176 * mib, P90: 200 * mib, P95: 230 * mib, P99: gib, Max: 1.25 * gib,
		Mean: 170.5 * mib, StdDev: 20 * mib, CV: 0.11730205, LastUpdated: now}
	want := v1.UsageStats{Resource: "memory", Source: "kubernetes-metrics", Samples: 300, TimeSpan: "24h5m1s",
		P50: "150.00Mi", P75: "176.00Mi", P90: "200.00Mi", P95: "230.00Mi", P99: "1.00Gi", Max: "1.25Gi",
		Mean: "170.50Mi", StdDev: "20.00Mi", CV: "0.117", LastUpdated: &metav1.Time{Time: now}}
	if diff := cmp.Diff(want, UsageStats("memory", "kubernetes-metrics", s)); diff != "" {
		t.Errorf("UsageStats (-want +got):\n%s", diff)
	}

	cpu := UsageStats("cpu", "kubernetes-metrics", Stats{Samples: 2, P50: 230.6, Mean: 1000.2, StdDev: 0.4})
	if cpu.P50 != "230m" || cpu.Mean != "1" || cpu.StdDev != "0" || cpu.LastUpdated != nil {
		t.Errorf("cpu UsageStats = %+v, want p50 230m, mean 1, stdDev 0 and no lastUpdated", cpu)
	}
}

func TestSummary(t *testing.T) {
	cs := []v1.ContainerProfile{
		{Name: "app", Recommendations: map[string]v1.Recommendation{"cpu": {Request: "300m"},
			"memory": {Request: "192Mi", Limit: "231Mi"}, "ephemeral-storage": {Limit: "2Gi"}}},
		{Name: "idle"},
		{Name: "sidecar", Recommendations: map[string]v1.Recommendation{"cpu": {Request: "10m"}}},
	}
	if got, want := Summary(cs), "app: cpu 300m, mem 192Mi/231Mi, eph -/2Gi; sidecar: cpu 10m"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if got := Summary(nil); got != "-" {
		t.Errorf("Summary(nil) = %q, want -", got)
	}
}

// TestFixedMatchesPrintf: the strconv rendering of the statistics prints what %.2f and %.3f
// print, for ordinary, huge, tiny and non-finite values.
func TestFixedMatchesPrintf(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	values := []float64{0, 0.005, 0.0049999, 1.005, 2.675, 1e21, 123456789.125, math.Inf(1), math.NaN()}
	for range 2000 {
		values = append(values, r.ExpFloat64()*math.Pow(10, float64(r.IntN(12))))
	}
	for _, v := range values {
		if got, want := fixed(v, 2, "Mi"), fmt.Sprintf("%.2fMi", v); got != want {
			t.Errorf("fixed(%v, 2) = %q, want %q", v, got, want)
		}
		if got, want := FormatCV(v), fmt.Sprintf("%.3f", v); got != want {
			t.Errorf("FormatCV(%v) = %q, want %q", v, got, want)
		}
	}
}
