package recommend

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

var now = t0.Add(48 * time.Hour)

// presetPolicy is the default ClusterResourcePolicy spec (SPEC §5.2).
func presetPolicy() v1.ResourcePolicySpec {
	return v1.ResourcePolicySpec{
		Metrics: presetMetrics(),
		Readiness: v1.Readiness{MinDataPoints: 250, MinTimeSpan: "24h", MaxCV: "1.5",
			CVMeanFloor: map[string]string{"cpu": "25m", "memory": "25Mi", "ephemeral-storage": "2Mi"}},
	}
}

// presetWith compiles the preset policy changed by edit.
func presetWith(t testing.TB, edit func(*v1.ResourcePolicySpec)) *policy.Compiled {
	spec := presetPolicy()
	edit(&spec)
	return compile(t, spec)
}

// presetCompiled is the preset policy, compiled.
var presetCompiled = func() *policy.Compiled {
	c, err := policy.Compile(v1.KindClusterResourcePolicy, "", "default", 1, presetPolicy(), policy.Floors{})
	if err != nil {
		panic(err)
	}
	return c
}()

// presetInput is a computation under the preset policy, 10s sampling, 168h retention.
func presetInput(containers ...ContainerInput) Input {
	return Input{Now: now, Policy: presetCompiled, SamplingInterval: 10 * time.Second,
		Retention: 168 * time.Hour, Generation: 3, Containers: containers}
}

// ready is a container whose three series are the worked example, ending at last.
func ready(name string, last time.Time) ContainerInput {
	return ContainerInput{Name: name, Series: workedSeries(last.Add(-24*time.Hour), last)}
}

var workedRecs = map[string]v1.Recommendation{
	"cpu":               {Request: "300m"},
	"memory":            {Request: "192Mi", Limit: "288Mi"},
	"ephemeral-storage": {Request: "1200Mi", Limit: "2160Mi"},
}

func TestComputeWorkedExampleStatus(t *testing.T) {
	got := Compute(presetInput(ready("app", now)))
	at := &metav1.Time{Time: now}
	stats := func(u v1.UsageStats) v1.UsageStats {
		u.Samples, u.TimeSpan, u.LastUpdated = 300, "24h0m0s", at
		return u
	}
	want := Result{
		Containers: []v1.ContainerProfile{{
			Name:     "app",
			LastSeen: at,
			UsageStats: []v1.UsageStats{
				stats(v1.UsageStats{Resource: "cpu", Source: "kubernetes-metrics", P50: "200m", P75: "280m",
					P90: "280m", P95: "280m", P99: "280m", Max: "280m", Mean: "240m", StdDev: "40m", CV: "0.167"}),
				stats(v1.UsageStats{Resource: "ephemeral-storage", Source: "kubelet-summary", P50: "1.17Gi",
					P75: "1.17Gi", P90: "1.17Gi", P95: "1.46Gi", P99: "1.76Gi", Max: "1.95Gi", Mean: "1.21Gi",
					StdDev: "125.52Mi", CV: "0.101"}),
				stats(v1.UsageStats{Resource: "memory", Source: "kubernetes-metrics", P50: "192.00Mi",
					P75: "192.00Mi", P90: "200.00Mi", P95: "200.00Mi", P99: "240.00Mi", Max: "250.00Mi",
					Mean: "194.90Mi", StdDev: "7.94Mi", CV: "0.041"}),
			},
			Recommendations: map[string]v1.Recommendation{
				"cpu": {Request: "300m", RequestBasis: "avg 240m × 1.25 = 300m"},
				"ephemeral-storage": {Request: "1200Mi", Limit: "2160Mi",
					RequestBasis: "p90 1.17Gi × 1.0 = 1200Mi", LimitBasis: "p99 1.76Gi × 1.2 = 2160Mi"},
				"memory": {Request: "192Mi", Limit: "288Mi",
					RequestBasis: "p75 192.00Mi × 1.0 = 192Mi", LimitBasis: "p99 240.00Mi × 1.2 = 288Mi"},
			},
			Readiness: []v1.ResourceReadiness{
				{Resource: "cpu", Ready: true, Samples: "300/250", TimeSpan: "24h0m0s/24h0m0s", CV: "0.167/1.500"},
				{Resource: "ephemeral-storage", Ready: true, Samples: "300/250", TimeSpan: "24h0m0s/24h0m0s", CV: "0.101/1.500"},
				{Resource: "memory", Ready: true, Samples: "300/250", TimeSpan: "24h0m0s/24h0m0s", CV: "0.041/1.500"},
			},
		}},
		MeetsThreshold: true,
		State:          v1.StateSufficient,
		Ready: metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 3,
			LastTransitionTime: metav1.Time{Time: now}, Reason: "SamplesCollected",
			Message: "All policy resources produced samples in the latest collection cycle"},
		Sufficient: metav1.Condition{Type: "Sufficient", Status: metav1.ConditionTrue, ObservedGeneration: 3,
			LastTransitionTime: metav1.Time{Time: now}, Reason: "ReadinessMet",
			Message: "every container meets readiness (samples ≥ 250, span ≥ 24h0m0s, cv ≤ 1.500)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compute (-want +got):\n%s", diff)
	}

	var st v1.WorkloadProfileStatus
	got.ApplyTo(&st)
	if st.State != v1.StateSufficient || !st.MeetsThreshold || len(st.Containers) != 1 || len(st.Conditions) != 2 {
		t.Errorf("ApplyTo wrote %+v", st)
	}
}

// outcome is the part of a Result most cases check.
type outcome struct {
	Containers []string                                // names, in order
	Recs       map[string]map[string]v1.Recommendation // container → resource → recommendation
	Stats      map[string][]string                     // container → usageStats "resource/source/samples"
	Pod        []string                                // podUsageStats "resource/source/samples"
	Meets      bool
	State      string
	Ready      string // reason: message
	Pending    []string
	Bumped     []string
}

func summarize(r Result) outcome {
	o := outcome{Meets: r.MeetsThreshold, State: r.State, Ready: r.Ready.Reason + ": " + r.Ready.Message,
		Bumped: r.OOMBumped}
	line := func(u v1.UsageStats) string {
		return u.Resource + "/" + u.Source + "/" + strconv.FormatInt(u.Samples, 10)
	}
	for _, c := range r.Containers {
		o.Containers = append(o.Containers, c.Name)
		if c.Recommendations != nil {
			if o.Recs == nil {
				o.Recs = map[string]map[string]v1.Recommendation{}
			}
			// Bases are checked by TestComputeExplains.
			recs := map[string]v1.Recommendation{}
			for r, rec := range c.Recommendations {
				recs[r] = v1.Recommendation{Request: rec.Request, Limit: rec.Limit}
			}
			o.Recs[c.Name] = recs
		}
		for _, u := range c.UsageStats {
			if o.Stats == nil {
				o.Stats = map[string][]string{}
			}
			o.Stats[c.Name] = append(o.Stats[c.Name], line(u))
		}
	}
	for _, u := range r.PodUsageStats {
		o.Pod = append(o.Pod, line(u))
	}
	for _, p := range r.Pending {
		o.Pending = append(o.Pending, p.Container+"/"+p.Resource+": "+p.Reason)
	}
	return o
}

func TestCompute(t *testing.T) {
	allStats := func(n string) []string {
		return []string{"cpu/kubernetes-metrics/" + n, "ephemeral-storage/kubelet-summary/" + n,
			"memory/kubernetes-metrics/" + n}
	}
	collected := "SamplesCollected: All policy resources produced samples in the latest collection cycle"
	few := func(name string, last time.Time) ContainerInput {
		c := ContainerInput{Name: name, Series: map[string]Distribution{}}
		for _, r := range []string{"cpu", "memory", "ephemeral-storage"} {
			c.Series[r] = fakeSeries(100, last, 24*time.Hour, constant(50*mib))
		}
		return c
	}
	without := func(c ContainerInput, res string) ContainerInput {
		delete(c.Series, res)
		return c
	}
	cases := map[string]struct {
		in   Input
		want outcome
	}{
		"one ready container is Sufficient": {
			in: presetInput(ready("app", now)),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300")}, Meets: true, State: "Sufficient", Ready: collected},
		},
		"a container short of samples keeps the profile Accruing but the ready one gets recommendations": {
			in: presetInput(few("sidecar", now), ready("app", now)),
			want: outcome{Containers: []string{"app", "sidecar"},
				Recs:  map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300"), "sidecar": allStats("100")},
				State: "Accruing", Ready: collected,
				Pending: []string{"sidecar/cpu: TooFewSamples", "sidecar/ephemeral-storage: TooFewSamples",
					"sidecar/memory: TooFewSamples"}},
		},
		"a policy resource without a series is not ready": {
			in: presetInput(without(ready("app", now), "ephemeral-storage")),
			want: outcome{Containers: []string{"app"},
				Recs: map[string]map[string]v1.Recommendation{"app": {"cpu": workedRecs["cpu"],
					"memory": workedRecs["memory"]}},
				Stats:   map[string][]string{"app": {"cpu/kubernetes-metrics/300", "memory/kubernetes-metrics/300"}},
				State:   "Accruing",
				Ready:   "MissingSamples: No samples in the latest collection cycle for: ephemeral-storage",
				Pending: []string{"app/ephemeral-storage: NoSeries"}},
		},
		"a container silent for longer than retention is pruned and stops blocking": {
			in: presetInput(ready("app", now), few("old", now.Add(-168*time.Hour-time.Second))),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300")}, Meets: true, State: "Sufficient", Ready: collected},
		},
		"a container silent for exactly the retention window stays": {
			in: presetInput(ready("app", now), few("old", now.Add(-168*time.Hour))),
			want: outcome{Containers: []string{"app", "old"},
				Recs:  map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300"), "old": allStats("100")},
				State: "Accruing", Ready: collected,
				Pending: []string{"old/cpu: TooFewSamples", "old/ephemeral-storage: TooFewSamples", "old/memory: TooFewSamples"}},
		},
		"a container without retained samples is not considered": {
			in: presetInput(ready("app", now), ContainerInput{Name: "gone", Series: map[string]Distribution{
				"cpu": newFakeDistribution(t0, t0), "memory": nil}}),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300")}, Meets: true, State: "Sufficient", Ready: collected},
		},
		"no containers: not meeting threshold, every resource missing": {
			in: presetInput(),
			want: outcome{State: "Accruing",
				Ready: "MissingSamples: No samples in the latest collection cycle for: cpu, ephemeral-storage, memory"},
		},
		"newest sample exactly two intervals old is fresh": {
			in: presetInput(ready("app", now.Add(-20*time.Second))),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300")}, Meets: true, State: "Sufficient", Ready: collected},
		},
		"newest sample older than two intervals is missing; readiness is unaffected": {
			in: presetInput(ready("app", now.Add(-21*time.Second))),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300")}, Meets: true, State: "Sufficient",
				Ready: "MissingSamples: No samples in the latest collection cycle for: cpu, ephemeral-storage, memory"},
		},
		"one container's fresh sample is enough for the Ready condition": {
			in: presetInput(ready("app", now.Add(-time.Hour)), few("sidecar", now)),
			want: outcome{Containers: []string{"app", "sidecar"},
				Recs:  map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300"), "sidecar": allStats("100")},
				State: "Accruing", Ready: collected,
				Pending: []string{"sidecar/cpu: TooFewSamples", "sidecar/ephemeral-storage: TooFewSamples", "sidecar/memory: TooFewSamples"}},
		},
		"sampling interval defaults to 60s": {
			in: func() Input {
				in := presetInput(ready("app", now.Add(-2*time.Minute)))
				in.SamplingInterval = 0
				return in
			}(),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300")}, Meets: true, State: "Sufficient", Ready: collected},
		},
		"pod-level series are informational only": {
			in: func() Input {
				in := presetInput(ready("app", now))
				in.PodSeries = map[string]Distribution{"ephemeral-storage": fakeSeries(3, now, time.Minute, constant(mib)),
					"memory": newFakeDistribution(now, now)}
				return in
			}(),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300")}, Pod: []string{"ephemeral-storage/kubelet-summary/3"},
				Meets: true, State: "Sufficient", Ready: collected},
		},
		"pod-level series alone do not make the profile Sufficient": {
			in: func() Input {
				in := presetInput()
				in.PodSeries = map[string]Distribution{"ephemeral-storage": fakeSeries(300, now, 48*time.Hour, constant(mib))}
				return in
			}(),
			want: outcome{Pod: []string{"ephemeral-storage/kubelet-summary/300"}, State: "Accruing",
				Ready: "MissingSamples: No samples in the latest collection cycle for: cpu, ephemeral-storage, memory"},
		},
		"containers are sorted by name": {
			in: presetInput(ready("b", now), ready("a", now)),
			want: outcome{Containers: []string{"a", "b"},
				Recs:  map[string]map[string]v1.Recommendation{"a": workedRecs, "b": workedRecs},
				Stats: map[string][]string{"a": allStats("300"), "b": allStats("300")}, Meets: true,
				State: "Sufficient", Ready: collected},
		},
		"resources outside the policy get stats with no source and no recommendation": {
			in: func() Input {
				in := presetInput(ready("app", now))
				in.Policy = presetWith(t, func(s *v1.ResourcePolicySpec) { s.Metrics = s.Metrics[:1] }) // cpu request only
				return in
			}(),
			want: outcome{Containers: []string{"app"},
				Recs:  map[string]map[string]v1.Recommendation{"app": {"cpu": {Request: "300m"}}},
				Stats: map[string][]string{"app": {"cpu/kubernetes-metrics/300", "ephemeral-storage//300", "memory//300"}},
				Meets: true, State: "Sufficient", Ready: collected},
		},
		"a sparse policy gets minDataPoints 500 at resolve time": {
			in: func() Input {
				in := presetInput(ready("app", now))
				in.Policy = presetWith(t, func(s *v1.ResourcePolicySpec) { s.Readiness = v1.Readiness{} })
				return in
			}(),
			want: outcome{Containers: []string{"app"}, Stats: map[string][]string{"app": allStats("300")},
				State: "Accruing", Ready: collected,
				Pending: []string{"app/cpu: TooFewSamples", "app/ephemeral-storage: TooFewSamples", "app/memory: TooFewSamples"}},
		},
		"a policy without metrics is Sufficient once a container is seen": {
			in: func() Input {
				in := presetInput(few("app", now))
				in.Policy = presetWith(t, func(s *v1.ResourcePolicySpec) { s.Metrics = nil })
				return in
			}(),
			want: outcome{Containers: []string{"app"},
				Stats: map[string][]string{"app": {"cpu//100", "ephemeral-storage//100", "memory//100"}},
				Meets: true, State: "Sufficient", Ready: collected},
		},
		// The policy of issue 9: the schema admits a blank floor, validation accepts it
		// (blank values are not errors), so it must compute: a blank entry is no floor.
		"a blank cvMeanFloor entry computes as no floor for that resource": {
			in: func() Input {
				in := presetInput(ready("app", now))
				in.Policy = presetWith(t, func(s *v1.ResourcePolicySpec) { s.Readiness.CVMeanFloor = map[string]string{"cpu": ""} })
				return in
			}(),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": allStats("300")}, Meets: true, State: "Sufficient", Ready: collected},
		},
		"a nil policy computes like a policy without metrics": {
			in: func() Input {
				in := presetInput(few("app", now))
				in.Policy = nil
				return in
			}(),
			want: outcome{Containers: []string{"app"},
				Stats: map[string][]string{"app": {"cpu//100", "ephemeral-storage//100", "memory//100"}},
				Meets: true, State: "Sufficient", Ready: collected},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Compute(tc.in)
			if diff := cmp.Diff(tc.want, summarize(got)); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeExplainsWhatIsMissing(t *testing.T) {
	now := t0.Add(48 * time.Hour)
	short := ContainerInput{Name: "app", Series: map[string]Distribution{
		"cpu":    fakeSeries(120, now, time.Hour, constant(180)),
		"memory": fakeSeries(300, now, 24*time.Hour, constant(50*mib)),
	}, ReadErrors: map[string]error{"ephemeral-storage": errors.New("kubelet: x509: certificate signed by unknown authority")}}
	got := Compute(presetInput(short))
	if got.State != v1.StateAccruing {
		t.Fatalf("state = %s, want Accruing", got.State)
	}
	gaps := got.Containers[0].Readiness
	want := []v1.ResourceReadiness{
		{Resource: "cpu", Samples: "120/250", TimeSpan: "1h0m0s/24h0m0s", CV: "0.000/1.500",
			Missing: "samples 120/250, span 1h0m0s/24h0m0s"},
		{Resource: "ephemeral-storage",
			SourceError: "kubelet: x509: certificate signed by unknown authority",
			Missing:     "source error: kubelet: x509: certificate signed by unknown authority"},
		{Resource: "memory", Ready: true, Samples: "300/250", TimeSpan: "24h0m0s/24h0m0s",
			CV: "0.000/1.500"},
	}
	if diff := cmp.Diff(want, gaps); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
	wantMsg := "app: cpu samples 120/250, span 1h0m0s/24h0m0s; ephemeral-storage source error: " +
		"kubelet: x509: certificate signed by unknown authority"
	if got.Sufficient.Status != metav1.ConditionFalse || got.Sufficient.Reason != v1.ReasonAccruing || got.Sufficient.Message != wantMsg {
		t.Errorf("Sufficient = %s %s %q, want False Accruing %q", got.Sufficient.Status, got.Sufficient.Reason, got.Sufficient.Message, wantMsg)
	}
	if m := got.Containers[0].Recommendations["memory"]; m.Request == "" || m.RequestBasis == "" {
		t.Errorf("the ready memory series has no explained recommendation: %+v", m)
	}
}
