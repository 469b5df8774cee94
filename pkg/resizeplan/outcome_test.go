package resizeplan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// statusPod is a pod at generation gen whose kubelet reported observedGeneration og with
// the given resize conditions.
func statusPod(gen, og int64, conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: gen},
		Status: corev1.PodStatus{ObservedGeneration: og, Conditions: conds}}
}

func cond(t corev1.PodConditionType, reason, msg string, og int64) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: og}
}

const deferredMsg = "Node didn't have enough resource: cpu, requested: 1500, used: 900, capacity: 2000"

func TestObserve(t *testing.T) {
	cases := map[string]struct {
		pod   *corev1.Pod
		since int64
		want  Observation
	}{
		"accepted, kubelet has not reported yet": {
			pod: statusPod(3, 2), since: 3,
			want: Observation{State: ballastv1.ResizeStatePending}},
		"pending infeasible": {
			pod:  statusPod(3, 3, cond(corev1.PodResizePending, "Infeasible", "memory-backed volume", 3)),
			want: Observation{State: ballastv1.ResizeStateInfeasible, Message: "memory-backed volume"}},
		"pending deferred": {
			pod:  statusPod(3, 3, cond(corev1.PodResizePending, "Deferred", deferredMsg, 3)),
			want: Observation{State: ballastv1.ResizeStateDeferred, Message: deferredMsg}},
		"in progress with error (kubelet refused a memory-limit decrease)": {
			pod: statusPod(4, 4, cond(corev1.PodResizeInProgress, "Error",
				"container app: memory usage 300Mi above the new limit 256Mi", 4)),
			want: Observation{State: ballastv1.ResizeStateError, Message: "container app: memory usage 300Mi above the new limit 256Mi"}},
		"in progress": {
			pod:  statusPod(3, 3, cond(corev1.PodResizeInProgress, "", "", 3)),
			want: Observation{State: ballastv1.ResizeStateInProgress}},
		"neither condition, generation observed": {
			pod:  statusPod(3, 3),
			want: Observation{State: ballastv1.ResizeStateCompleted}},
		"neither condition, observed beyond": {
			pod: statusPod(3, 4), since: 3,
			want: Observation{State: ballastv1.ResizeStateCompleted}},
		"both conditions: pending is read first": {
			pod: statusPod(5, 5, cond(corev1.PodResizeInProgress, "", "", 5),
				cond(corev1.PodResizePending, "Deferred", deferredMsg, 5)),
			want: Observation{State: ballastv1.ResizeStateDeferred, Message: deferredMsg}},
		"both conditions, pending infeasible over an in-progress error": {
			pod: statusPod(5, 5, cond(corev1.PodResizeInProgress, "Error", "boom", 5),
				cond(corev1.PodResizePending, "Infeasible", "swap", 5)),
			want: Observation{State: ballastv1.ResizeStateInfeasible, Message: "swap"}},
		"stale deferred from the previous generation is not this resize's outcome": {
			pod:  statusPod(4, 3, cond(corev1.PodResizePending, "Deferred", deferredMsg, 3)),
			want: Observation{State: ballastv1.ResizeStatePending}},
		"stale pod in the cache, Ballast's patch made generation 4": {
			pod: statusPod(3, 3), since: 4,
			want: Observation{State: ballastv1.ResizeStatePending}},
		"stale in-progress error, fresh status without conditions of this generation": {
			pod:  statusPod(6, 6, cond(corev1.PodResizeInProgress, "Error", "old", 5)),
			want: Observation{State: ballastv1.ResizeStatePending}},
		"fresh in-progress beside a stale pending": {
			pod: statusPod(6, 6, cond(corev1.PodResizePending, "Deferred", "old", 5),
				cond(corev1.PodResizeInProgress, "", "", 6)),
			want: Observation{State: ballastv1.ResizeStateInProgress}},
		"condition without its own generation falls back to the pod's": {
			pod:  statusPod(3, 3, cond(corev1.PodResizePending, "Deferred", deferredMsg, 0)),
			want: Observation{State: ballastv1.ResizeStateDeferred, Message: deferredMsg}},
		"condition without generation, pod status stale": {
			pod:  statusPod(3, 2, cond(corev1.PodResizePending, "Deferred", deferredMsg, 0)),
			want: Observation{State: ballastv1.ResizeStatePending}},
		"a False condition is no condition": {
			pod: statusPod(3, 3, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionFalse,
				Reason: "Deferred", ObservedGeneration: 3}),
			want: Observation{State: ballastv1.ResizeStateCompleted}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Observe(tc.pod, tc.since)); diff != "" {
				t.Errorf("Observe (-want +got):\n%s", diff)
			}
		})
	}
}
