package webhook

import (
	"maps"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/bounds"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// startupBoost raises the cpu of the sized result for the pod's start (policy
// behaviors.startupBoost, sizing.StartupBoost) within the largest node's allocatable cpu
// and the namespace's bounds, and records the un-boosted values in the startup-boost
// annotation the resize controller takes the boost back to once the pod has been Ready
// for readyFor. The annotation travels with the sizing patch, so a dry run writes neither.
func (h *Handler) startupBoost(pod *corev1.Pod, result sizing.Result, b *policy.Boost, params sizing.Params,
	objs bounds.Objects, log logr.Logger) sizing.Result {
	node, hasNode := objs.NodeMax[corev1.ResourceCPU]
	d := sizing.StartupBoost(sizing.BoostInput{Pod: pod, Sized: result, Boost: *b, Params: params,
		NodeCPU: node.Max, HasNodeCPU: hasNode && node.HasMax})
	h.metrics.StartupBoost.WithLabelValues(d.Outcome).Inc()
	if d.Record == nil {
		log.Info("startup boost not applied", "outcome", d.Outcome, "message", d.Message)
		return result
	}
	log.Info("startup boost applied", "outcome", d.Outcome, "message", d.Message, "record", d.Record.Encode())
	out := d.Result
	out.Annotations = maps.Clone(result.Annotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[ballastv1.StartupBoostAnnotation] = d.Record.Encode()
	return out
}
