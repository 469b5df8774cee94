package savings

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// profile builds a WorkloadProfile with one container "app" recommending cpu and memory
// requests (empty: none) and usage p50/p95.
func profile(name, cpuRec, memRec, cpuP50, cpuP95, memP50, memP95 string) *ballastv1.WorkloadProfile {
	recs := map[string]ballastv1.Recommendation{}
	if cpuRec != "" {
		recs["cpu"] = ballastv1.Recommendation{Request: cpuRec}
	}
	if memRec != "" {
		recs["memory"] = ballastv1.Recommendation{Request: memRec, Limit: "4Gi"}
	}
	var stats []ballastv1.UsageStats
	if cpuP50 != "" {
		stats = append(stats, ballastv1.UsageStats{Resource: "cpu", Source: "s", Samples: 10, P50: cpuP50, P95: cpuP95})
	}
	if memP50 != "" {
		stats = append(stats, ballastv1.UsageStats{Resource: "memory", Source: "s", Samples: 10, P50: memP50, P95: memP95})
	}
	return &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: ballastv1.WorkloadProfileStatus{
		State:      ballastv1.StateSufficient,
		Containers: []ballastv1.ContainerProfile{{Name: "app", UsageStats: stats, Recommendations: recs}}}}
}

func pod(ns, cpu, mem string) Pod {
	var a Amount
	if cpu != "" {
		q := resource.MustParse(cpu)
		a.MilliCPU = q.MilliValue()
	}
	if mem != "" {
		q := resource.MustParse(mem)
		a.MemoryBytes = q.Value()
	}
	return Pod{Namespace: ns, Containers: []ContainerRequest{{Name: "app", Request: a}}}
}

const mi = 1 << 20

func TestFigures(t *testing.T) {
	cases := map[string]struct {
		wp   *ballastv1.WorkloadProfile
		pods []Pod
		want Figures
	}{
		"three uniform replicas: reclaimable is per replica × pods": {
			wp:   profile("web", "300m", "192Mi", "240m", "400m", "180Mi", "240Mi"),
			pods: []Pod{pod("a", "500m", "512Mi"), pod("a", "500m", "512Mi"), pod("b", "500m", "512Mi")},
			want: Figures{Pods: 3, Requested: Amount{1500, 3 * 512 * mi}, Recommended: Amount{900, 3 * 192 * mi},
				UsedP50: Amount{720, 3 * 180 * mi}, UsedP95: Amount{1200, 3 * 240 * mi}, Measured: true,
				Reclaimable: Amount{600, 3 * 320 * mi}},
		},
		"under-provisioned: a shortfall, nothing reclaimable": {
			wp:   profile("cache", "500m", "256Mi", "400m", "480m", "", ""),
			pods: []Pod{pod("a", "200m", "128Mi")},
			want: Figures{Pods: 1, Requested: Amount{200, 128 * mi}, Recommended: Amount{500, 256 * mi},
				UsedP50: Amount{400, 0}, UsedP95: Amount{480, 0}, Measured: true, Shortfall: Amount{300, 128 * mi}},
		},
		"cpu over, memory under: kept apart": {
			wp:   profile("mixed", "100m", "1Gi", "", "", "", ""),
			pods: []Pod{pod("a", "1", "512Mi")},
			want: Figures{Pods: 1, Requested: Amount{1000, 512 * mi}, Recommended: Amount{100, 1024 * mi},
				Reclaimable: Amount{900, 0}, Shortfall: Amount{0, 512 * mi}},
		},
		"no recommendation (Accruing): the current request, nothing to reclaim": {
			wp:   profile("new", "", "", "20m", "90m", "300Mi", "400Mi"),
			pods: []Pod{pod("a", "500m", "512Mi")},
			want: Figures{Pods: 1, Requested: Amount{500, 512 * mi}, Recommended: Amount{500, 512 * mi},
				UsedP50: Amount{20, 300 * mi}, UsedP95: Amount{90, 400 * mi}, Measured: true},
		},
		"container without a request: all shortfall": {
			wp:   profile("bare", "50m", "64Mi", "", "", "", ""),
			pods: []Pod{pod("a", "", "")},
			want: Figures{Pods: 1, Recommended: Amount{50, 64 * mi}, Shortfall: Amount{50, 64 * mi}},
		},
		"a container the profile does not know keeps its request": {
			wp:   profile("web", "300m", "192Mi", "", "", "", ""),
			pods: []Pod{{Namespace: "a", Containers: []ContainerRequest{{Name: "other", Request: Amount{1000, 1 << 30}}}}},
			want: Figures{Pods: 1, Requested: Amount{1000, 1 << 30}, Recommended: Amount{1000, 1 << 30}},
		},
		"no pods: all zero": {
			wp:   profile("orphan", "300m", "192Mi", "1m", "2m", "1Mi", "2Mi"),
			want: Figures{},
		},
		"an unparseable recommendation recommends nothing": {
			wp:   profile("broken", "lots", "192Mi", "", "", "", ""),
			pods: []Pod{pod("a", "500m", "256Mi")},
			want: Figures{Pods: 1, Requested: Amount{500, 256 * mi}, Recommended: Amount{500, 192 * mi}, Reclaimable: Amount{0, 64 * mi}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ParseProfile(tc.wp).Figures(tc.pods)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("figures (-want +got):\n%s", d)
			}
			net := got.Requested.MilliCPU - got.Recommended.MilliCPU
			if net != got.Reclaimable.MilliCPU-got.Shortfall.MilliCPU {
				t.Errorf("requested − recommended = %d, reclaimable − shortfall = %d", net, got.Reclaimable.MilliCPU-got.Shortfall.MilliCPU)
			}
		})
	}
}

func TestPrices(t *testing.T) {
	// 2 cores and 4 GiB for 730 h at 0.03/core-hour and 0.004/GiB-hour:
	// 730 × (2 × 0.03 + 4 × 0.004) = 730 × 0.076 = 55.48. Tolerance 1e-9: float rounding.
	p := Prices{CPUCoreHour: 0.03, MemoryGiBHour: 0.004}
	if got := p.Monthly(Amount{2000, 4 << 30}); math.Abs(got-55.48) > 1e-9 {
		t.Errorf("Monthly = %v, want 55.48", got)
	}
	if got := (Prices{CPUCoreHour: 1, HoursPerMonth: 1}).Monthly(Amount{MilliCPU: 500}); got != 0.5 {
		t.Errorf("Monthly with 1 hour = %v, want 0.5", got)
	}
	if (Prices{}).Set() || (Prices{HoursPerMonth: 10}).Set() {
		t.Error("Set without a price")
	}
	var f Figures
	f.Price(Prices{})
	if f.Cost != nil {
		t.Error("a cost without prices")
	}
}

func TestParsePrices(t *testing.T) {
	cases := map[string]struct {
		data    map[string]string
		want    Prices
		wantErr string
	}{
		"all keys":       {data: map[string]string{"cpu-core-hour": "0.031", "memory-gib-hour": " 0.0042 ", "hours-per-month": "720", "currency": "EUR"}, want: Prices{0.031, 0.0042, 720, "EUR"}},
		"empty":          {data: map[string]string{}, want: Prices{}},
		"blank value":    {data: map[string]string{"cpu-core-hour": ""}, want: Prices{}},
		"negative":       {data: map[string]string{"memory-gib-hour": "-1"}, wantErr: `memory-gib-hour "-1": must be a decimal number >= 0`},
		"not a number":   {data: map[string]string{"cpu-core-hour": "cheap"}, wantErr: `cpu-core-hour "cheap": must be a decimal number >= 0`},
		"not finite":     {data: map[string]string{"hours-per-month": "Inf"}, wantErr: `hours-per-month "Inf": must be a decimal number >= 0`},
		"unknown key ok": {data: map[string]string{"note": "prices from the 2026 contract"}, want: Prices{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePrices(tc.data)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("prices (-want +got):\n%s", d)
			}
		})
	}
	got := Prices{CPUCoreHour: 1, MemoryGiBHour: 2, Currency: "USD"}.Override(Prices{MemoryGiBHour: 3})
	if d := cmp.Diff(Prices{CPUCoreHour: 1, MemoryGiBHour: 3, Currency: "USD"}, got); d != "" {
		t.Errorf("Override (-want +got):\n%s", d)
	}
}

func TestCounts(t *testing.T) {
	now := metav1.Now()
	mk := func(mode string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ballastv1.ModeLabel: mode}}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"running apply": {mk("apply", corev1.PodRunning, false), true},
		"pending":       {mk("measure", corev1.PodPending, false), true},
		"succeeded":     {mk("resize", corev1.PodSucceeded, false), false},
		"failed":        {mk("apply", corev1.PodFailed, false), false},
		"deleting":      {mk("apply", corev1.PodRunning, true), false},
		"not enrolled":  {mk("bogus", corev1.PodRunning, false), false},
	}
	for name, tc := range cases {
		if got := Counts(tc.pod); got != tc.want {
			t.Errorf("%s: Counts = %v, want %v", name, got, tc.want)
		}
	}
	sidecar := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}, {Name: "proxy", RestartPolicy: &sidecar, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}}},
		Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	want := Pod{Namespace: "ns", Containers: []ContainerRequest{{Name: "proxy", Request: Amount{50, 0}}, {Name: "app", Request: Amount{1000, 1 << 30}}}}
	if d := cmp.Diff(want, PodOf(p)); d != "" {
		t.Errorf("PodOf (-want +got):\n%s", d)
	}
}

func TestBuild(t *testing.T) {
	items := []Item{
		{Profile: ParseProfile(profile("web", "300m", "192Mi", "240m", "400m", "180Mi", "240Mi")),
			Pods: []Pod{pod("shop", "500m", "512Mi"), pod("billing", "1", "1Gi"), pod("shop", "500m", "512Mi")}},
		{Profile: ParseProfile(profile("cache", "500m", "128Mi", "", "", "", "")), Pods: []Pod{pod("shop", "200m", "256Mi")}},
		{Profile: ParseProfile(profile("idle", "", "", "", "", "", ""))},
	}
	rep := Build(items, Prices{CPUCoreHour: 0.03, MemoryGiBHour: 0.004})
	if got := len(rep.Profiles); got != 3 {
		t.Fatalf("%d profile rows, want 3", got)
	}
	if d := cmp.Diff([]string{"billing", "shop"}, []string{rep.Namespaces[0].Namespace, rep.Namespaces[1].Namespace}); d != "" {
		t.Errorf("namespaces (-want +got):\n%s", d)
	}
	if rep.Namespaces[1].Profiles != 2 || rep.Namespaces[0].Profiles != 1 {
		t.Errorf("profiles per namespace: billing %d, shop %d; want 1, 2", rep.Namespaces[0].Profiles, rep.Namespaces[1].Profiles)
	}
	var byProfile, byNamespace Figures
	for _, r := range rep.Profiles {
		byProfile.Add(r.Figures)
	}
	for _, r := range rep.Namespaces {
		byNamespace.Add(r.Figures)
	}
	strip := func(f Figures) Figures { f.Cost = nil; return f }
	if d := cmp.Diff(strip(rep.Total), byProfile); d != "" {
		t.Errorf("total vs Σ profiles (-want +got):\n%s", d)
	}
	if d := cmp.Diff(strip(rep.Total), byNamespace); d != "" {
		t.Errorf("total vs Σ namespaces (-want +got):\n%s", d)
	}
	// web: (200m + 320Mi) × 2 in shop + (700m + 832Mi) in billing; cache: 128Mi.
	want := Amount{MilliCPU: 1100, MemoryBytes: (640 + 832 + 128) * mi}
	if d := cmp.Diff(want, rep.Total.Reclaimable); d != "" {
		t.Errorf("reclaimable (-want +got):\n%s", d)
	}
	// 730 × (1.1 × 0.03 + 1600/1024 × 0.004); tolerance 1e-9: float rounding.
	if want, got := 730*(1.1*0.03+1600.0/1024*0.004), rep.Total.Cost.Savings; math.Abs(want-got) > 1e-9 {
		t.Errorf("monthly savings %v, want %v", got, want)
	}
	if rep.Prices.HoursPerMonth != DefaultHoursPerMonth {
		t.Errorf("hours per month %v, want the default %d", rep.Prices.HoursPerMonth, DefaultHoursPerMonth)
	}
}

// generated returns n profiles of one to three containers and one to four pods each,
// spread over 40 namespaces (the shape of the scale bench).
func generated(n int) []*ballastv1.WorkloadProfile {
	out := make([]*ballastv1.WorkloadProfile, n)
	for i := range out {
		wp := profile(fmt.Sprintf("app-%05d--server--default-a9696153", i), fmt.Sprintf("%dm", 100+i%400), fmt.Sprintf("%dMi", 64+i%512),
			fmt.Sprintf("%dm", 50+i%300), fmt.Sprintf("%dm", 80+i%350), fmt.Sprintf("%d.00Mi", 40+i%400), fmt.Sprintf("%d.00Mi", 60+i%450))
		for c := 1; c < 1+i%3; c++ {
			extra := wp.Status.Containers[0]
			extra.Name = fmt.Sprintf("side-%d", c)
			wp.Status.Containers = append(wp.Status.Containers, extra)
		}
		out[i] = wp
	}
	return out
}

func generatedPods(wp *ballastv1.WorkloadProfile, i int) []Pod {
	pods := make([]Pod, 1+i%4)
	for j := range pods {
		p := Pod{Namespace: fmt.Sprintf("team-%02d", (i+j)%40)}
		for _, c := range wp.Status.Containers {
			p.Containers = append(p.Containers, ContainerRequest{Name: c.Name, Request: Amount{500, 512 * mi}})
		}
		pods[j] = p
	}
	return pods
}

// BenchmarkReport10k is the pure report over 10,000 profiles: parsing their statuses and
// building every row (what kubectl ballast report does once it has the lists).
func BenchmarkReport10k(b *testing.B) {
	wps := generated(10000)
	pods := make([][]Pod, len(wps))
	for i, wp := range wps {
		pods[i] = generatedPods(wp, i)
	}
	prices := Prices{CPUCoreHour: 0.03, MemoryGiBHour: 0.004}
	b.ReportAllocs()
	for b.Loop() {
		items := make([]Item, len(wps))
		for i, wp := range wps {
			items[i] = Item{Profile: ParseProfile(wp), Pods: pods[i]}
		}
		rep := Build(items, prices)
		if len(rep.Profiles) != 10000 {
			b.Fatal(len(rep.Profiles))
		}
	}
}
