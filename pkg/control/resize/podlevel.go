package resize

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// FeaturePodLevelResize is the node-declared feature kube-apiserver 1.37.2 requires before it
// accepts a pods/resize that changes pod-level spec.resources ("pod update requires features
// InPlacePodLevelResourcesVerticalScaling which are not available on node", measured).
const FeaturePodLevelResize = "InPlacePodLevelResourcesVerticalScaling"

// podLevelInPlace reports whether a resize of pod may change its pod-level spec.resources:
// the policy sizes them (podLevel: size), the pod has them and its node's kubelet declares
// the feature. Otherwise the calculator keeps container changes within them. An unreadable
// node counts as not declaring it.
func (c *Controller) podLevelInPlace(ctx context.Context, pod *corev1.Pod, p sizing.Params) bool {
	if p.PodLevel != sizing.PodLevelSize || pod.Spec.Resources == nil || pod.Spec.NodeName == "" {
		return false
	}
	node := &corev1.Node{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
		return false
	}
	return slices.Contains(node.Status.DeclaredFeatures, FeaturePodLevelResize)
}
