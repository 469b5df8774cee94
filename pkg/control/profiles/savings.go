package profiles

import (
	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/savings"
)

// SetPrices sets the prices of ballast_profile_monthly_savings (ballast-control
// --price-cpu-hour, --price-gib-hour, --hours-per-month; before Register). Without a price
// that gauge has no series; the reclaimable gauges are exported either way.
func (c *Controller) SetPrices(p savings.Prices) { c.prices = p }

// recordSavings sets the savings gauges of a profile from the status just computed and its
// bound pods, with the same arithmetic as kubectl ballast report (pkg/savings).
func (c *Controller) recordSavings(name string, st *ballastv1.WorkloadProfileStatus, pods []corev1.Pod) {
	bound := make([]savings.Pod, 0, len(pods))
	for i := range pods {
		if savings.Counts(&pods[i]) {
			bound = append(bound, savings.PodOf(&pods[i]))
		}
	}
	f := savings.ParseProfile(&ballastv1.WorkloadProfile{Status: *st}).Figures(bound)
	c.metrics.ReclaimableCPU.WithLabelValues(name).Set(f.Reclaimable.Cores())
	c.metrics.ReclaimableMemory.WithLabelValues(name).Set(float64(f.Reclaimable.MemoryBytes))
	if c.prices.Set() {
		c.metrics.MonthlySavings.WithLabelValues(name).Set(c.prices.Monthly(f.Reclaimable))
	} else {
		c.metrics.MonthlySavings.DeleteLabelValues(name)
	}
}
