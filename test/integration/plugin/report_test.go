package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

var reportPrices = []string{"--price-cpu-hour", "0.031", "--price-gib-hour", "0.0042", "--currency", "USD"}

// TestReport compares every output of kubectl ballast report over the views fixture with
// its golden file.
func TestReport(t *testing.T) {
	kc, _ := views(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"report", []string{"report"}},
		{"report-priced", append([]string{"report"}, reportPrices...)},
		{"report-shop-by-savings", append([]string{"report", "-n", "shop", "--sort-by", "savings"}, reportPrices...)},
		{"report-json", append([]string{"report", "-o", "json"}, reportPrices...)},
		{"report-yaml", append([]string{"report", "-o", "yaml"}, reportPrices...)},
		{"report-csv", append([]string{"report", "-o", "csv"}, reportPrices...)},
		{"report-html", append([]string{"report", "-o", "html"}, reportPrices...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, kc, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			golden(t, tc.name, r.stdout)
		})
	}
	r := run(t, kc, "report", "-o", "html")
	for _, banned := range []string{"<script", "http://", "https://", "<link", "@import"} {
		if strings.Contains(strings.ReplaceAll(r.stdout, `xmlns="http://www.w3.org/2000/svg"`, ""), banned) {
			t.Errorf("-o html contains %q: the page must be self-contained", banned)
		}
	}
	if r := run(t, kc, "report", "-o", "pdf"); r.code != 1 {
		t.Errorf("-o pdf: exit %d, want 1", r.code)
	}
	if r := run(t, kc, "report", "--price-cpu-hour", "-1"); r.code != 1 {
		t.Errorf("--price-cpu-hour -1: exit %d, want 1", r.code)
	}
}

// TestReportPricingConfigMap: the ballast-pricing ConfigMap prices the report, a flag
// overrides one key of it, and an invalid ConfigMap is named in a note, not an error.
func TestReportPricingConfigMap(t *testing.T) {
	kc, _ := views(t)
	ctx := context.Background()
	c := srv.Kube.Client
	ns := "report-pricing"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ballast-pricing"},
		Data: map[string]string{"cpu-core-hour": "0.05", "memory-gib-hour": "0.01", "hours-per-month": "720", "currency": "EUR"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		PricesFrom string `json:"pricesFrom"`
		Prices     struct {
			CPUCoreHour, MemoryGiBHour, HoursPerMonth float64
			Currency                                  string
		} `json:"prices"`
		Notes []string `json:"notes"`
	}
	get := func(args ...string) doc {
		t.Helper()
		r := run(t, kc, append([]string{"report", "-o", "json", "--ballast-namespace", ns}, args...)...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var d doc
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := get()
	if d.PricesFrom != "ConfigMap report-pricing/ballast-pricing" || d.Prices.CPUCoreHour != 0.05 || d.Prices.MemoryGiBHour != 0.01 ||
		d.Prices.HoursPerMonth != 720 || d.Prices.Currency != "EUR" {
		t.Errorf("from the ConfigMap: %+v", d)
	}
	d = get("--price-cpu-hour", "0.07")
	if d.PricesFrom != "ConfigMap report-pricing/ballast-pricing and flags" || d.Prices.CPUCoreHour != 0.07 || d.Prices.MemoryGiBHour != 0.01 {
		t.Errorf("flag over the ConfigMap: %+v", d)
	}
	cm.Data["memory-gib-hour"] = "free"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	d = get()
	if d.PricesFrom != "none" || len(d.Notes) == 0 || !strings.Contains(d.Notes[0], `memory-gib-hour "free"`) {
		t.Errorf("invalid ConfigMap: %+v", d)
	}
}

// reportFigures is the part of the JSON report this test reads.
type reportFigures struct {
	Pods        int                `json:"pods"`
	Requested   map[string]float64 `json:"requested"`
	Recommended map[string]float64 `json:"recommended"`
	UsedP50     map[string]float64 `json:"usedP50"`
	UsedP95     map[string]float64 `json:"usedP95"`
	Reclaimable map[string]float64 `json:"reclaimable"`
	Shortfall   map[string]float64 `json:"shortfall"`
}

func (f *reportFigures) add(o reportFigures) {
	f.Pods += o.Pods
	for _, m := range []struct{ dst, src *map[string]float64 }{{&f.Requested, &o.Requested}, {&f.Recommended, &o.Recommended},
		{&f.UsedP50, &o.UsedP50}, {&f.UsedP95, &o.UsedP95}, {&f.Reclaimable, &o.Reclaimable}, {&f.Shortfall, &o.Shortfall}} {
		if *m.dst == nil {
			*m.dst = map[string]float64{}
		}
		for k, v := range *m.src {
			(*m.dst)[k] += v
		}
	}
}

// TestReportTotalsMatchStatuses writes 40 profiles with generated statuses and 1–4 pods
// each over three namespaces into the real API server, then checks that report's cluster
// total is the sum, over the profiles, of (recommendation and usage in the status) × (their
// pods' requests), computed here independently of pkg/savings, and that the profile rows
// and the namespace rows each sum to the total.
func TestReportTotalsMatchStatuses(t *testing.T) {
	kc, _ := views(t)
	ctx := context.Background()
	c := srv.Kube.Client
	rng := rand.New(rand.NewPCG(31, 31))
	namespaces := []string{"sum-a", "sum-b", "sum-c"}
	for _, ns := range namespaces {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// The API server is shared with the views tests, whose golden files list every profile.
	t.Cleanup(func() {
		if err := c.DeleteAllOf(ctx, &ballastv1.WorkloadProfile{}, client.MatchingLabels{"report-sum": "yes"}); err != nil {
			t.Error(err)
		}
		for _, ns := range namespaces {
			if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
				t.Error(err)
			}
		}
	})
	var want reportFigures
	want.add(reportFigures{})
	milli := func(s string) float64 { q := resource.MustParse(s); return float64(q.MilliValue()) }
	bytes := func(s string) float64 { q := resource.MustParse(s); return float64(q.Value()) }
	for i := range 40 {
		name := fmt.Sprintf("sum-%02d--server--default-a9696153", i)
		recCPU, recMem := fmt.Sprintf("%dm", 50+rng.IntN(900)), fmt.Sprintf("%dMi", 32+rng.IntN(900))
		p50CPU, p95CPU := fmt.Sprintf("%dm", 10+rng.IntN(300)), fmt.Sprintf("%dm", 300+rng.IntN(300))
		p50Mem, p95Mem := fmt.Sprintf("%d.00Mi", 20+rng.IntN(200)), fmt.Sprintf("%d.50Mi", 220+rng.IntN(200))
		wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"report-sum": "yes"}}}
		if err := c.Create(ctx, wp); err != nil {
			t.Fatal(err)
		}
		wp.Status = ballastv1.WorkloadProfileStatus{State: ballastv1.StateSufficient, Containers: []ballastv1.ContainerProfile{{Name: "app",
			UsageStats: []ballastv1.UsageStats{
				{Resource: "cpu", Source: "kubernetes-metrics", Samples: 500, P50: p50CPU, P95: p95CPU},
				{Resource: "memory", Source: "kubernetes-metrics", Samples: 500, P50: p50Mem, P95: p95Mem}},
			Recommendations: map[string]ballastv1.Recommendation{"cpu": {Request: recCPU}, "memory": {Request: recMem}}}}}
		if err := c.Status().Update(ctx, wp); err != nil {
			t.Fatal(err)
		}
		for j := range 1 + rng.IntN(4) {
			reqCPU, reqMem := fmt.Sprintf("%dm", 100+rng.IntN(900)), fmt.Sprintf("%dMi", 64+rng.IntN(900))
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[rng.IntN(3)], Name: fmt.Sprintf("sum-%02d-%d", i, j),
				Labels:      map[string]string{ballastv1.ModeLabel: "apply", "report-sum": "yes"},
				Annotations: map[string]string{ballastv1.ProfileRefAnnotation: name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1",
					Resources: resources(reqCPU, "", reqMem, "")}}}}
			if err := c.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			f := reportFigures{Pods: 1,
				Requested:   map[string]float64{"milliCPU": milli(reqCPU), "memoryBytes": bytes(reqMem)},
				Recommended: map[string]float64{"milliCPU": milli(recCPU), "memoryBytes": bytes(recMem)},
				UsedP50:     map[string]float64{"milliCPU": milli(p50CPU), "memoryBytes": float64(int64(bytes(p50Mem)))},
				UsedP95:     map[string]float64{"milliCPU": milli(p95CPU), "memoryBytes": float64(int64(bytes(p95Mem)))},
				Reclaimable: map[string]float64{"milliCPU": max(0, milli(reqCPU)-milli(recCPU)), "memoryBytes": max(0, bytes(reqMem)-bytes(recMem))},
				Shortfall:   map[string]float64{"milliCPU": max(0, milli(recCPU)-milli(reqCPU)), "memoryBytes": max(0, bytes(recMem)-bytes(reqMem))},
			}
			want.add(f)
		}
	}
	// A pod outside the selector and a finished pod do not count.
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "sum-a", Name: "other", Labels: map[string]string{ballastv1.ModeLabel: "apply"},
			Annotations: map[string]string{ballastv1.ProfileRefAnnotation: "sum-00--server--default-a9696153"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1", Resources: resources("8", "", "8Gi", "")}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "sum-b", Name: "finished", Labels: map[string]string{ballastv1.ModeLabel: "apply", "report-sum": "yes"},
			Annotations: map[string]string{ballastv1.ProfileRefAnnotation: "sum-00--server--default-a9696153"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1", Resources: resources("8", "", "8Gi", "")}}}},
	} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	finished := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "sum-b", Name: "finished"}, finished); err != nil {
		t.Fatal(err)
	}
	finished.Status.Phase = corev1.PodSucceeded
	if err := c.Status().Update(ctx, finished); err != nil {
		t.Fatal(err)
	}
	r := run(t, kc, append([]string{"report", "-A", "-l", "report-sum=yes", "-o", "json"}, reportPrices...)...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Profiles   []reportFigures `json:"profiles"`
		Namespaces []struct {
			Namespace string `json:"namespace"`
			reportFigures
		} `json:"namespaces"`
		Total reportFigures `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Profiles) != 40 || len(rep.Namespaces) != 3 {
		t.Fatalf("%d profile rows and %d namespace rows, want 40 and 3", len(rep.Profiles), len(rep.Namespaces))
	}
	if d := cmp.Diff(want, rep.Total); d != "" {
		t.Errorf("cluster total vs the sum of the statuses × pods (-want +got):\n%s", d)
	}
	var byProfile, byNamespace reportFigures
	for _, p := range rep.Profiles {
		byProfile.add(p)
	}
	for _, n := range rep.Namespaces {
		byNamespace.add(n.reportFigures)
	}
	if d := cmp.Diff(rep.Total, byProfile); d != "" {
		t.Errorf("total vs Σ profile rows (-want +got):\n%s", d)
	}
	if d := cmp.Diff(rep.Total, byNamespace); d != "" {
		t.Errorf("total vs Σ namespace rows (-want +got):\n%s", d)
	}
	// The same profiles per namespace: -n sum-b counts only that namespace's pods.
	r = run(t, kc, "report", "-n", "sum-b", "-l", "report-sum=yes", "-o", "json")
	var nsRep struct {
		Total reportFigures `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &nsRep); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rep.Namespaces[1].reportFigures, nsRep.Total); rep.Namespaces[1].Namespace != "sum-b" || d != "" {
		t.Errorf("-n sum-b total vs the sum-b row of -A (%s; -want +got):\n%s", rep.Namespaces[1].Namespace, d)
	}
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace("sum-b"), client.MatchingLabels{"report-sum": "yes"}); err != nil {
		t.Fatal(err)
	}
	if nsRep.Total.Pods != len(list.Items)-1 { // less the Succeeded one
		t.Errorf("-n sum-b counts %d pods, want %d", nsRep.Total.Pods, len(list.Items)-1)
	}
}
