package policy

import (
	"errors"
	"testing"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/google/go-cmp/cmp"
)

// compiled is the parsed view of a Compiled that tests compare.
type compiled struct {
	Headroom          []string
	MinDataPoints     int64
	MinTimeSpan       time.Duration
	MaxCV             string
	CVMeanFloor       map[string]int64
	ResizeInterval    time.Duration
	MaxChangePerCycle string
}

func view(c *Compiled) compiled {
	v := compiled{
		MinDataPoints:     c.Readiness.MinDataPoints,
		MinTimeSpan:       c.Readiness.MinTimeSpan,
		MaxCV:             c.Readiness.MaxCV.String(),
		ResizeInterval:    c.Resize.Interval,
		MaxChangePerCycle: c.Resize.MaxChangePerCycle.String(),
		CVMeanFloor:       c.Readiness.CVMeanFloor,
	}
	for _, m := range c.Metrics {
		v.Headroom = append(v.Headroom, m.Headroom.String())
	}
	return v
}

func TestCompileParsesAndDefaults(t *testing.T) {
	cases := map[string]struct {
		spec ballastv1.ResourcePolicySpec
		want compiled
	}{
		"a sparse policy gets every resolve-time default": {
			spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{
				{Resource: "memory", Field: "limit", Source: "s", Aggregation: "p99"},
			}},
			want: compiled{
				Headroom: []string{"1.0"}, MinDataPoints: 500, MinTimeSpan: 24 * time.Hour, MaxCV: "1.5",
				CVMeanFloor:    map[string]int64{"cpu": 25, "memory": 25 << 20, "ephemeral-storage": 2 << 20},
				ResizeInterval: 15 * time.Minute, MaxChangePerCycle: "50",
			},
		},
		"written values are parsed, not replaced": {
			spec: ballastv1.ResourcePolicySpec{
				Metrics: []ballastv1.MetricSpec{
					{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg", Headroom: "1.25"},
				},
				Readiness: ballastv1.Readiness{MinDataPoints: 5, MinTimeSpan: "1m", MaxCV: "2.0",
					CVMeanFloor: map[string]string{"cpu": "0"}},
				Behaviors: ballastv1.Behaviors{Resize: ballastv1.ResizeBehavior{MaxChangePerCycle: "25", Interval: "30s"}},
			},
			want: compiled{
				Headroom: []string{"1.25"}, MinDataPoints: 5, MinTimeSpan: time.Minute, MaxCV: "2.0",
				CVMeanFloor: map[string]int64{"cpu": 0}, ResizeInterval: 30 * time.Second, MaxChangePerCycle: "25",
			},
		},
		"an explicit empty cvMeanFloor disables every floor": {
			spec: ballastv1.ResourcePolicySpec{Readiness: ballastv1.Readiness{CVMeanFloor: map[string]string{}}},
			want: compiled{
				MinDataPoints: 500, MinTimeSpan: 24 * time.Hour, MaxCV: "1.5", CVMeanFloor: map[string]int64{},
				ResizeInterval: 15 * time.Minute, MaxChangePerCycle: "50",
			},
		},
		"a blank floor entry means no floor for that resource": {
			spec: ballastv1.ResourcePolicySpec{Readiness: ballastv1.Readiness{
				CVMeanFloor: map[string]string{"cpu": "", "memory": "10Mi"},
			}},
			want: compiled{
				MinDataPoints: 500, MinTimeSpan: 24 * time.Hour, MaxCV: "1.5", CVMeanFloor: map[string]int64{"memory": 10 << 20},
				ResizeInterval: 15 * time.Minute, MaxChangePerCycle: "50",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Compile(ballastv1.KindClusterResourcePolicy, "", "p", 3, tc.spec, Floors{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, view(c)); diff != "" {
				t.Errorf("compiled (-want +got):\n%s", diff)
			}
			if c.Generation != 3 {
				t.Errorf("Generation = %d, want 3", c.Generation)
			}
		})
	}
}

func TestCompileDoesNotModifyTheInput(t *testing.T) {
	spec := ballastv1.ResourcePolicySpec{Selector: ballastv1.PolicySelector{Kinds: []string{"Deployment"}}}
	c, err := Compile(ballastv1.KindClusterResourcePolicy, "", "p", 1, spec, Floors{})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Readiness.MinTimeSpan != "" || spec.Readiness.CVMeanFloor != nil {
		t.Errorf("input spec was defaulted in place: %+v", spec.Readiness)
	}
	spec.Selector.Kinds[0] = "StatefulSet"
	if !c.Matches(PodFacts{Kind: "Deployment"}) {
		t.Error("editing the input after Compile changed the compiled selector")
	}
}

func TestCompileErrors(t *testing.T) {
	bad := ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{
		{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg", Headroom: "-1"},
	}}
	cases := map[string]struct {
		kind, namespace string
		spec            ballastv1.ResourcePolicySpec
		wantReason      string // "" means a plain (non-validation) error
	}{
		"an invalid spec is a validation error": {
			kind: ballastv1.KindResourcePolicy, namespace: "team-a", spec: bad, wantReason: ReasonInvalidHeadroom,
		},
		"a namespaced policy without namespace": {kind: ballastv1.KindResourcePolicy},
		"a cluster policy with a namespace":     {kind: ballastv1.KindClusterResourcePolicy, namespace: "x"},
		"an unknown kind":                       {kind: "VerticalPodAutoscaler"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Compile(tc.kind, tc.namespace, "p", 1, tc.spec, Floors{})
			if err == nil {
				t.Fatalf("Compile = %+v, want an error", c)
			}
			var verr *ValidationError
			isValidation := errors.As(err, &verr)
			if tc.wantReason == "" && isValidation {
				t.Errorf("got validation error %v, want a plain error", err)
			}
			if tc.wantReason != "" && (!isValidation || verr.Reason != tc.wantReason) {
				t.Errorf("got %v, want reason %s", err, tc.wantReason)
			}
		})
	}
}

func TestCompiledReferences(t *testing.T) {
	cluster, err := CompileCluster(&ballastv1.ClusterResourcePolicy{
		ObjectMeta: objectMeta("", "default", 2),
	})
	if err != nil {
		t.Fatal(err)
	}
	namespaced, err := CompileNamespaced(&ballastv1.ResourcePolicy{ObjectMeta: objectMeta("shop", "web", 7)}, Floors{})
	if err != nil {
		t.Fatal(err)
	}
	type refs struct {
		Ref                            ballastv1.PolicyRef
		Key, Annotation, Discriminator string
		Generation                     int64
	}
	got := []refs{
		{cluster.Ref(), cluster.Key(), cluster.RefAnnotation(), cluster.Discriminator(), cluster.Generation},
		{namespaced.Ref(), namespaced.Key(), namespaced.RefAnnotation(), namespaced.Discriminator(), namespaced.Generation},
	}
	want := []refs{
		{ballastv1.PolicyRef{Kind: "ClusterResourcePolicy", Name: "default"}, "ClusterResourcePolicy//default",
			"default", "default-a9696153", 2},
		{ballastv1.PolicyRef{Kind: "ResourcePolicy", Namespace: "shop", Name: "web"}, "ResourcePolicy/shop/web",
			"shop/web", "web-2c8d6b30", 7},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("references (-want +got):\n%s", diff)
	}
	if b := cluster.Readiness.CVMeanFloor["memory"]; b != 25<<20 {
		t.Errorf("default memory floor = %d bytes, want 25Mi", b)
	}
}

func TestCompileHPABehavior(t *testing.T) {
	cases := map[string]struct {
		written    string
		want       string
		wantReason string
	}{
		"blank is preserve":     {written: "", want: ballastv1.HPAPreserve},
		"preserve":              {written: "preserve", want: ballastv1.HPAPreserve},
		"scale-target":          {written: "scale-target", want: ballastv1.HPAScaleTarget},
		"ignore":                {written: "ignore", want: ballastv1.HPAIgnore},
		"unknown value":         {written: "scale", wantReason: ReasonInvalidHPA},
		"wrong case is invalid": {written: "Preserve", wantReason: ReasonInvalidHPA},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := ballastv1.ResourcePolicySpec{Behaviors: ballastv1.Behaviors{HPA: tc.written}}
			c, err := Compile(ballastv1.KindClusterResourcePolicy, "", "p", 1, spec, Floors{})
			if tc.wantReason != "" {
				var verr *ValidationError
				if !errors.As(err, &verr) || verr.Reason != tc.wantReason {
					t.Fatalf("Compile error = %v, want reason %s", err, tc.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.HPA != tc.want || c.Spec.Behaviors.HPA != tc.want {
				t.Errorf("HPA = %q (spec %q), want %q", c.HPA, c.Spec.Behaviors.HPA, tc.want)
			}
		})
	}
}
