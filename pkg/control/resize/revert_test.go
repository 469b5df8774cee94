package resize

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRevertTrigger(t *testing.T) {
	ready := func(s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodReady, Status: s, Reason: "ContainersNotReady"}
	}
	status := func(restarts int32, reason string, conds ...corev1.PodCondition) corev1.PodStatus {
		st := corev1.ContainerStatus{Name: "app", RestartCount: restarts}
		if reason != "" {
			st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason}
		}
		return corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conds, ContainerStatuses: []corev1.ContainerStatus{st}}
	}
	m := shrinkMark{restarts: map[string]int32{"app": 1}, ready: true}
	for _, c := range []struct {
		name    string
		st      corev1.PodStatus
		m       shrinkMark
		want    string
		readyOK bool
	}{
		{"ready, no restart", status(1, "", ready(corev1.ConditionTrue)), m, "", true},
		{"OOMKilled restart after the shrink", status(2, "OOMKilled", ready(corev1.ConditionTrue)), m, RevertOOM, false},
		{"the OOMKilled restart was before the shrink", status(1, "OOMKilled", ready(corev1.ConditionTrue)), m, "", true},
		{"a restart for another reason, NotReady", status(2, "Error", ready(corev1.ConditionFalse)), m, RevertNotReady, false},
		{"NotReady after Ready", status(1, "", ready(corev1.ConditionFalse)), m, RevertNotReady, false},
		{"never Ready since the shrink", status(1, "", ready(corev1.ConditionFalse)), shrinkMark{restarts: m.restarts}, "", false},
		{"no Ready condition", status(1, ""), m, "", false},
	} {
		pod := &corev1.Pod{Status: c.st}
		got, detail, r := RevertTrigger(pod, c.m)
		if got != c.want || r != c.readyOK || (got != "" && detail == "") {
			t.Errorf("%s: trigger %q (%q) ready %v, want %q ready %v", c.name, got, detail, r, c.want, c.readyOK)
		}
	}
	// A shrink that restarts the container: its own restart's NotReady is not a trigger
	// (ready is false at the shrink), an OOMKilled restart still is.
	restarting := shrinkMark{restarts: m.restarts, restartExpected: true}
	if got, _, _ := RevertTrigger(&corev1.Pod{Status: status(2, "Error", ready(corev1.ConditionFalse))}, restarting); got != "" {
		t.Errorf("the resize's own restart: trigger %q", got)
	}
	if got, _, _ := RevertTrigger(&corev1.Pod{Status: status(2, "OOMKilled", ready(corev1.ConditionFalse))}, restarting); got != RevertOOM {
		t.Errorf("OOMKilled after a restarting shrink: trigger %q", got)
	}
	if restartedSince(&corev1.Pod{Status: status(1, "")}, restarting) || !restartedSince(&corev1.Pod{Status: status(2, "")}, restarting) {
		t.Errorf("restartedSince: wrong")
	}
	// A NotReady pod that is not Running (terminating, failed) is not raised back.
	pod := &corev1.Pod{Status: status(1, "", ready(corev1.ConditionFalse))}
	pod.Status.Phase = corev1.PodFailed
	if got, _, _ := RevertTrigger(pod, m); got != "" {
		t.Errorf("failed pod: trigger %q", got)
	}
}
