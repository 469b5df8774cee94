package chart

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/resize"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestControlPodPatchPolicy applies the chart's ValidatingAdmissionPolicy and ballast-control's
// ClusterRole to the real API server and patches a pod as ballast-control's ServiceAccount
// (impersonated): the patches ballast-control sends (enrollment's profile-ref/policy-ref,
// resize's state annotations, Understudy's deletion cost) pass; a label, spec, finalizer or
// foreign-annotation change is denied, for that ServiceAccount only.
func TestControlPodPatchPolicy(t *testing.T) {
	const full = "vap-ballast"
	h := newHelm(t)
	cx := ctx(t)
	admin := srv.Kube.Client
	m := h.mustTemplate(t, "--set", "fullnameOverride="+full)

	policyName := full + "-control-pod-patches"
	objs := []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}}
	for i, kn := range [][2]string{{"ClusterRole", full}, {"ClusterRoleBinding", full},
		{"ValidatingAdmissionPolicy", policyName}, {"ValidatingAdmissionPolicyBinding", policyName}} {
		m.decode(t, kn[0], kn[1], objs[i])
		if err := admin.Create(cx, objs[i]); err != nil {
			t.Fatalf("creating the chart's %s: %v", kn[0], err)
		}
		o := objs[i]
		t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vap-pods"}}
	if err := admin.Create(cx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"team.example/owner": "shop"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}},
	}
	if err := admin.Create(cx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigAs(t, "system:serviceaccount:"+namespace+":"+full))
	if err != nil {
		t.Fatal(err)
	}
	sa, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(c client.Client, body any) error {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		return c.Patch(cx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: pod.Name}},
			client.RawPatch(types.MergePatchType, b))
	}
	denied := func(err error) bool {
		return err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), policyName)
	}
	labels := func(v string) any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": v}}}
	}

	// The API server loads a new policy asynchronously: wait until it denies a label change.
	try := 0
	harness.Eventually(t, 30*time.Second, "the policy denies ballast-control a label change", func() error {
		try++
		err := patch(sa, labels("web-"+string(rune('a'+try%26))))
		if denied(err) {
			return nil
		}
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("label patch as ballast-control: %v", err)
		}
		return errString("label patch not denied yet: " + errText(err))
	})

	ann := func(kv map[string]any) any { return map[string]any{"metadata": map[string]any{"annotations": kv}} }
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rawPatch := func(b []byte, err error) any {
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	allowed := map[string]any{
		"enrollment's profile-ref and policy-ref": ann(map[string]any{
			ballastv1.ProfileRefAnnotation: "web-0123456789", ballastv1.PolicyRefAnnotation: "default"}),
		"resize blocked":              rawPatch(resize.ForTransition(resizeplan.Transition{To: ballastv1.ResizeStateInfeasible, Message: "node too small"}, now).MergePatch("")),
		"resize applied (clears)":     rawPatch(resize.Applied(now).MergePatch("")),
		"understudy deletion cost":    ann(map[string]any{ballastv1.PodDeletionCostAnnotation: ballastv1.DoomedPodDeletionCost}),
		"removing its own annotation": ann(map[string]any{ballastv1.PolicyRefAnnotation: nil}),
	}
	for name, body := range allowed {
		if err := patch(sa, body); err != nil {
			t.Errorf("%s: ballast-control's own patch was refused: %v", name, err)
		}
	}
	refused := map[string]any{
		"a label":                labels("evil"),
		"the spec (deadline)":    map[string]any{"spec": map[string]any{"activeDeadlineSeconds": 30}},
		"the spec (image)":       map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "evil.example/x:1"}}}},
		"a foreign annotation":   ann(map[string]any{"team.example/owner": "attacker"}),
		"removing a foreign one": ann(map[string]any{"team.example/owner": nil}),
		"a new foreign one":      ann(map[string]any{"sidecar.example/inject": "true"}),
		"a finalizer":            map[string]any{"metadata": map[string]any{"finalizers": []string{"example.com/hold"}}},
	}
	for name, body := range refused {
		if err := patch(sa, body); !denied(err) {
			t.Errorf("changing %s as ballast-control: err = %v, want a denial by %s", name, err, policyName)
		}
	}
	// Anyone else is not restricted by this policy.
	if err := patch(admin, labels("web-admin")); err != nil {
		t.Errorf("the policy must bind only ballast-control's ServiceAccount: %v", err)
	}
	// pods/resize is another subresource: the policy never judges it (the API server may still
	// refuse a resize of a pod that is not running, for its own reasons).
	body := []byte(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"100m"}}}]}}`)
	err = sa.SubResource("resize").Patch(cx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: pod.Name}},
		client.RawPatch(types.StrategicMergePatchType, body))
	if err != nil && strings.Contains(err.Error(), policyName) {
		t.Errorf("the policy judged a pods/resize patch: %v", err)
	}
	got := &corev1.Pod{}
	if err := admin.Get(cx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations["team.example/owner"] != "shop" || got.Spec.Containers[0].Image != "registry.example/app:1" || len(got.Finalizers) != 0 {
		t.Errorf("a refused change reached the pod: %+v %+v", got.ObjectMeta, got.Spec.Containers[0])
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func errText(err error) string {
	if err == nil {
		return "accepted"
	}
	return err.Error()
}

// TestRenderRBACToggles: the policy can be turned off, and the agent's review permissions
// exist only while its debug endpoint does.
func TestRenderRBACToggles(t *testing.T) {
	h := newHelm(t)
	m := h.mustTemplate(t, "--set", "validatingAdmissionPolicy.enabled=false", "--set", "agent.debug.enabled=false")
	for _, k := range m.keys() {
		if strings.HasPrefix(k, "ValidatingAdmissionPolicy") {
			t.Errorf("%s rendered with validatingAdmissionPolicy.enabled=false", k)
		}
	}
	cr := &rbacv1.ClusterRole{}
	m.decode(t, "ClusterRole", "ballast-node", cr)
	for _, r := range cr.Rules {
		for _, res := range r.Resources {
			if res == "tokenreviews" || res == "subjectaccessreviews" {
				t.Errorf("agent may create %s with its debug endpoint off", res)
			}
		}
	}
	args, _, _ := storeWiring(t, m, "DaemonSet", "ballast-node")
	if !slices.Contains(args, "--debug-bind-address=0") {
		t.Errorf("agent args %q do not turn the debug endpoint off", args)
	}
}
