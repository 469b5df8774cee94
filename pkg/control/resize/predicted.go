package resize

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/hpa"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// PredictedRequestsAnnotation is the convention proposed in Karpenter's in-place resize
// RFC: on a Deployment or StatefulSet, the pod-level requests a pod recreated from its
// template will be admitted with, so consolidation simulates the size the pod comes back at.
const PredictedRequestsAnnotation = "autoscaling.k8s.io/predicted-pod-requests"

// Predicted renders pod-level requests in the annotation's shape: {"cpu":"8500m","memory":"2304Mi"}.
func Predicted(r resizeplan.Resources) (string, error) {
	b, err := json.Marshal(map[string]string{
		"cpu":    resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI).String(),
		"memory": resource.NewQuantity(r.Bytes, resource.BinarySI).String(),
	})
	return string(b), err
}

// PredictFromTemplate is the prediction for one pod template: Ballast's admission
// (sizing.Admission with the profile's recommendations and policy) applied to a pod built
// from the template, totalled the way the scheduler counts a pod.
func PredictFromTemplate(namespace string, tmpl corev1.PodTemplateSpec, recs sizing.Recommendations, p sizing.Params) resizeplan.Resources {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Namespace = namespace
	res := sizing.Admission(pod, recs, p)
	return resizeplan.Planned(pod, resizeplan.Overrides(resizeplan.TargetsOf(pod, res.Changes)))
}

// PredictedAnnotator is the resize controller's predicted-requests reconciler: it publishes
// PredictedRequestsAnnotation on the workloads of a profile's admission-sized pods. The
// profile pass runs it once per profile it evaluates (Options.PredictedRequests).
type PredictedAnnotator struct {
	client   client.Client // cached reads of the profile's pods, patches
	api      client.Reader // uncached reads of Deployments and StatefulSets
	state    *config.State
	resolver *resolve.Resolver
	dryRun   bool
	// hpa is the behaviors.hpa guard (Controller.SetHPA): a workload's prediction keeps the
	// requests admission would preserve for its HPA.
	hpa hpa.Lookup
}

// NewPredictedAnnotator returns the annotator; with dryRun it logs what it would publish
// and writes nothing (SPEC §10.3).
func NewPredictedAnnotator(c client.Client, api client.Reader, state *config.State, r *resolve.Resolver, dryRun bool) *PredictedAnnotator {
	return &PredictedAnnotator{client: c, api: api, state: state, resolver: r, dryRun: dryRun}
}

// PredictedInput is one evaluated profile: its recommendations and its policy's parameters.
type PredictedInput struct {
	Profile         *ballastv1.WorkloadProfile
	Recommendations sizing.Recommendations
	Params          sizing.Params
	// HPA is the policy's behaviors.hpa.
	HPA string
}

// Reconcile writes the annotation on the top-level Deployment or StatefulSet of the
// profile's admission-sized pods (apply and resize modes), once per workload per pass and
// only when the value changes. Nothing while the kill switch is active.
func (a *PredictedAnnotator) Reconcile(ctx context.Context, in PredictedInput) error {
	log := ctrl.LoggerFrom(ctx).WithValues("profile", in.Profile.Name, "action", "predicted_requests")
	if snap := a.state.Get(); snap.Active() {
		return nil // admission sizes nothing while active; nothing to publish
	}
	list := &corev1.PodList{}
	if err := a.client.List(ctx, list, client.MatchingFields{enrollment.ProfileRefIndex: in.Profile.Name}); err != nil {
		return err
	}
	seen := map[resolve.Workload]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		if m := pod.Labels[ballastv1.ModeLabel]; m != ballastv1.ModeApply && m != ballastv1.ModeResize {
			continue
		}
		w := a.resolver.Workload(ctx, pod)
		if seen[w] || (w.Kind != "Deployment" && w.Kind != "StatefulSet") {
			continue
		}
		seen[w] = true
		var obj client.Object
		var tmpl *corev1.PodTemplateSpec
		if w.Kind == "Deployment" {
			d := &appsv1.Deployment{}
			obj, tmpl = d, &d.Spec.Template
		} else {
			s := &appsv1.StatefulSet{}
			obj, tmpl = s, &s.Spec.Template
		}
		if err := a.api.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, obj); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("reading %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
			}
			continue
		}
		recs := in.Recommendations
		if a.hpa.Reader != nil {
			var err error
			if recs, _, err = a.hpa.Guard(ctx, in.HPA, w.Namespace, sizing.OwnersOf(pod, w.Kind, w.Name), recs); err != nil {
				return err
			}
		}
		value, err := Predicted(PredictFromTemplate(w.Namespace, *tmpl, recs, in.Params))
		if err != nil {
			return err
		}
		if obj.GetAnnotations()[PredictedRequestsAnnotation] == value {
			continue
		}
		if a.dryRun {
			log.Info("dry-run: would publish predicted requests", "dry_run", true, "kind", w.Kind, "namespace", w.Namespace, "name", w.Name, "value", value)
			continue
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{PredictedRequestsAnnotation: value}}})
		if err != nil {
			return err
		}
		if err := a.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body)); err != nil {
			return fmt.Errorf("publishing predicted requests on %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
		}
		log.Info("published predicted requests", "kind", w.Kind, "namespace", w.Namespace, "name", w.Name, "value", value)
	}
	return nil
}
