package harness

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// WebhookConfiguration is the MutatingWebhookConfiguration of SPEC §7.1 pointing at url
// (loopback servers in tests and the sandbox; the chart uses the webhook Service instead).
func WebhookConfiguration(name, url, releaseNamespace string) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         ballastv1.WebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}},
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: ballastv1.ModeLabel, Operator: metav1.LabelSelectorOpExists}}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{releaseNamespace}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			TimeoutSeconds:          ptr.To(int32(5)),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		}},
	}
}
