package resize

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// memoryRaise is the change of a fast raise (OOM kill, sustained pressure): ctr's memory
// limit from lim to newLim, and its request with it when it equalled the limit, so request
// ≤ limit holds and a Guaranteed pod stays Guaranteed. qosBefore and qosAfter are the pod's
// QoS class without and with the change; a raise that would change it is not sent.
func memoryRaise(pod *corev1.Pod, ctr *corev1.Container, lim, newLim resource.Quantity) (ch sizing.ContainerChanges, qosBefore, qosAfter corev1.PodQOSClass) {
	ch = sizing.ContainerChanges{Name: ctr.Name, Limits: corev1.ResourceList{corev1.ResourceMemory: newLim}}
	for _, lr := range longRunningChanges(pod) {
		if lr.Name == ctr.Name {
			ch.Sidecar, ch.Index = lr.Sidecar, lr.Index
		}
	}
	if req, ok := ctr.Resources.Requests[corev1.ResourceMemory]; ok && req.Cmp(lim) == 0 {
		ch.Requests = corev1.ResourceList{corev1.ResourceMemory: newLim}
	}
	after := pod.DeepCopy()
	for _, t := range targetsOf(pod, []sizing.ContainerChanges{ch}) {
		if c := containerOf(after, t.Name); c != nil {
			c.Resources.Requests, c.Resources.Limits = t.Requests, t.Limits
		}
	}
	return ch, sizing.QoS(pod), sizing.QoS(after)
}

// eachResizeProfile calls f for every WorkloadProfile with a measurementHash and running
// resize-mode pods (runningResizePods, by pod name), with a private copy of the profile:
// the list reads the cache's own objects, which the polls, every second over every
// profile, must not copy wholesale. It stops at f's first error.
func eachResizeProfile(ctx context.Context, c client.Reader, f func(wp *ballastv1.WorkloadProfile, byKey map[string]*corev1.Pod) error) error {
	profiles := &ballastv1.WorkloadProfileList{}
	if err := c.List(ctx, profiles, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range profiles.Items {
		wp := &profiles.Items[i]
		if wp.Status.MeasurementHash == "" {
			continue
		}
		byKey, err := runningResizePods(ctx, c, wp)
		if err != nil {
			return err
		}
		if len(byKey) == 0 {
			continue
		}
		if err := f(wp.DeepCopy(), byKey); err != nil {
			return err
		}
	}
	return nil
}

// runningResizePods returns the Running, not terminating, resize-mode pods of profile wp by
// namespace/name: the pods the fast raises (OOM, pressure) may act on.
func runningResizePods(ctx context.Context, c client.Reader, wp *ballastv1.WorkloadProfile) (map[string]*corev1.Pod, error) {
	pods := &corev1.PodList{}
	// The polls run every second over every profile: read the cache's own objects and copy
	// only the few pods returned (a deep copy of every bound pod each second was most of the
	// control plane's CPU at 4,000 enrolled pods).
	if err := c.List(ctx, pods, client.MatchingFields{enrollment.ProfileRefIndex: wp.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	byKey := map[string]*corev1.Pod{}
	for j := range pods.Items {
		p := &pods.Items[j]
		if p.Labels[ballastv1.ModeLabel] == ballastv1.ModeResize && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
			byKey[p.Namespace+"/"+p.Name] = p.DeepCopy()
		}
	}
	return byKey, nil
}
