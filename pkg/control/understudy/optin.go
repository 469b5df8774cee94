package understudy

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
)

// Opt-in relocation (SPEC §15.5): a single-replica Deployment whose pod template carries
// ballast.tightlinesoftware.com/relocate: "true" is relocated without an Understudy. Its
// state lives on the Deployment itself, in RelocationStateAnnotation, written in the same
// patch that raises the replicas, so a leader that dies mid-surge leaves a successor all
// it needs to converge.

const (
	// RelocateAnnotation ("true") on a pod template opts its single-replica Deployment into
	// relocation without an Understudy.
	RelocateAnnotation = ballastv1.Prefix + "relocate"
	// RelocationStateAnnotation on a Deployment records an opt-in relocation in progress.
	RelocationStateAnnotation = ballastv1.Prefix + "relocation"
	// optInDeadline bounds an opt-in relocation: readinessDeadlineSeconds' default.
	optInDeadline = 600 * time.Second
)

// relocationState is the value of RelocationStateAnnotation.
type relocationState struct {
	OriginalReplicas int32     `json:"originalReplicas"`
	Pod              string    `json:"pod"`
	Node             string    `json:"node"`
	Since            time.Time `json:"since"`
}

func parseRelocation(d *appsv1.Deployment) (relocationState, bool, error) {
	v, ok := d.Annotations[RelocationStateAnnotation]
	if !ok {
		return relocationState{}, false, nil
	}
	var s relocationState
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, true, fmt.Errorf("annotation %s of Deployment %s/%s: %w", RelocationStateAnnotation, d.Namespace, d.Name, err)
	}
	if s.Pod == "" || s.OriginalReplicas < 0 {
		return s, true, fmt.Errorf("annotation %s of Deployment %s/%s: want pod and originalReplicas ≥ 0, got %q",
			RelocationStateAnnotation, d.Namespace, d.Name, v)
	}
	return s, true, nil
}

// optIns is the set of Deployments with an opt-in relocation in progress, fed by the
// Deployment watch: pod events are mapped only for these.
type optIns struct {
	mu  sync.RWMutex
	set map[types.NamespacedName]bool
}

func (o *optIns) mark(k types.NamespacedName, on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.set == nil {
		o.set = map[types.NamespacedName]bool{}
	}
	if on {
		o.set[k] = true
	} else {
		delete(o.set, k)
	}
}

func (o *optIns) has(k types.NamespacedName) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.set[k]
}

// relocateOptIn starts an opt-in relocation of pod (no Understudy covers its Deployment).
func (r *Relocator) relocateOptIn(ctx context.Context, log logr.Logger, pod *corev1.Pod, dep string, reason string) (bool, error) {
	c := r.c
	d := &appsv1.Deployment{}
	if err := c.reader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: dep}, d); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if d.Spec.Template.Annotations[RelocateAnnotation] != "true" {
		log.V(1).Info("not relocating: no Understudy covers the Deployment and its template does not opt in", "deployment", dep)
		return false, nil
	}
	if s, ok, _ := parseRelocation(d); ok {
		return s.Pod == pod.Name, nil // one relocation at a time
	}
	switch why, err := c.optInIneligible(ctx, d); {
	case err != nil:
		return false, err
	case why != "":
		log.Info("not relocating the opted-in Deployment", "deployment", dep, "why", why)
		return false, nil
	}
	orig := replicas(d)
	st, err := json.Marshal(relocationState{OriginalReplicas: orig, Pod: pod.Name, Node: pod.Spec.NodeName, Since: c.clock.Now().UTC()})
	if err != nil {
		return false, err
	}
	if err := c.markDoomed(ctx, pod); err != nil {
		return false, err
	}
	// The state and the surge in one write, guarded by the resourceVersion we decided on.
	patch := client.MergeFromWithOptions(d.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RelocationStateAnnotation] = string(st)
	to := orig + 1
	d.Spec.Replicas = &to
	if err := c.client.Patch(ctx, d, patch); err != nil {
		if apierrors.IsConflict(err) {
			return false, nil // the Deployment changed under us; the ladder asks again
		}
		return false, fmt.Errorf("starting the relocation of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	c.optIns.mark(client.ObjectKeyFromObject(d), true)
	log.Info("relocation started (opt-in)", "deployment", dep, "replicas", to, "why", reason)
	c.events.Publish(events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: ReasonSurgeStarted,
		Message: fmt.Sprintf("growth cannot fit on node %s (%s): Deployment %s opted in to relocation; raising a stand-in sized at admission, this pod is retired once it is Ready",
			pod.Spec.NodeName, reason, dep)})
	return true, nil
}

// optInIneligible says why an opted-in Deployment cannot be relocated now ("" when it can).
func (c *Controller) optInIneligible(ctx context.Context, d *appsv1.Deployment) (string, error) {
	if d.Namespace == c.opts.OperatorNamespace {
		return "Ballast never relocates its own workloads", nil
	}
	if r := replicas(d); r != 1 {
		return "relocation without an Understudy is for single-replica Deployments; it has " + strconv.Itoa(int(r)), nil
	}
	if rollingOut(d, false) {
		return "the Deployment is rolling out", nil
	}
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := c.reader.List(ctx, &hpas, client.InNamespace(d.Namespace)); err != nil {
		return "", err
	}
	for _, h := range hpas.Items {
		if h.Spec.ScaleTargetRef.Kind == ballastv1.KindDeployment && h.Spec.ScaleTargetRef.Name == d.Name {
			return "HorizontalPodAutoscaler " + h.Name + " scales it", nil
		}
	}
	return "", nil
}

// ReconcileOptIn drives an opt-in relocation (leader only): retire the old pod once a
// stand-in is Ready, give up on the kill switch, a rollout or the deadline, and in every
// end state put the replicas back and remove the state in one write.
func (c *Controller) ReconcileOptIn(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	d := &appsv1.Deployment{}
	if err := c.reader.Get(ctx, key, d); err != nil {
		if apierrors.IsNotFound(err) {
			c.optIns.mark(key, false)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	s, ok, err := parseRelocation(d)
	c.optIns.mark(key, ok)
	if !ok {
		return reconcile.Result{}, nil
	}
	log := c.log.WithValues("deployment", key.String())
	if err != nil {
		// Unreadable state: the original count is unknown, so nothing is touched; visible in logs.
		log.Error(err, "cannot drive the relocation; fix or remove the annotation")
		return reconcile.Result{}, nil
	}
	t := target{dep: d}
	if t.pods, err = c.podsOf(ctx, d); err != nil {
		return reconcile.Result{}, err
	}
	var old *corev1.Pod
	for i := range t.pods {
		if t.pods[i].Name == s.Pod {
			old = &t.pods[i]
		}
	}
	standIn, err := c.standIn(ctx, t, s.Pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	deadline := s.Since.Add(optInDeadline)
	now := c.clock.Now()
	switch {
	case podGone(old):
		return reconcile.Result{}, c.endOptIn(ctx, log, d, s, "the old pod is gone")
	case standIn != "":
		if err := c.endOptIn(ctx, log, d, s, "stand-in "+standIn+" is Ready"); err != nil {
			return reconcile.Result{}, err
		}
		c.reloc.retire(old.UID, now)
		if rec := c.reloc.recorder(); rec != nil {
			node := ""
			for i := range t.pods {
				if t.pods[i].Name == standIn {
					node = t.pods[i].Spec.NodeName
				}
			}
			rec.Relocated(ctx, old, standIn, node)
		}
		return reconcile.Result{}, nil
	case c.state.Get().Active():
		c.reloc.failed(old.UID, now)
		return reconcile.Result{}, c.endOptIn(ctx, log, d, s, "kill switch active: relocation abandoned")
	case d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas < d.Status.Replicas:
		return reconcile.Result{}, c.endOptIn(ctx, log, d, s, "the Deployment is rolling out: relocation abandoned")
	case !now.Before(deadline):
		c.reloc.failed(old.UID, now)
		c.events.Publish(events.Event{Object: old, Type: corev1.EventTypeWarning, Reason: ReasonRelaxed,
			Message: fmt.Sprintf("no Ready stand-in within %s: relocation abandoned, back to %d replica(s)", optInDeadline, s.OriginalReplicas)})
		return reconcile.Result{}, c.endOptIn(ctx, log, d, s, "no Ready stand-in within the deadline")
	}
	// Converge after a restart: the state says we surged.
	if want := s.OriginalReplicas + 1; replicas(d) != want {
		if err := c.patchReplicas(ctx, t, want); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: min(defaultRequeuePeriod, deadline.Sub(now)+10*time.Millisecond)}, nil
}

// endOptIn puts the original replica count back and removes the state in one write; the
// deletion cost steers the ReplicaSet's scale-down to the old pod.
func (c *Controller) endOptIn(ctx context.Context, log logr.Logger, d *appsv1.Deployment, s relocationState, why string) error {
	patch := client.MergeFromWithOptions(d.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(d.Annotations, RelocationStateAnnotation)
	orig := s.OriginalReplicas
	d.Spec.Replicas = &orig
	if err := c.client.Patch(ctx, d, patch); err != nil {
		return fmt.Errorf("ending the relocation of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	log.Info("relocation ended (opt-in)", "replicas", orig, "why", why)
	return nil
}
