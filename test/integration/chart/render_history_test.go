package chart

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestRenderHistory: the day-0 backfill is off by default (no flag); history.prometheus.url
// passes --history-prometheus-url, a timeout other than the binary's default passes
// --history-prometheus-timeout, and likewise the step and rate window; a URL without a scheme is refused by the schema.
func TestRenderHistory(t *testing.T) {
	cases := map[string]struct {
		set  []string
		want []string
	}{
		"default": {},
		"url":     {set: []string{"--set", "history.prometheus.url=http://prometheus.monitoring:9090"}, want: []string{"--history-prometheus-url=http://prometheus.monitoring:9090"}},
		"timeout": {set: []string{"--set", "history.prometheus.url=http://p:9090", "--set", "history.prometheus.timeout=2m"},
			want: []string{"--history-prometheus-url=http://p:9090", "--history-prometheus-timeout=2m"}},
		"step and rate window": {set: []string{"--set", "history.prometheus.url=http://p:9090", "--set", "history.prometheus.step=30s", "--set", "history.prometheus.rateWindow=2m"},
			want: []string{"--history-prometheus-url=http://p:9090", "--history-prometheus-step=30s", "--history-prometheus-rate-window=2m"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{}
			newHelm(t).mustTemplate(t, c.set...).decode(t, "Deployment", fullname, d)
			args := d.Spec.Template.Spec.Containers[0].Args
			var got []string
			for _, a := range args {
				if strings.HasPrefix(a, "--history-") {
					got = append(got, a)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("history args %v, want %v", got, c.want)
			}
		})
	}
	if _, err := newHelm(t).template(t, "--set", "history.prometheus.url=prometheus:9090"); err == nil {
		t.Error("a Prometheus URL without a scheme rendered")
	}
	if _, err := newHelm(t).template(t, "--set", "history.prometheus.url=http://p:9090", "--set", "history.prometheus.step=1.5s"); err == nil {
		t.Error("a fractional step rendered")
	}
}
