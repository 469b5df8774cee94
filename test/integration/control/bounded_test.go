package control

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestBoundedInputs (issue 28): what tenants and callers send is bounded. A ResourcePolicy
// is held to BallastConfig spec.policyFloors and a ClusterResourcePolicy to the absolute
// floors, through the real API server; and thousands of admissions with random labels, or
// forged AdmissionReviews naming random namespaces, leave the metric series count flat.
func TestBoundedInputs(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	e := startEnv(t, kube, srv.Valkey.URL())
	defer e.stop() // before the API server goes
	t.Run("policy floors", func(t *testing.T) { policyFloors(t, e) })
	t.Run("random labels add no series", func(t *testing.T) { randomLabelsAddNoSeries(t, e) })
}

// validOf waits until the policy obj reports Valid with status and (for False) reason and
// a message containing msg.
func validOf(t *testing.T, e *env, obj client.Object, conds func() []metav1.Condition, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%s is Valid=%s %s", obj.GetName(), status, reason), func() error {
		if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		c := meta.FindStatusCondition(conds(), ballastv1.ConditionValid)
		if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, msg) ||
			c.ObservedGeneration != obj.GetGeneration() {
			return fmt.Errorf("Valid condition %+v", c)
		}
		return nil
	})
}

func setFloors(t *testing.T, e *env, f ballastv1.PolicyFloors) {
	t.Helper()
	cfg := &ballastv1.BallastConfig{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: ballastv1.BallastConfigName}, cfg); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cfg.DeepCopy())
	cfg.Spec.PolicyFloors = f
	if err := e.c.Patch(context.Background(), cfg, patch); err != nil {
		t.Fatal(err)
	}
}

func policyFloors(t *testing.T, e *env) {
	// The chart's defaults (the suite's env lowers them for its fast ResourcePolicies).
	setFloors(t, e, ballastv1.PolicyFloors{MinResizeInterval: "1m", MinTimeSpan: "1h", MinThreshold: "1%"})
	t.Cleanup(func() { setFloors(t, e, testFloors) })
	ns := e.namespace(t, "floors")
	withInterval := func(v string) ballastv1.ResourcePolicySpec {
		s := fastPolicy()
		s.Readiness.MinTimeSpan = "" // 24h by default: above every floor here
		s.Selector.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "floors"}}
		s.Behaviors.Resize.Interval = v
		return s
	}
	spin := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "spin", Namespace: ns}, Spec: withInterval("1ns")}
	fast := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "fast", Namespace: ns}, Spec: withInterval("30s")}
	crpFast := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "floors-fast"}, Spec: withInterval("30s")}
	crpSpin := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "floors-spin"}, Spec: withInterval("1ns")}
	for _, o := range []client.Object{spin, fast, crpFast, crpSpin} {
		mustCreate(t, e.c, o)
		t.Cleanup(func() { _ = e.c.Delete(context.Background(), o) })
	}
	rpConds := func(p *ballastv1.ResourcePolicy) func() []metav1.Condition {
		return func() []metav1.Condition { return p.Status.Conditions }
	}
	crpConds := func(p *ballastv1.ClusterResourcePolicy) func() []metav1.Condition {
		return func() []metav1.Condition { return p.Status.Conditions }
	}
	validOf(t, e, spin, rpConds(spin), metav1.ConditionFalse, policy.ReasonInvalidDuration,
		`behaviors.resize.interval "1ns": below the cluster floor 1m (BallastConfig spec.policyFloors.minResizeInterval)`)
	validOf(t, e, fast, rpConds(fast), metav1.ConditionFalse, policy.ReasonInvalidDuration,
		`behaviors.resize.interval "30s": below the cluster floor 1m`)
	// The admin's own policies keep their freedom down to the absolute floor.
	validOf(t, e, crpFast, crpConds(crpFast), metav1.ConditionTrue, policy.ReasonValid, "")
	validOf(t, e, crpSpin, crpConds(crpSpin), metav1.ConditionFalse, policy.ReasonInvalidDuration,
		`behaviors.resize.interval "1ns": below the absolute floor 1s`)

	// Admission skips the floored ResourcePolicy: the pod falls to a cluster policy.
	admit := func() string {
		p := pod("", ns, "measure", "floors", "x")
		p.GenerateName = "floors-"
		mustCreate(t, e.c, p)
		return p.Annotations[ballastv1.PolicyRefAnnotation]
	}
	if got := admit(); got == ns+"/fast" || got == ns+"/spin" {
		t.Errorf("pod governed by %q, a ResourcePolicy below the floor", got)
	}

	// Lowering the floor re-validates without touching the policies, and admission follows.
	setFloors(t, e, ballastv1.PolicyFloors{MinResizeInterval: "10s", MinTimeSpan: "1h", MinThreshold: "1%"})
	validOf(t, e, fast, rpConds(fast), metav1.ConditionTrue, policy.ReasonValid, "")
	validOf(t, e, spin, rpConds(spin), metav1.ConditionFalse, policy.ReasonInvalidDuration, "below the cluster floor 10s")
	eventually(t, 30*time.Second, "admission resolves to the re-validated ResourcePolicy", func() error {
		if got := admit(); got != ns+"/fast" {
			return fmt.Errorf("policy-ref %q", got)
		}
		return nil
	})
}

// randomLabelsAddNoSeries sends 5,000 dry-run pod creates with random identity label
// values through the API server (dryRun=All still calls mutating webhooks) into existing
// namespaces, and 500 forged AdmissionReviews naming random namespaces straight to the
// webhook port; the series count of the control plane's registry (what /metrics serves)
// may grow only by a small constant.
func randomLabelsAddNoSeries(t *testing.T, e *env) {
	ctx := context.Background()
	const namespaces, admissions, forged, slack = 10, 5000, 500, 10
	var nss []string
	for range namespaces {
		nss = append(nss, e.namespace(t, "flood"))
	}
	rng := rand.New(rand.NewPCG(28, 5000))
	var mu sync.Mutex
	word := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("x%08x", rng.Uint32())
	}
	dryRun := func(ns, name, component string) error {
		p := pod("", ns, "apply", name, component)
		p.GenerateName = "flood-"
		return e.c.Create(ctx, p, client.DryRunAll)
	}
	// Warm up: one admission per namespace with fixed labels, so every (result, namespace)
	// series a flood can legitimately touch exists before counting.
	for _, ns := range nss {
		if err := dryRun(ns, "warm", "up"); err != nil {
			t.Fatal(err)
		}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	forge(t, e, hc, "warm-up-namespace", "warm", "up")
	before := seriesCount(t, e)

	parallel(t, admissions, func(i int) error { return dryRun(nss[i%len(nss)], word(), word()) })
	afterDryRun := seriesCount(t, e)
	for range forged {
		forge(t, e, hc, word(), word(), word())
	}
	after := seriesCount(t, e)
	t.Logf("series: %d before, %d after %d dry-run admissions with random labels, %d after %d forged reviews with random namespaces",
		before, afterDryRun, admissions, after, forged)
	if afterDryRun-before > slack || after-before > slack {
		t.Errorf("series grew by %d (dry-run flood) and %d (with forged reviews); want ≤ %d", afterDryRun-before, after-before, slack)
	}
	if n := e.counterTotal(t, "ballast_webhook_mutations_total"); n < admissions+forged {
		t.Errorf("ballast_webhook_mutations_total = %v, want every admission counted (≥ %d)", n, admissions+forged)
	}
}

// seriesCount is the number of series of every metric family in the control plane's
// registry.
func seriesCount(t *testing.T, e *env) int {
	t.Helper()
	n := 0
	for _, f := range e.gather(t) {
		n += len(f.GetMetric())
	}
	return n
}

// parallel runs f(0..n-1) on eight workers and fails on the first error.
func parallel(t *testing.T, n int, f func(int) error) {
	t.Helper()
	next := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// forge posts an AdmissionReview for an apply-mode pod of namespace ns straight to the
// webhook's port, as any workload that can reach it could; the webhook must answer it
// (allowing the pod) like any other.
func forge(t *testing.T, e *env, c *http.Client, ns, name, component string) {
	t.Helper()
	raw, err := json.Marshal(pod("forged", ns, "apply", name, component))
	if err != nil {
		t.Fatal(err)
	}
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprintf("forged-%s-%s", ns, name)), Namespace: ns, Name: "forged",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Post(fmt.Sprintf("https://127.0.0.1:%d%s", e.port, ballastv1.WebhookPath), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := admissionv1.AdmissionReview{}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil || !out.Response.Allowed {
		t.Fatalf("forged review: status %d, %v, %+v", resp.StatusCode, err, out.Response)
	}
}
