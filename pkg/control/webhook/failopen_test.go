package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

func testutilCount(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

var errInjected = errors.New("injected cache failure")

// sufficient creates the Sufficient profile of the apply request's pod and returns its name.
func (f *fixture) sufficient(t *testing.T) string {
	t.Helper()
	stamp := patches(f.h.Handle(context.Background(), request(t, ballastv1.ModeMeasure)))["/metadata/annotations"].(map[string]string)
	name := stamp[ballastv1.ProfileRefAnnotation]
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: ballastv1.WorkloadProfileStatus{
		State: ballastv1.StateSufficient, Containers: []ballastv1.ContainerProfile{{Name: "app",
			Recommendations: map[string]ballastv1.Recommendation{"cpu": {Request: "300m"}}}}}}
	if err := f.c.Create(context.Background(), wp); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestFailOpen: every internal failure on the admission path admits the pod (SPEC §7.2:
// the webhook denies for nothing but an invalid mode). Each case injects one fault into
// the real handler and checks that the pod is allowed, how (unchanged or with the
// bookkeeping annotations only, never a sizing patch), the result counted, and that the
// failure was the one injected (its log line). Turning any of these paths into a Deny
// fails its case.
func TestFailOpen(t *testing.T) {
	isProfile := func(o client.Object) bool { _, ok := o.(*ballastv1.WorkloadProfile); return ok }
	cases := map[string]struct {
		inject      func(f *fixture)
		result      string
		bookkeeping bool   // the bookkeeping annotations are still patched
		log         string // the failure's log line
	}{
		"a panic in the handler is recovered": {
			inject: func(f *fixture) {
				f.failGet = func(o client.Object) error {
					if isProfile(o) {
						panic("injected panic")
					}
					return nil
				}
			},
			result: ResultNotAvailable, log: "admission handler panicked",
		},
		"a resolver error admits unchanged": {
			inject: func(f *fixture) {
				f.failList = func(l client.ObjectList) error {
					if _, ok := l.(*ballastv1.ClusterResourcePolicyList); ok {
						return errInjected
					}
					return nil
				}
			},
			result: ResultNotAvailable, log: "resolving pod; admitting unchanged",
		},
		"a profile read error admits with bookkeeping only": {
			inject: func(f *fixture) {
				f.failGet = func(o client.Object) error {
					if isProfile(o) {
						return errInjected
					}
					return nil
				}
			},
			result: ResultNotAvailable, bookkeeping: true, log: "reading profile from cache",
		},
		"a bounds read error admits with bookkeeping only": {
			inject: func(f *fixture) {
				f.failList = func(l client.ObjectList) error {
					if _, ok := l.(*corev1.LimitRangeList); ok {
						return errInjected
					}
					return nil
				}
			},
			result: ResultNotAvailable, bookkeeping: true, log: "reading bounds from cache",
		},
		"a patch rendering failure admits unchanged": {
			inject: func(f *fixture) {
				f.h.render = func(*corev1.Pod, sizing.Result, map[string]string) ([]sizing.Operation, error) {
					return nil, errInjected
				}
			},
			result: ResultNotAvailable, log: "rendering patch; admitting unchanged",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, ballastConfig(), defaultPolicy())
			f.sufficient(t)
			tc.inject(f)
			resp := f.h.Handle(context.Background(), request(t, ballastv1.ModeApply))
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			ps := patches(resp)
			if _, ok := ps["/metadata/annotations"]; ok != tc.bookkeeping {
				t.Errorf("bookkeeping patched = %v, want %v: %v", ok, tc.bookkeeping, ps)
			}
			for path := range ps {
				if strings.Contains(path, "/resources") {
					t.Errorf("a failed admission sized the pod: %v", ps)
				}
			}
			if f.mutations(tc.result) != 1 {
				t.Errorf("result %q not counted", tc.result)
			}
			if !strings.Contains(f.logs.String(), tc.log) || !strings.Contains(f.logs.String(), `"level":"error"`) {
				t.Errorf("no error log %q:\n%s", tc.log, f.logs.String())
			}
		})
	}
}

// TestBoundedAdmission: the namespace's LimitRange (from the cache) bounds the patch, the
// bounded annotation says why and ballast_apply_bounded_total counts it.
func TestBoundedAdmission(t *testing.T) {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "floor", Namespace: "team"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Min: corev1.ResourceList{corev1.ResourceCPU: resourceMust("500m")}}}}}
	f := newFixture(t, ballastConfig(), defaultPolicy(), lr)
	name := f.sufficient(t) // recommends cpu 300m
	resp := f.h.Handle(context.Background(), request(t, ballastv1.ModeApply))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	ps := patches(resp)
	if !strings.Contains(jsonString(ps), `"500m"`) || strings.Contains(jsonString(ps), `"300m"`) {
		t.Errorf("patch not clamped to the LimitRange min 500m: %v", ps)
	}
	ann, _ := ps["/metadata/annotations"].(map[string]string)
	if got := ann[ballastv1.BoundedAnnotation]; !strings.Contains(got, "LimitRange floor Container: min 500m") {
		t.Errorf("bounded annotation = %q", got)
	}
	if n := testutilCount(f.m.Bounded.WithLabelValues(sizing.ReasonLimitRange, "cpu", "default", "team", name)); n != 1 {
		t.Errorf("ballast_apply_bounded_total{limit_range,cpu} = %v", n)
	}
}

// TestDryRunRenderFailure: in dry run a would-be patch that fails to render is logged as an
// error (not as a blank "would size" patch), the admission still counts as dry_run in both
// ballast_webhook_mutations_total and ballast_apply_skipped_total, and the pod gets its
// bookkeeping annotations and no sizing.
func TestDryRunRenderFailure(t *testing.T) {
	cases := map[string]struct {
		fail    bool
		wantLog string
		noLog   string
	}{
		"the would-be patch renders": {wantLog: "dry run: would size pod at admission", noLog: `"level":"error"`},
		"the would-be patch fails to render": {fail: true,
			wantLog: "dry run: rendering the would-be patch", noLog: "would size pod"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, ballastConfig(), defaultPolicy())
			profile := f.sufficient(t)
			f.h.dryRun = true
			if tc.fail {
				// Only the sizing-only render (no bookkeeping) fails: the dry run's.
				f.h.render = func(pod *corev1.Pod, r sizing.Result, bk map[string]string) ([]sizing.Operation, error) {
					if bk == nil {
						return nil, errInjected
					}
					return sizing.JSONPatch(pod, r, bk)
				}
			}
			resp := f.h.Handle(context.Background(), request(t, ballastv1.ModeApply))
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			ps := patches(resp)
			if _, ok := ps["/metadata/annotations"]; !ok {
				t.Errorf("bookkeeping not patched: %v", ps)
			}
			for path := range ps {
				if strings.Contains(path, "/resources") {
					t.Errorf("a dry run sized the pod: %v", ps)
				}
			}
			if f.mutations(ResultDryRun) != 1 {
				t.Errorf("result %q not counted", ResultDryRun)
			}
			if n := testutilCount(f.m.ApplySkipped.WithLabelValues("dry_run", "default", "team", profile)); n != 1 {
				t.Errorf("ballast_apply_skipped_total{dry_run} = %v, want 1", n)
			}
			logs := f.logs.String()
			if !strings.Contains(logs, tc.wantLog) || strings.Contains(logs, tc.noLog) {
				t.Errorf("logs lack %q or hold %q:\n%s", tc.wantLog, tc.noLog, logs)
			}
			if tc.fail && (!strings.Contains(logs, errInjected.Error()) || !strings.Contains(logs, `"dry_run":true`)) {
				t.Errorf("the error log lacks the cause or dry_run: true:\n%s", logs)
			}
		})
	}
}
