package chart

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/savings"
)

// TestRenderPricing: without a price nothing is rendered or passed; with prices the
// ConfigMap ballast-pricing carries every key pkg/savings reads (and they parse), and
// ballast-control gets the same figures as flags; a price that is not a decimal >= 0 fails.
func TestRenderPricing(t *testing.T) {
	priceArgs := func(m *manifests) []string {
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", fullname, d)
		var out []string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--price-") || strings.HasPrefix(a, "--hours-per-month") {
				out = append(out, a)
			}
		}
		return out
	}
	m := newHelm(t).mustTemplate(t)
	if _, ok := m.byKey["ConfigMap/"+savings.PricingConfigMap]; ok {
		t.Error("ballast-pricing rendered without a price")
	}
	if got := priceArgs(m); len(got) != 0 {
		t.Errorf("price flags without a price: %v", got)
	}
	m = newHelm(t).mustTemplate(t, "--set", "pricing.cpuCoreHour=0.031", "--set", "pricing.memoryGiBHour=0.0042",
		"--set", "pricing.hoursPerMonth=720", "--set", "pricing.currency=EUR")
	cm := &corev1.ConfigMap{}
	m.decode(t, "ConfigMap", savings.PricingConfigMap, cm)
	if cm.Namespace != namespace {
		t.Errorf("ballast-pricing in %q, want the release namespace", cm.Namespace)
	}
	p, err := savings.ParsePrices(cm.Data)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(savings.Prices{CPUCoreHour: 0.031, MemoryGiBHour: 0.0042, HoursPerMonth: 720, Currency: "EUR"}, p); d != "" {
		t.Errorf("ConfigMap prices (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"--price-cpu-hour=0.031", "--price-gib-hour=0.0042", "--hours-per-month=720"}, priceArgs(m)); d != "" {
		t.Errorf("ballast-control price flags (-want +got):\n%s", d)
	}
	for _, bad := range []string{"pricing.cpuCoreHour=cheap", "pricing.memoryGiBHour=-1", "pricing.rate=3"} {
		if _, err := newHelm(t).template(t, "--set", bad); err == nil {
			t.Errorf("--set %s rendered", bad)
		}
	}
}
