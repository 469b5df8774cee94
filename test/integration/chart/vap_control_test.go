package chart

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/certs"
	"github.com/ballastk8s/ballast/pkg/control/resize"
	"github.com/ballastk8s/ballast/test/harness"
)

// limitsRelease is the fullname of the render whose RBAC and policies these tests apply.
const limitsRelease = "vap-limits"

// applyControlLimits renders the chart (Understudy on, built-in certificates), creates every
// ClusterRole, Role, binding, Secret and ValidatingAdmissionPolicy(Binding) of ballast-control
// on the real API server, and returns a client impersonating ballast-control's ServiceAccount.
func applyControlLimits(t *testing.T, cx context.Context) (client.Client, *manifests) {
	t.Helper()
	admin := srv.Kube.Client
	m := newHelm(t).mustTemplate(t, "--set", "fullnameOverride="+limitsRelease, "--set", "understudy.enabled=true",
		"--set", "certManager.enabled=false", "--set", "hpa.scaleTarget=true")
	if err := admin.Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	kinds := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
		"Secret": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	for _, k := range m.keys() {
		o := m.byKey[k]
		if !kinds[o.Kind] || !strings.HasPrefix(o.Name, limitsRelease) || o.Name == limitsRelease+"-valkey-auth" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(o.JSON, &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := admin.Create(cx, u); err != nil {
			t.Fatalf("creating the chart's %s: %v", k, err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), u) })
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigAs(t, serviceAccountUser(limitsRelease)))
	if err != nil {
		t.Fatal(err)
	}
	sa, err := client.New(cfg, client.Options{Scheme: srv.Kube.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return sa, m
}

// deniedBy reports whether err is the API server's denial by the policy named policy.
func deniedBy(err error, policy string) bool {
	return err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), policy)
}

// probe offsets the values untilDenied's tries write from the ones a test refuses later: a
// try that passes before the policy is loaded must not make a later refused write a no-op.
const probe = 1000

// untilDenied waits until the asynchronously loaded policy denies try (each call may
// change what it writes, so a refused write is never retried identically).
func untilDenied(t *testing.T, policy, what string, try func(n int) error) {
	t.Helper()
	n := 0
	harness.Eventually(t, 30*time.Second, policy+" denies "+what, func() error {
		n++
		err := try(n)
		if deniedBy(err, policy) {
			return nil
		}
		return errString(what + " not denied yet: " + errText(err))
	})
}

func mergePatch(t *testing.T, body any) client.Patch {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return client.RawPatch(types.MergePatchType, b)
}

// TestControlWritePolicies: as ballast-control's ServiceAccount (impersonated), against the
// real API server with the chart's RBAC and policies, the writes Ballast makes pass and any
// other change of a Deployment, Node, resized pod or webhook configuration is denied.
func TestControlWritePolicies(t *testing.T) {
	cx := ctx(t)
	sa, _ := applyControlLimits(t, cx)
	t.Run("deployments", func(t *testing.T) { checkDeploymentPolicy(t, cx, sa) })
	t.Run("nodes", func(t *testing.T) { checkNodePolicy(t, cx, sa) })
	t.Run("resizes", func(t *testing.T) { checkResizePolicy(t, cx, sa) })
	t.Run("webhooks", func(t *testing.T) { checkWebhookPolicy(t, cx, sa) })
	t.Run("hpas", func(t *testing.T) { checkHPAPolicy(t, cx, sa) })
}

func checkDeploymentPolicy(t *testing.T, cx context.Context, sa client.Client) {
	admin := srv.Kube.Client
	policy := limitsRelease + "-control-deployment-patches"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vap-deployments"}}
	if err := admin.Create(cx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web", Labels: labels,
			Annotations: map[string]string{"team.example/owner": "shop"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}},
	}
	if err := admin.Create(cx, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), d) })
	key := client.ObjectKeyFromObject(d)
	patch := func(c client.Client, body any) error {
		return c.Patch(cx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, mergePatch(t, body))
	}
	image := func(n int) any {
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "evil.example/x:" + strconv.Itoa(n)}}}}}}
	}
	untilDenied(t, policy, "a pod template change", func(n int) error { return patch(sa, image(probe+n)) })

	// What Understudy writes: the surge with its state (one write), the scale-back, the
	// state's removal; and the resize controller's predicted-requests annotation.
	allowed := []struct {
		name string
		body any
	}{
		{"the opt-in surge with its state", map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{ballastv1.Prefix + "relocation": `{"originalReplicas":2}`}},
			"spec":     map[string]any{"replicas": 3}}},
		{"the scale-back", map[string]any{"spec": map[string]any{"replicas": 2}}},
		{"removing the state", map[string]any{"metadata": map[string]any{"annotations": map[string]any{ballastv1.Prefix + "relocation": nil}}}},
		{"the predicted requests for consolidators", map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			resize.PredictedRequestsAnnotation: `{"cpu":"300m","memory":"192Mi"}`}}}},
	}
	for _, a := range allowed {
		if err := patch(sa, a.body); err != nil {
			t.Errorf("%s: ballast-control's own write was refused: %v", a.name, err)
		}
	}
	refused := map[string]any{
		"the image":                image(0),
		"the ServiceAccount":       map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"serviceAccountName": "admin"}}}},
		"paused":                   map[string]any{"spec": map[string]any{"paused": true}},
		"the strategy":             map[string]any{"spec": map[string]any{"strategy": map[string]any{"type": "Recreate", "rollingUpdate": nil}}},
		"replicas and the image":   map[string]any{"spec": map[string]any{"replicas": 5, "template": image(1).(map[string]any)["spec"].(map[string]any)["template"]}},
		"a label":                  map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "evil"}}},
		"a foreign annotation":     map[string]any{"metadata": map[string]any{"annotations": map[string]any{"team.example/owner": "attacker"}}},
		"removing a foreign one":   map[string]any{"metadata": map[string]any{"annotations": map[string]any{"team.example/owner": nil}}},
		"a finalizer":              map[string]any{"metadata": map[string]any{"finalizers": []string{"example.com/hold"}}},
		"the revision history cap": map[string]any{"spec": map[string]any{"revisionHistoryLimit": 0}},
	}
	for name, body := range refused {
		if err := patch(sa, body); !deniedBy(err, policy) {
			t.Errorf("changing %s as ballast-control: err = %v, want a denial by %s", name, err, policy)
		}
	}
	// Nobody else is judged.
	if err := patch(admin, image(2)); err != nil {
		t.Errorf("the policy must bind only ballast-control's ServiceAccount: %v", err)
	}
	got := &appsv1.Deployment{}
	if err := admin.Get(cx, key, got); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 2 || got.Spec.Template.Spec.ServiceAccountName != "" || got.Spec.Paused || got.Labels["app"] != "web" {
		t.Errorf("a refused change reached the Deployment: replicas %d, spec %+v, labels %v", *got.Spec.Replicas, got.Spec, got.Labels)
	}
}

func checkNodePolicy(t *testing.T, cx context.Context, sa client.Client) {
	admin := srv.Kube.Client
	policy := limitsRelease + "-control-node-patches"
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "vap-node", Labels: map[string]string{"zone": "a"},
			Annotations: map[string]string{"team.example/owner": "infra"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
			PodPreemptionPolicy: &corev1.NodePodPreemptionPolicy{DisableResizePreemption: []string{"autoscaler.example/hold"}}},
	}
	if err := admin.Create(cx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), node) })
	if err := admin.Get(cx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if node.Spec.PodPreemptionPolicy == nil {
		t.Fatal("the API server dropped spec.podPreemptionPolicy: the test needs InPlacePodVerticalScalingSchedulerPreemption on")
	}
	patch := func(c client.Client, body any) error {
		return c.Patch(cx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}, mergePatch(t, body))
	}
	taint := func(n int) any {
		return map[string]any{"spec": map[string]any{"taints": []any{map[string]any{
			"key": "dedicated", "value": "db-" + strconv.Itoa(n), "effect": "NoSchedule"}}}}
	}
	untilDenied(t, policy, "a taint change", func(n int) error { return patch(sa, taint(probe+n)) })

	// The guard as the resize planner holds it (server-side apply of its key under its field
	// manager) and releases it (the same apply without the field).
	hold := corev1ac.Node(node.Name).WithSpec(corev1ac.NodeSpec().WithPodPreemptionPolicy(
		corev1ac.NodePodPreemptionPolicy().WithDisableResizePreemption(ballastv1.ResizeGuardKey)))
	if err := sa.Apply(cx, hold, client.FieldOwner(ballastv1.FieldManager)); err != nil {
		t.Errorf("holding the guard was refused: %v", err)
	}
	got := &corev1.Node{}
	if err := admin.Get(cx, client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	if p := got.Spec.PodPreemptionPolicy; p == nil || len(p.DisableResizePreemption) != 2 {
		t.Errorf("guard not held beside the other owner's key: %+v", p)
	}
	if err := sa.Apply(cx, corev1ac.Node(node.Name), client.FieldOwner(ballastv1.FieldManager)); err != nil {
		t.Errorf("releasing the guard was refused: %v", err)
	}
	if err := patch(sa, map[string]any{"metadata": map[string]any{"annotations": map[string]any{ballastv1.Prefix + "note": "x"}}}); err != nil {
		t.Errorf("a Ballast annotation was refused: %v", err)
	}
	refused := map[string]any{
		"a taint":               taint(0),
		"unschedulable":         map[string]any{"spec": map[string]any{"unschedulable": true}},
		"another owner's key":   map[string]any{"spec": map[string]any{"podPreemptionPolicy": map[string]any{"disableResizePreemption": []string{}}}},
		"a key of another name": map[string]any{"spec": map[string]any{"podPreemptionPolicy": map[string]any{"disableResizePreemption": []string{"autoscaler.example/hold", "evil.example/x"}}}},
		"a label":               map[string]any{"metadata": map[string]any{"labels": map[string]any{"zone": "b"}}},
		"a foreign annotation":  map[string]any{"metadata": map[string]any{"annotations": map[string]any{"team.example/owner": nil}}},
	}
	for name, body := range refused {
		if err := patch(sa, body); !deniedBy(err, policy) {
			t.Errorf("changing %s as ballast-control: err = %v, want a denial by %s", name, err, policy)
		}
	}
	if err := patch(admin, taint(1)); err != nil {
		t.Errorf("the policy must bind only ballast-control's ServiceAccount: %v", err)
	}
}

func checkResizePolicy(t *testing.T, cx context.Context, sa client.Client) {
	admin := srv.Kube.Client
	policy := limitsRelease + "-control-pod-resizes"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vap-resizes"}}
	if err := admin.Create(cx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The API server resizes only pods bound to a Node it knows.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vap-resize-node"}}
	if err := admin.Create(cx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), node) })
	room := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Capacity, node.Status.Allocatable = room, room
	if err := admin.Status().Update(cx, node); err != nil {
		t.Fatal(err)
	}
	mk := func(name, mode string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{NodeName: "vap-resize-node", Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		}
		if mode != "" {
			p.Labels[ballastv1.ModeLabel] = mode
		}
		if err := admin.Create(cx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		return p
	}
	resize := func(p *corev1.Pod, cpu string) error {
		body := []byte(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`)
		return sa.SubResource("resize").Patch(cx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}},
			client.RawPatch(types.StrategicMergePatchType, body))
	}
	plain, apply, enrolled := mk("plain", ""), mk("apply", ballastv1.ModeApply), mk("enrolled", ballastv1.ModeResize)
	untilDenied(t, policy, "a resize of an unenrolled pod", func(n int) error { return resize(plain, strings.Repeat("1", 1+n%3)+"50m") })
	if err := resize(apply, "150m"); !deniedBy(err, policy) {
		t.Errorf("resizing a pod in mode apply: err = %v, want a denial by %s", err, policy)
	}
	if err := resize(enrolled, "150m"); err != nil {
		t.Errorf("resizing a pod in mode resize was refused: %v", err)
	}
	// An apply-mode pod boosted at admission: Ballast may take its own boost back (cpu
	// lowered), not raise it, not touch memory, and not once the boost has ended.
	boosted := func(name, ann string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: map[string]string{"app": name, ballastv1.ModeLabel: ballastv1.ModeApply},
				Annotations: map[string]string{ballastv1.StartupBoostAnnotation: ann}},
			Spec: corev1.PodSpec{NodeName: "vap-resize-node", Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("800m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
		}
		if err := admin.Create(cx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		return p
	}
	rec := `{"readyFor":"1m0s","containers":{"app":{"request":"200m","limit":"400m","boostedRequest":"400m","boostedLimit":"800m"}}}`
	active := boosted("boosted", rec)
	ended := boosted("ended", strings.TrimSuffix(rec, "}")+`,"ended":"2026-12-04T17:00:00Z"}`)
	patch := func(p *corev1.Pod, body string) error {
		return sa.SubResource("resize").Patch(cx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}},
			client.RawPatch(types.StrategicMergePatchType, []byte(body)))
	}
	raise := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m"},"limits":{"cpu":"800m"}}}]}}`
	memory := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m","memory":"32Mi"},"limits":{"cpu":"400m","memory":"128Mi"}}}]}}`
	unboost := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"400m"}}}]}}`
	if err := patch(active, raise); !deniedBy(err, policy) {
		t.Errorf("raising a boosted apply pod's cpu: err = %v, want a denial by %s", err, policy)
	}
	if err := patch(active, memory); !deniedBy(err, policy) {
		t.Errorf("changing a boosted apply pod's memory: err = %v, want a denial by %s", err, policy)
	}
	if err := patch(ended, unboost); !deniedBy(err, policy) {
		t.Errorf("resizing an apply pod whose boost ended: err = %v, want a denial by %s", err, policy)
	}
	if err := patch(active, unboost); err != nil {
		t.Errorf("taking a startup boost back was refused: %v", err)
	}
}

func checkWebhookPolicy(t *testing.T, cx context.Context, sa client.Client) {
	admin := srv.Kube.Client
	policy := limitsRelease + "-control-webhook-cabundle"
	// Stand-ins for the release's configurations: the same name, rules no request matches.
	hook := func() (admissionregistrationv1.WebhookClientConfig, []admissionregistrationv1.RuleWithOperations) {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/never")},
			[]admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"vap.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}
	}
	cc, rules := hook()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: limitsRelease, Labels: map[string]string{"app": "ballast"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.vap.example.com", ClientConfig: cc, Rules: rules,
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: limitsRelease},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "b.vap.example.com", ClientConfig: cc, Rules: rules,
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}
	for _, o := range []client.Object{mwc, vwc} {
		if err := admin.Create(cx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
	}
	patchM := func(body any) error {
		return sa.Patch(cx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: limitsRelease}}, mergePatch(t, body))
	}
	patchV := func(body any) error {
		return sa.Patch(cx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: limitsRelease}}, mergePatch(t, body))
	}
	failOpen := func(n int) any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "evil-" + strconv.Itoa(n)}}}
	}
	untilDenied(t, policy, "a label change", func(n int) error { return patchM(failOpen(probe + n)) })

	// The real certificate manager, as ballast-control: it fills the chart's empty Secret
	// (no create on Secrets) and writes both caBundles.
	m := certs.New(sa, certs.Options{Namespace: namespace, SecretName: limitsRelease + "-webhook-cert", Webhook: limitsRelease,
		Hosts: []string{"vap-limits-webhook.ballast-system.svc"}})
	if err := m.Ensure(cx); err != nil {
		t.Fatalf("the certificate manager as ballast-control: %v", err)
	}
	for _, o := range []client.Object{mwc, vwc} {
		if err := admin.Get(cx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
	if len(mwc.Webhooks[0].ClientConfig.CABundle) == 0 || len(vwc.Webhooks[0].ClientConfig.CABundle) == 0 {
		t.Errorf("caBundle not written: mutating %d bytes, validating %d", len(mwc.Webhooks[0].ClientConfig.CABundle), len(vwc.Webhooks[0].ClientConfig.CABundle))
	}

	webhooks := func(w map[string]any) any { return map[string]any{"webhooks": []any{w}} }
	base := func(name string, extra map[string]any) map[string]any {
		w := map[string]any{"name": name, "admissionReviewVersions": []string{"v1"}, "sideEffects": "None", "failurePolicy": "Ignore",
			"clientConfig": map[string]any{"url": "https://127.0.0.1:1/never"},
			"rules":        []any{map[string]any{"operations": []string{"CREATE"}, "apiGroups": []string{"vap.example.com"}, "apiVersions": []string{"v1"}, "resources": []string{"widgets"}}}}
		for k, v := range extra {
			w[k] = v
		}
		return w
	}
	refused := map[string]func() error{
		"the failure policy": func() error {
			return patchM(webhooks(base("a.vap.example.com", map[string]any{"failurePolicy": "Fail"})))
		},
		"the client URL": func() error {
			return patchM(webhooks(base("a.vap.example.com", map[string]any{"clientConfig": map[string]any{"url": "https://evil.example/x"}})))
		},
		"the rules (validating)": func() error {
			return patchV(webhooks(base("b.vap.example.com", map[string]any{"rules": []any{map[string]any{"operations": []string{"*"}, "apiGroups": []string{"*"}, "apiVersions": []string{"*"}, "resources": []string{"*"}}}})))
		},
		"a webhook's name": func() error { return patchV(webhooks(base("c.vap.example.com", nil))) },
		"an annotation": func() error {
			return patchM(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"x": "y"}}})
		},
		"a second webhook": func() error {
			return patchM(map[string]any{"webhooks": []any{base("a.vap.example.com", nil), base("z.vap.example.com", nil)}})
		},
		"no webhooks at all": func() error { return patchV(map[string]any{"webhooks": []any{}}) },
	}
	for name, f := range refused {
		if err := f(); !deniedBy(err, policy) {
			t.Errorf("changing %s as ballast-control: err = %v, want a denial by %s", name, err, policy)
		}
	}
	// A stale caBundle (as after a CA change) is put right again: a caBundle-only change
	// of a configuration that already has one passes too.
	if err := admin.Patch(cx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: limitsRelease}},
		mergePatch(t, webhooks(base("a.vap.example.com", map[string]any{"clientConfig": map[string]any{"url": "https://127.0.0.1:1/never", "caBundle": "c3RhbGU="}})))); err != nil {
		t.Fatal(err)
	}
	if err := m.Ensure(cx); err != nil {
		t.Errorf("restoring the caBundle as ballast-control: %v", err)
	}
	// Without the chart's Secret, ballast-control cannot make one and says why.
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: limitsRelease + "-webhook-cert"}}
	if err := admin.Delete(cx, sec); err != nil {
		t.Fatal(err)
	}
	if err := m.Ensure(cx); err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is missing and may not be created") {
		t.Errorf("Ensure without the chart's Secret: err = %v, want a forbidden create naming the missing Secret", err)
	}
	if err := admin.Patch(cx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: limitsRelease}},
		mergePatch(t, failOpen(1))); err != nil {
		t.Errorf("the policy must bind only ballast-control's ServiceAccount: %v", err)
	}
}
