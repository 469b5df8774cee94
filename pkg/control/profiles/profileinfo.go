package profiles

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ballastk8s/ballast/pkg/identity"
)

// ProfileInfo exposes ballast_profile_info{profile, <one label per identity label>} = 1 for
// every profile (SPEC §11.1's profile attributes). Identity labels are chosen per cluster
// and can change at run time, so the label names are not fixed: profile-scoped counters
// carry `profile`, and this info metric joins a profile to its identity values in PromQL
// (`… * on(profile) group_left(name, component) ballast_profile_info`).
type ProfileInfo struct {
	mu    sync.Mutex
	attrs map[string][]identity.Attribute
}

// NewProfileInfo returns an empty collector; register it with the metrics registry.
func NewProfileInfo() *ProfileInfo { return &ProfileInfo{attrs: map[string][]identity.Attribute{}} }

// Set records a profile's identity attributes.
func (p *ProfileInfo) Set(profile string, attrs []identity.Attribute) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attrs[profile] = attrs
}

// Delete forgets a profile.
func (p *ProfileInfo) Delete(profile string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.attrs, profile)
}

// Describe sends nothing: the label names vary, so this is an unchecked collector.
func (p *ProfileInfo) Describe(chan<- *prometheus.Desc) {}

// Collect emits one gauge per profile.
func (p *ProfileInfo) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.attrs))
	for n := range p.attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		keys := []string{identity.ProfileAttribute}
		values := []string{n}
		for _, a := range p.attrs[n] {
			keys = append(keys, a.Key)
			values = append(values, a.Value)
		}
		desc := prometheus.NewDesc("ballast_profile_info", "Identity attributes of each WorkloadProfile (value 1).", keys, nil)
		if m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, 1, values...); err == nil {
			ch <- m
		}
	}
}
