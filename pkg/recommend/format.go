package recommend

import (
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

// FormatStat renders one statistic as SPEC §2.4 displays it: cpu as truncated integer
// millicores in canonical Quantity form ("230m", "1" for 1000m); other resources as
// "%.2fGi" from 1Gi, "%.2fMi" from 1Mi, else "%.2fKi" ("176.00Mi").
func FormatStat(res string, v float64) string {
	if res == ResourceCPU {
		return resource.NewMilliQuantity(truncInt64(v), resource.DecimalSI).String()
	}
	// strconv's 'f' format is what %.2f prints, without fmt's per-call machinery (five
	// statistics per series, every cycle).
	switch {
	case v >= gib:
		return fixed(v/gib, 2, "Gi")
	case v >= mib:
		return fixed(v/mib, 2, "Mi")
	default:
		return fixed(v/kib, 2, "Ki")
	}
}

// fixed renders v with prec decimals followed by unit.
func fixed(v float64, prec int, unit string) string {
	var buf [32]byte
	return string(append(strconv.AppendFloat(buf[:0], v, 'f', prec, 64), unit...))
}

// FormatCV renders a coefficient of variation with three decimals.
func FormatCV(cv float64) string {
	return fixed(cv, 3, "")
}

// FormatTimeSpan renders a time span as a Go duration rounded to whole seconds ("24h5m0s");
// "0s" when d ≤ 0.
func FormatTimeSpan(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return d.Round(time.Second).String()
}

// FormatValue renders a recommendation (SPEC §2.4): cpu millicores as a DecimalSI
// canonical string ("288m", "2"); other resources rounded up to a whole MiB, as a BinarySI
// canonical string ("162Mi", "2Gi").
func FormatValue(res string, v int64) string {
	if res == ResourceCPU {
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	}
	return resource.NewQuantity(RoundUpMiB(v), resource.BinarySI).String()
}

// UsageStats renders s as the status entry of one series.
func UsageStats(res, source string, s Stats) v1.UsageStats {
	u := v1.UsageStats{
		Resource: res,
		Source:   source,
		Samples:  s.Samples,
		TimeSpan: FormatTimeSpan(s.TimeSpan),
		P50:      FormatStat(res, s.P50),
		P75:      FormatStat(res, s.P75),
		P90:      FormatStat(res, s.P90),
		P95:      FormatStat(res, s.P95),
		P99:      FormatStat(res, s.P99),
		Max:      FormatStat(res, s.Max),
		Mean:     FormatStat(res, s.Mean),
		StdDev:   FormatStat(res, s.StdDev),
		CV:       FormatCV(s.CV),
	}
	if !s.LastUpdated.IsZero() {
		t := metav1.NewTime(s.LastUpdated)
		u.LastUpdated = &t
	}
	return u
}

// truncInt64 truncates v toward zero, saturating at the int64 range; NaN becomes 0.
func truncInt64(v float64) int64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return int64(v)
}

// Summary renders the recommendations of every container compactly:
// "app: cpu 300m, mem 192Mi/231Mi, eph 1200Mi/2160Mi" (request/limit); "-" when nothing
// is recommended.
func Summary(cs []v1.ContainerProfile) string {
	short := map[string]string{ResourceCPU: "cpu", ResourceMemory: "mem", "ephemeral-storage": "eph"}
	var parts []string
	for _, cp := range cs {
		var rs []string
		for _, r := range []string{ResourceCPU, ResourceMemory, "ephemeral-storage"} {
			rec, ok := cp.Recommendations[r]
			if !ok {
				continue
			}
			v := dash(rec.Request)
			if rec.Limit != "" {
				v += "/" + rec.Limit
			}
			rs = append(rs, short[r]+" "+v)
		}
		if len(rs) > 0 {
			parts = append(parts, cp.Name+": "+strings.Join(rs, ", "))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
