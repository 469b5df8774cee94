package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// evictionWebhook is Understudy's validating webhook as the chart renders it, pointing at
// url; ballast-control keeps its caBundle (builtin certificates, same name as the mutating one).
func evictionWebhook(name, url, releaseNamespace string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         ballastv1.EvictionWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{releaseNamespace}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			TimeoutSeconds:          ptr.To(int32(5)),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// control returns the running ballast-control process.
func (s *Sandbox) control() *harness.Proc {
	for i := len(s.procs) - 1; i >= 0; i-- {
		if p := s.procs[i]; p.Name == "ballast-control" || len(p.Name) > 16 && p.Name[:16] == "ballast-control-" {
			if done, _ := p.Exited(); !done {
				return p
			}
		}
	}
	return nil
}

// StopControl stops ballast-control (controllers and webhooks), like a crash of the only
// replica when kill is true (SIGKILL), or a clean stop.
func (s *Sandbox) StopControl(kill bool) {
	p := s.control()
	if p == nil {
		return
	}
	grace := 5 * time.Second
	if kill {
		grace = 0
	}
	p.Stop(grace)
}

// StartControl starts ballast-control again with the arguments of its first start, and
// waits until it is ready.
func (s *Sandbox) StartControl(ctx context.Context) error {
	var first *harness.Proc
	for _, p := range s.procs {
		if p.Name == "ballast-control" {
			first = p
		}
	}
	if first == nil {
		return fmt.Errorf("ballast-control was never started")
	}
	s.restarts++
	p, err := harness.StartProc(filepath.Join(s.Opts.Dir, "logs"), fmt.Sprintf("ballast-control-%d", s.restarts), first.Cmd.Path, first.Cmd.Args[1:]...)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	return harness.Poll(ctx, 60*time.Second, "ballast-control ready", func() error {
		if done, err := p.Exited(); done {
			return fmt.Errorf("ballast-control exited: %v (see %s)", err, p.Log)
		}
		return httpOK(s.healthURL)
	})
}

// DeploySingleton creates a one-replica Deployment that Ballast does not enroll; mut, when
// given, changes its pod template (e.g. a nodeSelector).
func (s *Sandbox) DeploySingleton(ctx context.Context, ns, name string, mut func(*corev1.PodSpec)) (*appsv1.Deployment, error) {
	if err := s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "app", Image: "sandbox.invalid/" + name + ":1"}},
					Tolerations:                   []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: ptr.To(int64(0)),
				},
			},
		},
	}
	if mut != nil {
		mut(&d.Spec.Template.Spec)
	}
	return d, s.Client.Create(ctx, d)
}
