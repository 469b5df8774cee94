package chart

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestRenderUnderstudy checks the eviction webhook and its RBAC (SPEC §15.4, §15.6), and
// that understudy.enabled=false renders neither.
func TestRenderUnderstudy(t *testing.T) {
	h := newHelm(t)
	m := h.mustTemplate(t)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	m.decode(t, "ValidatingWebhookConfiguration", fullname, vwc)
	side := admissionregistrationv1.SideEffectClassNoneOnDryRun
	want := []admissionregistrationv1.ValidatingWebhook{{
		Name: ballastv1.EvictionWebhookName,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: namespace, Name: "ballast-webhook", Path: ptr.To(ballastv1.EvictionWebhookPath), Port: ptr.To[int32](443),
		}},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}},
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{namespace},
		}}},
		SideEffects:             &side,
		TimeoutSeconds:          ptr.To[int32](5),
		AdmissionReviewVersions: []string{"v1"},
	}}
	if diff := cmp.Diff(want, vwc.Webhooks); diff != "" {
		t.Errorf("eviction webhook (-want +got):\n%s", diff)
	}
	role := &rbacv1.ClusterRole{}
	m.decode(t, "ClusterRole", fullname+"-understudy", role)
	grants := map[string][]string{}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			grants[res] = r.Verbs
		}
	}
	for res, verbs := range map[string][]string{
		"deployments": {"get", "list", "watch", "patch"}, "deployments/scale": nil, "nodes": {"get", "list", "watch"},
		"horizontalpodautoscalers": {"list", "watch"}, "understudies": {"get", "list", "watch"},
		"understudies/status": {"get", "update", "patch"},
		// defaults render built-in certificates (no cert-manager API under helm template),
		// so the control plane keeps this configuration's caBundle too.
		"validatingwebhookconfigurations": {"get", "patch"},
	} {
		if diff := cmp.Diff(verbs, grants[res]); diff != "" {
			t.Errorf("%s verbs (-want +got):\n%s", res, diff)
		}
	}

	off := h.mustTemplate(t, "--set", "understudy.enabled=false")
	for _, k := range off.keys() {
		if k == "ValidatingWebhookConfiguration/"+fullname || k == "ClusterRole/"+fullname+"-understudy" {
			t.Errorf("understudy.enabled=false still renders %s", k)
		}
	}
	dep := &appsv1.Deployment{}
	off.decode(t, "Deployment", fullname, dep)
	if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--understudy=false") {
		t.Errorf("understudy.enabled=false: control args %v lack --understudy=false", args)
	}
	m.decode(t, "Deployment", fullname, dep)
	if args := dep.Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--understudy=false") {
		t.Errorf("default control args disable understudy: %v", args)
	}
}
