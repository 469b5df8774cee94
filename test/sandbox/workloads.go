package sandbox

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// App is a Deployment the scenario runs.
type App struct {
	Name, Component, Model string
	Replicas               int32
	CPU, Memory, MemLimit  string // the author's (over-provisioned) values
	// Sidecars adds that many more containers with the same resources (side-1, ...).
	Sidecars int
	// Node pins the pods to one node (nodeSelector kubernetes.io/hostname); "" = any.
	Node string
}

// EnsureNamespace creates ns if it does not exist.
func (s *Sandbox) EnsureNamespace(ctx context.Context, ns string) error {
	if err := s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Deploy creates the namespace (if needed) and the app's Deployment in mode ("" = not
// enrolled in Ballast).
func (s *Sandbox) Deploy(ctx context.Context, ns string, a App, mode string) error {
	if err := s.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	labels := map[string]string{identityLabels[0]: a.Name, identityLabels[1]: a.Component, ModelLabel: a.Model}
	tmpl := map[string]string{}
	if mode != "" { // "" = not enrolled in Ballast (the VPA comparison)
		tmpl[ballastv1.ModeLabel] = mode
	}
	for k, v := range labels {
		tmpl[k] = v
	}
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(a.CPU), corev1.ResourceMemory: resource.MustParse(a.Memory)},
	}
	if a.MemLimit != "" {
		res.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(a.MemLimit)}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(a.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{identityLabels[0]: a.Name, identityLabels[1]: a.Component}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("50%")), MaxUnavailable: ptr.To(intstr.FromString("50%"))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: tmpl},
				Spec: corev1.PodSpec{
					Containers:                    containers(a, res),
					Tolerations:                   []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: ptr.To(int64(0)),
				},
			},
		},
	}
	if a.Node != "" {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": a.Node}
	}
	return s.Client.Create(ctx, d)
}

func containers(a App, res corev1.ResourceRequirements) []corev1.Container {
	cs := []corev1.Container{{Name: "app", Image: "sandbox.invalid/" + a.Name + ":1", Resources: res}}
	for i := 1; i <= a.Sidecars; i++ {
		cs = append(cs, corev1.Container{Name: fmt.Sprintf("side-%d", i), Image: "sandbox.invalid/side:1", Resources: *res.DeepCopy()})
	}
	return cs
}

// Teardown deletes an app's Deployment and waits until its pods are gone.
func (s *Sandbox) Teardown(ctx context.Context, ns, app string, wait time.Duration) error {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app}}
	if err := s.Client.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		return err
	}
	return harness.Poll(ctx, wait, "teardown", func() error {
		pods := &corev1.PodList{}
		if err := s.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{identityLabels[0]: app}); err != nil {
			return err
		}
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{}); err == nil || len(pods.Items) > 0 {
			return fmt.Errorf("%s/%s: %d pods left", ns, app, len(pods.Items))
		}
		return nil
	})
}

// SetMode changes the mode label of an app's pod template (a rolling update follows).
func (s *Sandbox) SetMode(ctx context.Context, ns, app, mode string) error {
	d := &appsv1.Deployment{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, d); err != nil {
		return err
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Labels[ballastv1.ModeLabel] = mode
	return s.Client.Patch(ctx, d, patch)
}

// SetPodMode relabels one running pod's mode (no rollout; the pod stays).
func (s *Sandbox) SetPodMode(ctx context.Context, p *corev1.Pod, mode string) error {
	patch := client.MergeFrom(p.DeepCopy())
	p.Labels[ballastv1.ModeLabel] = mode
	return s.Client.Patch(ctx, p, patch)
}

// Rolled reports whether an app's Deployment finished rolling out with every pod Running.
func (s *Sandbox) Rolled(ctx context.Context, ns, app string) error {
	d := &appsv1.Deployment{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, d); err != nil {
		return err
	}
	st := d.Status
	want := *d.Spec.Replicas
	if d.Generation != st.ObservedGeneration || st.UpdatedReplicas != want || st.Replicas != want || st.AvailableReplicas != want {
		return fmt.Errorf("%s/%s rolling: updated %d/%d, total %d, available %d", ns, app, st.UpdatedReplicas, want, st.Replicas, st.AvailableReplicas)
	}
	pods, err := s.AppPods(ctx, ns, app)
	if err != nil {
		return err
	}
	running := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	if running != int(want) {
		return fmt.Errorf("%s/%s: %d of %d pods running", ns, app, running, want)
	}
	return nil
}

// AppPods lists an app's live pods in ns.
func (s *Sandbox) AppPods(ctx context.Context, ns, app string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := s.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{identityLabels[0]: app}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out, nil
}

// Profile returns the WorkloadProfile an app's pods are bound to.
func (s *Sandbox) Profile(ctx context.Context, ns, app string) (*ballastv1.WorkloadProfile, error) {
	pods, err := s.AppPods(ctx, ns, app)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if ref := p.Annotations[ballastv1.ProfileRefAnnotation]; ref != "" {
			wp := &ballastv1.WorkloadProfile{}
			if err := s.Client.Get(ctx, client.ObjectKey{Name: ref}, wp); err != nil {
				return nil, err
			}
			return wp, nil
		}
	}
	return nil, fmt.Errorf("no pod of %s/%s is bound to a profile yet", ns, app)
}
