package enroll

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

func labelsFor(name string, extra map[string]string) map[string]string {
	l := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/component": "server"}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

func podTemplate(l map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: corev1.PodSpec{
		Containers:                    []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
		Tolerations:                   []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
		TerminationGracePeriodSeconds: ptr.To(int64(0)),
	}}
}

func selectorFor(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}}
}

func deployment(ns, name string, replicas int32, extra map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: selectorFor(name), Template: podTemplate(labelsFor(name, extra))}}
}

func statefulSet(ns, name string, replicas int32, onDelete bool) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpIn, Values: []string{name}}}},
		Template: podTemplate(labelsFor(name, nil)), PodManagementPolicy: appsv1.ParallelPodManagement}}
	if onDelete {
		s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	}
	return s
}

func daemonSet(ns, name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DaemonSetSpec{
		Selector: selectorFor(name), Template: podTemplate(labelsFor(name, nil))}}
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := sb.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// podsOf returns name → UID of the live pods matching name's label, and the mode labels.
func podsOf(t *testing.T, ns string) map[string]string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := sb.Client.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID) + " mode=" + p.Labels[ballastv1.ModeLabel]
		}
	}
	return out
}

func uids(pods map[string]string) []string {
	var out []string
	for _, v := range pods {
		out = append(out, v[:36])
	}
	sort.Strings(out)
	return out
}

// settled waits until every workload of ns has rolled out and its pods run.
func settled(t *testing.T, ns string, pods int) {
	t.Helper()
	harness.Eventually(t, 2*time.Minute, "workloads of "+ns+" settled", func() error {
		ctx := context.Background()
		list := &corev1.PodList{}
		if err := sb.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		ready, notReady := 0, ""
		for _, p := range list.Items {
			ok := false
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ok = true
				}
			}
			if ok {
				ready++
			} else {
				notReady = fmt.Sprintf("%s on %q phase %s conditions %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
			}
		}
		if ready != pods || len(list.Items) != pods {
			return fmt.Errorf("%d pods, %d ready, want %d (%s)", len(list.Items), ready, pods, notReady)
		}
		ds := &appsv1.DeploymentList{}
		if err := sb.Client.List(ctx, ds, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, d := range ds.Items {
			if d.Spec.Paused {
				continue
			}
			if d.Status.ObservedGeneration < d.Generation || d.Status.AvailableReplicas != *d.Spec.Replicas || d.Status.UpdatedReplicas != *d.Spec.Replicas {
				return fmt.Errorf("deployment %s not rolled out", d.Name)
			}
		}
		ss := &appsv1.StatefulSetList{}
		if err := sb.Client.List(ctx, ss, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, s := range ss.Items {
			if s.Status.ObservedGeneration < s.Generation || (s.Status.CurrentRevision != s.Status.UpdateRevision && s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType) || s.Status.ReadyReplicas != *s.Spec.Replicas {
				return fmt.Errorf("statefulset %s not rolled out", s.Name)
			}
		}
		dss := &appsv1.DaemonSetList{}
		if err := sb.Client.List(ctx, dss, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, d := range dss.Items {
			if d.Status.ObservedGeneration < d.Generation || d.Status.DesiredNumberScheduled == 0 || d.Status.NumberUnavailable != 0 ||
				d.Status.UpdatedNumberScheduled != d.Status.DesiredNumberScheduled {
				return fmt.Errorf("daemonset %s not rolled out", d.Name)
			}
		}
		return nil
	})
}

func allMode(t *testing.T, pods map[string]string, mode string) {
	t.Helper()
	for name, v := range pods {
		if v[37:] != "mode="+mode {
			t.Errorf("pod %s: %s, want mode=%s", name, v[37:], mode)
		}
	}
}

func sameUIDs(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if !slices.Equal(uids(before), uids(after)) {
		t.Errorf("%s: pods changed\nbefore %v\nafter  %v", what, before, after)
	}
}
