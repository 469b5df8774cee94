package resize

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
)

// eachResizeProfile calls f for every WorkloadProfile with a measurementHash and running
// resize-mode pods (by pod name), with private copies of the profile and the pods. The
// polls run every second: they list only the resize-mode pods, from the cache's own objects
// (a list per profile, or a copy of every bound pod, each second was most of the control
// plane's CPU and allocations at scale), and read only the profiles those pods name. It
// stops at f's first error.
func eachResizeProfile(ctx context.Context, c client.Reader, f func(wp *ballastv1.WorkloadProfile, byKey map[string]*corev1.Pod) error) error {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.MatchingFields{enrollment.ModeIndex: ballastv1.ModeResize}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	byProfile := map[string]map[string]*corev1.Pod{}
	for j := range pods.Items {
		p := &pods.Items[j]
		ref := p.Annotations[ballastv1.ProfileRefAnnotation]
		if ref == "" || p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if byProfile[ref] == nil {
			byProfile[ref] = map[string]*corev1.Pod{}
		}
		byProfile[ref][p.Namespace+"/"+p.Name] = p.DeepCopy()
	}
	names := make([]string, 0, len(byProfile))
	for name := range byProfile {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		wp := &ballastv1.WorkloadProfile{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if wp.Status.MeasurementHash == "" {
			continue
		}
		if err := f(wp, byProfile[name]); err != nil {
			return err
		}
	}
	return nil
}
