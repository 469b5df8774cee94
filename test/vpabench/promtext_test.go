package main

import (
	"math"
	"strings"
	"testing"
)

const exposition = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="profiles",result="success"} 120
controller_runtime_reconcile_total{controller="profiles",result="requeue_after"} 3.5e+03
controller_runtime_reconcile_total{controller="enrollment",result="success"} 7
workqueue_depth{controller="profiles",name="profiles"} 0
controller_runtime_webhook_latency_seconds_bucket{webhook="/mutate-v1-pod",le="0.005"} 90
controller_runtime_webhook_latency_seconds_bucket{webhook="/mutate-v1-pod",le="0.01"} 99
controller_runtime_webhook_latency_seconds_bucket{webhook="/mutate-v1-pod",le="+Inf"} 100
controller_runtime_webhook_latency_seconds_sum{webhook="/mutate-v1-pod"} 0.4
controller_runtime_webhook_latency_seconds_count{webhook="/mutate-v1-pod"} 100
ballast_profile_info{profile="a",odd="say \"hi\"\\n"} 1 1700000000000
`

func TestParsePromSumsMatchingSamples(t *testing.T) {
	ss, err := parseProm(exposition, controlMetrics...)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 9 {
		t.Fatalf("%d samples, want 9 (ballast_ lines filtered out)", len(ss))
	}
	if v, ok := promSum(ss, "controller_runtime_reconcile_total", profilesController); !ok || v != 3620 {
		t.Errorf("profiles reconciles = %v %v, want 3620", v, ok)
	}
	if _, ok := promSum(ss, "controller_runtime_reconcile_total", map[string]string{"controller": "resize"}); ok {
		t.Error("no sample of controller resize, yet ok")
	}
	hook := map[string]string{"webhook": "/mutate-v1-pod"}
	if q := promQuantile(ss, "controller_runtime_webhook_latency_seconds", hook, 0.5); q != 0.005 {
		t.Errorf("p50 bound = %v, want 0.005", q)
	}
	if q := promQuantile(ss, "controller_runtime_webhook_latency_seconds", hook, 0.995); !math.IsInf(q, 1) {
		t.Errorf("p99.5 bound = %v, want +Inf", q)
	}
	if m := meanDelta(ss, nil, "controller_runtime_webhook_latency_seconds", hook); math.Abs(m-0.004) > 1e-12 {
		t.Errorf("mean = %v, want 0.004", m)
	}
}

func TestParsePromUnescapesLabelsAndSkipsTimestamps(t *testing.T) {
	ss, err := parseProm(exposition, "ballast_")
	if err != nil || len(ss) != 1 {
		t.Fatalf("parseProm = %v, %v", ss, err)
	}
	if got := ss[0].Labels["odd"]; got != `say "hi"\n` || ss[0].Value != 1 {
		t.Errorf("label odd = %q, value %v", got, ss[0].Value)
	}
}

func TestParsePromRejectsBrokenLines(t *testing.T) {
	for _, in := range []string{
		"m{a=\"x\"}",            // no value
		"m{a=\"x} 1",            // unterminated label value
		"m{a=x} 1",              // unquoted
		"m 1 2 3",               // too many fields
		"m notanumber",          // value
		"controller_runtime_x{", // cut off
	} {
		if _, err := parseProm(in); err == nil {
			t.Errorf("parseProm(%q) = nil error", in)
		}
	}
}

func TestBucketDeltaSubtractsSnapshots(t *testing.T) {
	later, _ := parseProm(exposition)
	earlier, _ := parseProm(strings.ReplaceAll(exposition, "} 90", "} 50"))
	d := bucketDelta(later, earlier, "controller_runtime_webhook_latency_seconds", nil)
	if d[0.005] != 40 || d[0.01] != 0 || d[math.Inf(1)] != 0 {
		t.Errorf("delta = %v", d)
	}
	if q := bucketQuantile(map[float64]float64{}, 0.5); !math.IsNaN(q) {
		t.Errorf("empty histogram quantile = %v, want NaN", q)
	}
}

func FuzzParseProm(f *testing.F) {
	f.Add(exposition)
	f.Add("m{a=\"\\\\\"} 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		ss, err := parseProm(in)
		if err != nil {
			return
		}
		for _, s := range ss {
			if s.Name == "" || s.Labels == nil {
				t.Fatalf("sample without name or labels from %q: %+v", in, s)
			}
		}
	})
}

func TestLiveMarkdownNamesEveryFigure(t *testing.T) {
	md := liveMarkdown(&LiveScale{Nodes: 2, Pods: 4, Profiles: 2, CreateP99: 6, BaselineP99: 3, WritesPerMin: map[string]float64{"workloadprofiles/status": 2}})
	for _, want := range []string{"p99 ratio 2.00", "workloadprofiles/status 2 (all: 2)", "| ballast-control RSS"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}
