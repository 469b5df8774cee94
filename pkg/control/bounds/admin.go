package bounds

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// The administrator's bounds (BallastConfig spec.bounds). A kubelet writes its own Node's
// status.allocatable, so the largest allocatable is a figure the nodes report about
// themselves: one node claiming a huge allocatable lifts the cap for every pod. With
// spec.bounds the cap of a resource is the smaller of the admin's maximum and the largest
// allocatable among the nodes trustedNodeSelector matches. Without spec.bounds (the
// default) the cap is the largest allocatable of all nodes, as before.

// FromState returns an Admin function reading spec.bounds of the current BallastConfig.
func FromState(st *config.State) func() *ballastv1.NodeBounds {
	return func() *ballastv1.NodeBounds {
		if snap := st.Get(); snap.Config != nil {
			return snap.Config.Bounds
		}
		return nil
	}
}

// trustedSelector parses admin's node selector: nil (and key "") for every node.
func trustedSelector(admin *ballastv1.NodeBounds) (labels.Selector, string, error) {
	if admin == nil || admin.TrustedNodeSelector == nil {
		return nil, "", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(admin.TrustedNodeSelector)
	if err != nil {
		return nil, "", fmt.Errorf("BallastConfig spec.bounds.trustedNodeSelector: %w", err)
	}
	return sel, "sel:" + sel.String(), nil
}

// adminMax returns nodeMax lowered to admin's maxima (a new map; nodeMax is not changed).
func adminMax(nodeMax map[corev1.ResourceName]sizing.Range, admin *ballastv1.NodeBounds) map[corev1.ResourceName]sizing.Range {
	if admin == nil || (admin.MaxNodeCPU == nil && admin.MaxNodeMemory == nil) {
		return nodeMax
	}
	out := maps.Clone(nodeMax)
	if out == nil {
		out = map[corev1.ResourceName]sizing.Range{}
	}
	for res, q := range map[corev1.ResourceName]*resource.Quantity{corev1.ResourceCPU: admin.MaxNodeCPU, corev1.ResourceMemory: admin.MaxNodeMemory} {
		if q == nil || q.Sign() <= 0 {
			continue
		}
		u := sizing.UnitsOf(res, *q)
		out[res] = out[res].WithMax(u, "BallastConfig spec.bounds "+u.String(res))
	}
	return out
}
