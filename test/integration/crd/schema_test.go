package crd

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

var seq atomic.Int64

func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func validPolicySpec() ballastv1.ResourcePolicySpec {
	return ballastv1.ResourcePolicySpec{
		Priority: 3,
		Selector: ballastv1.PolicySelector{
			Kinds:         []string{"Deployment"},
			Namespaces:    ballastv1.NamespaceSelector{Include: []string{"/team-.*/"}, Exclude: []string{"team-scratch"}},
			Annotations:   map[string]string{"example.com/tier": "gold"},
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
		Metrics: []ballastv1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
			{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
		},
		Readiness: ballastv1.Readiness{MinDataPoints: 250, MinTimeSpan: "24h", MaxCV: "1.5",
			CVMeanFloor: map[string]string{"cpu": "25m"}},
		Behaviors: ballastv1.Behaviors{
			Thresholds: ballastv1.Thresholds{Default: "10%", Resize: ballastv1.ResizeThresholds{
				Default: "15%", ResourceThresholds: map[string]ballastv1.FieldThresholds{"memory": {Request: "5%"}}}},
			Resize: ballastv1.ResizeBehavior{MaxChangePerCycle: "50%", Interval: "15m"},
		},
	}
}

// TestValidObjectsAreAccepted creates one valid object of every kind.
func TestValidObjectsAreAccepted(t *testing.T) {
	c, cx := srv.Kube.Client, ctx(t)
	objs := []client.Object{
		&ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: uniq("cfg")},
			Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app.kubernetes.io/name", "app.kubernetes.io/component"}}},
		&ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: uniq("ms")},
			Spec: ballastv1.MetricsSourceSpec{Type: "kubernetesMetrics", Config: ballastv1.MetricsSourceConfig{PollInterval: "10s"}}},
		&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("crp")}, Spec: validPolicySpec()},
		&ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("rp"), Namespace: "default"}, Spec: validPolicySpec()},
		&ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: uniq("web--api--default-a1b2c3d4")}},
	}
	for _, o := range objs {
		if err := c.Create(cx, o); err != nil {
			t.Errorf("creating %T: %v", o, err)
		}
	}
}

// TestSchemaDefaults checks the defaults SPEC assigns to the schema, and that policies
// (which have none) are stored exactly as written.
func TestSchemaDefaults(t *testing.T) {
	c, cx := srv.Kube.Client, ctx(t)
	cfg := &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: uniq("cfg")},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}}}
	ms := &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: uniq("ms")},
		Spec: ballastv1.MetricsSourceSpec{Type: "kubeletSummary"}}
	crp := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("sparse")}}
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: uniq("wp")}}
	for _, o := range []client.Object{cfg, ms, crp, wp} {
		if err := c.Create(cx, o); err != nil {
			t.Fatalf("creating %T: %v", o, err)
		}
	}
	if cfg.Spec.OrphanTTL != "168h" || cfg.Spec.RetentionWindow != "168h" || cfg.Spec.Suspended {
		t.Errorf("BallastConfig defaults = %+v, want orphanTTL/retentionWindow 168h, suspended false", cfg.Spec)
	}
	if want := (ballastv1.PolicyFloors{MinResizeInterval: "1m", MinTimeSpan: "1h", MinThreshold: "1%"}); cfg.Spec.PolicyFloors != want {
		t.Errorf("BallastConfig policyFloors defaults = %+v, want %+v", cfg.Spec.PolicyFloors, want)
	}
	if ms.Spec.Config.PollInterval != "60s" || ms.Spec.Config.ReservoirSize != 10000 {
		t.Errorf("MetricsSource defaults = %+v, want pollInterval 60s, reservoirSize 10000", ms.Spec.Config)
	}
	// A status write gets the state default.
	wp.Status.ActivePods = 1
	if err := c.Status().Update(cx, wp); err != nil {
		t.Fatal(err)
	}
	if wp.Status.State != ballastv1.StateAccruing {
		t.Errorf("WorkloadProfile state default = %q, want Accruing", wp.Status.State)
	}

	// The stored policy stays sparse; resolve-time defaults live in memory only.
	got := &ballastv1.ClusterResourcePolicy{}
	if err := c.Get(cx, client.ObjectKeyFromObject(crp), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Readiness.MinDataPoints != 0 || got.Spec.Readiness.MinTimeSpan != "" ||
		got.Spec.Readiness.CVMeanFloor != nil || got.Spec.Behaviors.Resize.Interval != "" {
		t.Errorf("stored sparse policy gained defaults: %+v", got.Spec)
	}
	resolved := ballastv1.DefaultPolicySpec(got.Spec)
	if resolved.Readiness.MinDataPoints != 500 || resolved.Readiness.MinTimeSpan != "24h" ||
		resolved.Readiness.MaxCV != "1.5" || len(resolved.Readiness.CVMeanFloor) != 3 ||
		resolved.Behaviors.Thresholds.Default != "10%" || resolved.Behaviors.Resize.MaxChangePerCycle != "50%" ||
		resolved.Behaviors.Resize.Interval != "15m" {
		t.Errorf("resolved defaults = %+v", resolved)
	}

	// An explicit empty cvMeanFloor survives the round trip (it disables every floor).
	empty := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("nofloor")},
		Spec: ballastv1.ResourcePolicySpec{Readiness: ballastv1.Readiness{CVMeanFloor: map[string]string{}}}}
	if err := c.Create(cx, empty); err != nil {
		t.Fatal(err)
	}
	got = &ballastv1.ClusterResourcePolicy{}
	if err := c.Get(cx, client.ObjectKeyFromObject(empty), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Readiness.CVMeanFloor == nil || len(got.Spec.Readiness.CVMeanFloor) != 0 {
		t.Errorf("explicit empty cvMeanFloor came back as %#v, want an empty non-nil map", got.Spec.Readiness.CVMeanFloor)
	}
}

// TestSchemaRejects has one case per schema or CEL rule: the API server must refuse the
// object with a message naming the field.
func TestSchemaRejects(t *testing.T) {
	policy := func(mod func(*ballastv1.ResourcePolicySpec)) client.Object {
		s := validPolicySpec()
		mod(&s)
		return &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("bad")}, Spec: s}
	}
	config := func(labels ...string) client.Object {
		return &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: uniq("cfg")},
			Spec: ballastv1.BallastConfigSpec{IdentityLabels: labels}}
	}
	metric := func(mod func(*ballastv1.MetricSpec)) client.Object {
		return policy(func(s *ballastv1.ResourcePolicySpec) { mod(&s.Metrics[0]) })
	}
	cases := map[string]struct {
		obj      client.Object
		status   *ballastv1.WorkloadProfileStatus // written through the status subresource
		wantMsgs []string
	}{
		"identityLabels is required": {
			obj: config(), wantMsgs: []string{"spec.identityLabels"},
		},
		"identityLabels are unique": {
			obj: config("app", "app"), wantMsgs: []string{"spec.identityLabels", "Duplicate value"},
		},
		"identityLabels have at most 16 keys": {
			obj:      config("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"),
			wantMsgs: []string{"spec.identityLabels", "must have at most 16 items"},
		},
		"identityLabels are label keys": {
			obj: config("app.kubernetes.io/name", "not a key!"), wantMsgs: []string{"every identity label must be a valid label key"},
		},
		"identityLabels items are non-empty": {
			obj: config(""), wantMsgs: []string{"spec.identityLabels[0]", "at least 1 chars long"},
		},
		"MetricsSource type is required": {
			obj:      &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: uniq("ms")}},
			wantMsgs: []string{"spec.type"},
		},
		"MetricsSource reservoirSize is at least 1": {
			obj: &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: uniq("ms")},
				Spec: ballastv1.MetricsSourceSpec{Type: "kubernetesMetrics", Config: ballastv1.MetricsSourceConfig{ReservoirSize: -5}}},
			wantMsgs: []string{"spec.config.reservoirSize", "should be greater than or equal to 1"},
		},
		"metrics field is request or limit": {
			obj: metric(func(m *ballastv1.MetricSpec) { m.Field = "target" }), wantMsgs: []string{"spec.metrics[0].field", `"request", "limit"`},
		},
		"metrics aggregation is in its enum": {
			obj: metric(func(m *ballastv1.MetricSpec) { m.Aggregation = "p42" }), wantMsgs: []string{"spec.metrics[0].aggregation", "p99"},
		},
		"metrics resource is required": {
			obj: metric(func(m *ballastv1.MetricSpec) { m.Resource = "" }), wantMsgs: []string{"spec.metrics[0].resource"},
		},
		"metrics source is required": {
			obj: metric(func(m *ballastv1.MetricSpec) { m.Source = "" }), wantMsgs: []string{"spec.metrics[0].source"},
		},
		"metrics has at most 32 entries": {
			obj: policy(func(s *ballastv1.ResourcePolicySpec) {
				for len(s.Metrics) <= 32 {
					s.Metrics = append(s.Metrics, s.Metrics[0])
				}
			}),
			wantMsgs: []string{"spec.metrics", "must have at most 32 items"},
		},
		"readiness minDataPoints is at least 1": {
			obj:      policy(func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MinDataPoints = -1 }),
			wantMsgs: []string{"spec.readiness.minDataPoints", "should be greater than or equal to 1"},
		},
		"selector kinds has at most 32 entries": {
			obj:      policy(func(s *ballastv1.ResourcePolicySpec) { s.Selector.Kinds = make([]string, 33) }),
			wantMsgs: []string{"spec.selector.kinds", "must have at most 32 items"},
		},
		"profile state is Accruing or Sufficient": {
			status:   &ballastv1.WorkloadProfileStatus{State: "Ready"},
			wantMsgs: []string{"status.state", `"Accruing", "Sufficient"`},
		},
		"profile policyRef kind is a policy kind": {
			status:   &ballastv1.WorkloadProfileStatus{PolicyRef: &ballastv1.PolicyRef{Kind: "Deployment", Name: "x"}},
			wantMsgs: []string{"status.policyRef.kind"},
		},
		"profile policyRef namespace matches its kind": {
			status:   &ballastv1.WorkloadProfileStatus{PolicyRef: &ballastv1.PolicyRef{Kind: "ResourcePolicy", Name: "x"}},
			wantMsgs: []string{"namespace is required for a ResourcePolicy"},
		},
		"profile counts are not negative": {
			status:   &ballastv1.WorkloadProfileStatus{ActivePods: -1},
			wantMsgs: []string{"status.activePods", "should be greater than or equal to 0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, cx := srv.Kube.Client, ctx(t)
			var err error
			if tc.status != nil {
				wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: uniq("wp")}}
				if err := c.Create(cx, wp); err != nil {
					t.Fatal(err)
				}
				wp.Status = *tc.status
				err = c.Status().Update(cx, wp)
			} else {
				err = c.Create(cx, tc.obj)
			}
			if err == nil {
				t.Fatal("the API server accepted the object")
			}
			for _, m := range tc.wantMsgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}
