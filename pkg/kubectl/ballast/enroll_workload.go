package ballast

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	kindDeployment  = "Deployment"
	kindStatefulSet = "StatefulSet"
	kindDaemonSet   = "DaemonSet"

	revisionAnnotation  = "deployment.kubernetes.io/revision"
	restartedAtKey      = "kubectl.kubernetes.io/restartedAt"
	revisionHashLabel   = appsv1.ControllerRevisionHashLabelKey
	kubectlPatchExample = "kubectl -n %s patch %s %s --type merge -p '%s'"
)

// workload is one Deployment, StatefulSet or DaemonSet.
type workload struct {
	Kind, Namespace, Name string
	d                     *appsv1.Deployment
	s                     *appsv1.StatefulSet
	ds                    *appsv1.DaemonSet
}

func (w *workload) ref() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

func (w *workload) obj() client.Object {
	switch {
	case w.d != nil:
		return w.d
	case w.s != nil:
		return w.s
	}
	return w.ds
}

func (w *workload) template() *corev1.PodTemplateSpec {
	switch {
	case w.d != nil:
		return &w.d.Spec.Template
	case w.s != nil:
		return &w.s.Spec.Template
	}
	return &w.ds.Spec.Template
}

func (w *workload) selector() *metav1.LabelSelector {
	switch {
	case w.d != nil:
		return w.d.Spec.Selector
	case w.s != nil:
		return w.s.Spec.Selector
	}
	return w.ds.Spec.Selector
}

// replicas is spec.replicas (DaemonSet: status.desiredNumberScheduled).
func (w *workload) replicas() int32 {
	switch {
	case w.d != nil:
		return ptrOr(w.d.Spec.Replicas, 1)
	case w.s != nil:
		return ptrOr(w.s.Spec.Replicas, 1)
	}
	return w.ds.Status.DesiredNumberScheduled
}

func (w *workload) onDelete() bool {
	switch {
	case w.s != nil:
		return w.s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
	case w.ds != nil:
		return w.ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
	}
	return false
}

func ptrOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

// resource is the kubectl resource/name of the workload, for breadcrumbs.
func (w *workload) resource() string {
	switch w.Kind {
	case kindDeployment:
		return "deployment/" + w.Name
	case kindStatefulSet:
		return "statefulset/" + w.Name
	}
	return "daemonset/" + w.Name
}

func listWorkloads(ctx context.Context, c client.Client, ns string) ([]workload, error) {
	var out []workload
	ds := &appsv1.DeploymentList{}
	if err := c.List(ctx, ds, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing Deployments: %w", err)
	}
	for i := range ds.Items {
		d := &ds.Items[i]
		out = append(out, workload{Kind: kindDeployment, Namespace: d.Namespace, Name: d.Name, d: d})
	}
	ss := &appsv1.StatefulSetList{}
	if err := c.List(ctx, ss, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing StatefulSets: %w", err)
	}
	for i := range ss.Items {
		s := &ss.Items[i]
		out = append(out, workload{Kind: kindStatefulSet, Namespace: s.Namespace, Name: s.Name, s: s})
	}
	dss := &appsv1.DaemonSetList{}
	if err := c.List(ctx, dss, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing DaemonSets: %w", err)
	}
	for i := range dss.Items {
		d := &dss.Items[i]
		out = append(out, workload{Kind: kindDaemonSet, Namespace: d.Namespace, Name: d.Name, ds: d})
	}
	return out, nil
}

// reread reads w live again (SPEC §14.2: immediately before it is mutated).
func (w *workload) reread(ctx context.Context, c client.Client) error {
	key := client.ObjectKey{Namespace: w.Namespace, Name: w.Name}
	switch w.Kind {
	case kindDeployment:
		w.d = &appsv1.Deployment{}
		return c.Get(ctx, key, w.d)
	case kindStatefulSet:
		w.s = &appsv1.StatefulSet{}
		return c.Get(ctx, key, w.s)
	}
	w.ds = &appsv1.DaemonSet{}
	return c.Get(ctx, key, w.ds)
}

// unsettled returns why w's rollout is not settled, "" when it is (SPEC §14.2).
func (w *workload) unsettled() string {
	switch {
	case w.d != nil:
		d := w.d
		want := ptrOr(d.Spec.Replicas, 1)
		if d.Spec.Paused {
			return "paused Deployment (resume it first: kubectl -n " + d.Namespace + " rollout resume deployment/" + d.Name + ")"
		}
		if d.Status.ObservedGeneration < d.Generation {
			return "rollout not settled: the controller has not observed the latest generation"
		}
		if d.Status.Replicas != want || d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want {
			return fmt.Sprintf("rollout not settled: %d replicas, %d updated, %d available, want %d",
				d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas, want)
		}
	case w.s != nil:
		s := w.s
		want := ptrOr(s.Spec.Replicas, 1)
		if s.Status.ObservedGeneration < s.Generation {
			return "rollout not settled: the controller has not observed the latest generation"
		}
		if s.Status.CurrentRevision != s.Status.UpdateRevision || s.Status.ReadyReplicas != want {
			return fmt.Sprintf("rollout not settled: revision %s, update revision %s, %d of %d ready",
				s.Status.CurrentRevision, s.Status.UpdateRevision, s.Status.ReadyReplicas, want)
		}
	default:
		d := w.ds
		if d.Status.ObservedGeneration < d.Generation {
			return "rollout not settled: the controller has not observed the latest generation"
		}
		if d.Status.UpdatedNumberScheduled != d.Status.DesiredNumberScheduled || d.Status.NumberUnavailable != 0 {
			return fmt.Sprintf("rollout not settled: %d of %d updated, %d unavailable",
				d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled, d.Status.NumberUnavailable)
		}
	}
	return ""
}

// currentReplicaSet is the Deployment's unique ReplicaSet at its revision: controlled by it
// (owner UID) and carrying the same revision annotation.
func currentReplicaSet(ctx context.Context, c client.Client, d *appsv1.Deployment) (*appsv1.ReplicaSet, string, error) {
	rss := &appsv1.ReplicaSetList{}
	if err := c.List(ctx, rss, client.InNamespace(d.Namespace)); err != nil {
		return nil, "", err
	}
	rev := d.Annotations[revisionAnnotation]
	var found []*appsv1.ReplicaSet
	for i := range rss.Items {
		rs := &rss.Items[i]
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID && rev != "" && rs.Annotations[revisionAnnotation] == rev {
			found = append(found, rs)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Sprintf("no unique current ReplicaSet (%d at revision %q)", len(found), rev), nil
	}
	return found[0], "", nil
}

// selectorPods lists every pod w's selector matches, in any phase.
func selectorPods(ctx context.Context, c client.Client, w *workload) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(w.selector())
	if err != nil {
		return nil, fmt.Errorf("selector: %w", err)
	}
	if sel.Empty() {
		sel = labels.Nothing()
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(w.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// liveUIDs are the sorted UIDs of the non-terminating selector pods.
func liveUIDs(ctx context.Context, c client.Client, w *workload) ([]string, error) {
	pods, err := selectorPods(ctx, c, w)
	if err != nil {
		return nil, err
	}
	var uids []string
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			uids = append(uids, string(p.UID))
		}
	}
	sort.Strings(uids)
	return uids, nil
}
