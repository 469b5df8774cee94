package ballast

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// statefulSetInPlace: raise the partition to the replica count; patch the template; wait
// for the new updateRevision; relabel the pods with it; restore the partition.
func (e *enroller) statefulSetInPlace(ctx context.Context, w *workload) error {
	s := w.s
	var orig any // nil: no partition written
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		orig = *ru.Partition
	}
	origJSON, _ := json.Marshal(m{"spec": m{"updateStrategy": m{"rollingUpdate": m{"partition": orig}}}})
	restore := "restore the original partition with: " + fmt.Sprintf(kubectlPatchExample, s.Namespace, "statefulset", s.Name, origJSON)
	oldRev := s.Status.UpdateRevision
	// Undo steps are pushed before their mutations (an interrupted call may have applied).
	e.push("restored the partition", func(ctx context.Context) error {
		return e.merge(ctx, s, m{"spec": m{"updateStrategy": m{"rollingUpdate": m{"partition": orig}}}})
	})
	if err := e.merge(ctx, s, m{"spec": m{"updateStrategy": m{"rollingUpdate": m{"partition": w.replicas()}}}}); err != nil {
		return e.fail(ctx, w, "raising the partition", err, restore)
	}
	e.push("reverted the template", e.revertTemplate(w))
	if err := e.merge(ctx, s, templateLabelPatch(e.mode, nil)); err != nil {
		return e.fail(ctx, w, "patching the template", err, restore)
	}
	var newRev string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, e.timeout, true, func(ctx context.Context) (bool, error) {
		cur := &appsv1.StatefulSet{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
			return false, nil
		}
		newRev = cur.Status.UpdateRevision
		return cur.Status.ObservedGeneration >= cur.Generation && newRev != "" && newRev != oldRev, nil
	})
	if err != nil {
		return e.fail(ctx, w, "waiting for the new update revision", err, restore)
	}
	if _, err := e.relabelPods(ctx, w, revisionHashLabel, newRev); err != nil {
		return e.fail(ctx, w, "relabelling pods with revision "+newRev, err, restore)
	}
	e.pop() // the pods are at the new revision: keep the template
	if err := e.merge(ctx, s, m{"spec": m{"updateStrategy": m{"rollingUpdate": m{"partition": orig}}}}); err != nil {
		return e.fail(ctx, w, "restoring the partition", err, restore)
	}
	e.pop()
	return nil
}

// daemonSetInPlace: switch to OnDelete; patch the template; wait for observedGeneration;
// relabel the pods with the newest ControllerRevision's hash; restore the strategy.
func (e *enroller) daemonSetInPlace(ctx context.Context, w *workload) error {
	ds := w.ds
	orig := ds.Spec.UpdateStrategy.DeepCopy()
	origPatch := m{"spec": m{"updateStrategy": orig}}
	origJSON, _ := json.Marshal(origPatch)
	restore := "restore the original strategy with: " + fmt.Sprintf(kubectlPatchExample, ds.Namespace, "daemonset", ds.Name, origJSON)
	// Undo steps are pushed before their mutations (an interrupted call may have applied).
	e.push("restored the update strategy", func(ctx context.Context) error { return e.merge(ctx, ds, origPatch) })
	if err := e.merge(ctx, ds, m{"spec": m{"updateStrategy": m{"type": appsv1.OnDeleteDaemonSetStrategyType, "rollingUpdate": nil}}}); err != nil {
		return e.fail(ctx, w, "switching to OnDelete", err, restore)
	}
	e.push("reverted the template", e.revertTemplate(w))
	if err := e.merge(ctx, ds, templateLabelPatch(e.mode, nil)); err != nil {
		return e.fail(ctx, w, "patching the template", err, restore)
	}
	var hash string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, e.timeout, true, func(ctx context.Context) (bool, error) {
		cur := &appsv1.DaemonSet{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(ds), cur); err != nil || cur.Status.ObservedGeneration < cur.Generation {
			return false, nil
		}
		h, err := newestRevisionHash(ctx, e.c, cur)
		if err != nil || h == "" {
			return false, nil
		}
		hash = h
		return true, nil
	})
	if err != nil {
		return e.fail(ctx, w, "waiting for the DaemonSet controller", err, restore)
	}
	if _, err := e.relabelPods(ctx, w, revisionHashLabel, hash); err != nil {
		return e.fail(ctx, w, "relabelling pods with revision "+hash, err, restore)
	}
	e.pop() // the pods are at the new revision: keep the template
	if err := e.merge(ctx, ds, origPatch); err != nil {
		return e.fail(ctx, w, "restoring the update strategy", err, restore)
	}
	e.pop()
	return nil
}

// newestRevisionHash is the controller-revision-hash of ds's newest ControllerRevision.
func newestRevisionHash(ctx context.Context, c client.Client, ds *appsv1.DaemonSet) (string, error) {
	crs := &appsv1.ControllerRevisionList{}
	if err := c.List(ctx, crs, client.InNamespace(ds.Namespace)); err != nil {
		return "", err
	}
	var best *appsv1.ControllerRevision
	for i := range crs.Items {
		cr := &crs.Items[i]
		if ref := metav1.GetControllerOf(cr); ref == nil || ref.UID != ds.UID {
			continue
		}
		if best == nil || cr.Revision > best.Revision {
			best = cr
		}
	}
	if best == nil {
		return "", nil
	}
	return best.Labels[revisionHashLabel], nil
}

// revertTemplate puts the template's mode label back to what it is now (call it before
// the patch).
func (e *enroller) revertTemplate(w *workload) func(context.Context) error {
	return e.revertLabel(w.obj(), w.template().Labels[ballastv1.ModeLabel])
}

// revertLabel sets obj's pod-template mode label back to old (removes it when empty).
func (e *enroller) revertLabel(obj client.Object, old string) func(context.Context) error {
	var v any = old
	if old == "" {
		v = nil
	}
	return func(ctx context.Context) error {
		return e.merge(ctx, obj, m{"spec": m{"template": m{"metadata": m{"labels": m{ballastv1.ModeLabel: v}}}}})
	}
}
