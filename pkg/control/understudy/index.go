package understudy

import (
	"sort"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Index maps protected Deployments to the Understudy that covers them. Every replica keeps
// one, fed by its Understudy informer, so the eviction webhook decides for unprotected
// pods with two map lookups and no API call.
type Index struct {
	mu sync.RWMutex
	// byTarget: Deployment → every Understudy naming it (the oldest wins).
	byTarget map[types.NamespacedName][]entry
	// perNS counts Understudies per namespace: zero is the fast "unprotected" answer.
	perNS map[string]int
	// known remembers each Understudy's target to undo it on update and delete.
	known map[types.NamespacedName]types.NamespacedName
}

type entry struct {
	key     types.NamespacedName
	created int64 // creation time, unix nanoseconds
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{byTarget: map[types.NamespacedName][]entry{}, perNS: map[string]int{},
		known: map[types.NamespacedName]types.NamespacedName{}}
}

// Upsert records u (informer add and update).
func (x *Index) Upsert(u *ballastv1.Understudy) {
	key := types.NamespacedName{Namespace: u.Namespace, Name: u.Name}
	target := types.NamespacedName{Namespace: u.Namespace, Name: u.Spec.TargetRef.Name}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(key)
	if u.Spec.TargetRef.Kind != ballastv1.KindDeployment {
		return
	}
	es := append(x.byTarget[target], entry{key: key, created: u.CreationTimestamp.UnixNano()})
	sort.Slice(es, func(i, j int) bool {
		if es[i].created != es[j].created {
			return es[i].created < es[j].created
		}
		return es[i].key.Name < es[j].key.Name
	})
	x.byTarget[target] = es
	x.perNS[u.Namespace]++
	x.known[key] = target
}

// Delete forgets the Understudy key.
func (x *Index) Delete(key types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(key)
}

func (x *Index) removeLocked(key types.NamespacedName) {
	target, ok := x.known[key]
	if !ok {
		return
	}
	delete(x.known, key)
	es := x.byTarget[target]
	for i := range es {
		if es[i].key == key {
			es = append(es[:i:i], es[i+1:]...)
			break
		}
	}
	if len(es) == 0 {
		delete(x.byTarget, target)
	} else {
		x.byTarget[target] = es
	}
	if x.perNS[key.Namespace]--; x.perNS[key.Namespace] <= 0 {
		delete(x.perNS, key.Namespace)
	}
}

// Guards reports whether any Understudy lives in namespace ns.
func (x *Index) Guards(ns string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.perNS[ns] > 0
}

// Owner returns the Understudy that covers Deployment target: the oldest naming it.
func (x *Index) Owner(target types.NamespacedName) (types.NamespacedName, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	es := x.byTarget[target]
	if len(es) == 0 {
		return types.NamespacedName{}, false
	}
	return es[0].key, true
}

// DeploymentOf returns the name of the Deployment that owns pod through a ReplicaSet:
// the ReplicaSet's name less "-<pod-template-hash>". "" when the pod is not a
// Deployment's.
func DeploymentOf(pod *corev1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller || ref.Kind != "ReplicaSet" {
			continue
		}
		hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if hash == "" || !strings.HasSuffix(ref.Name, "-"+hash) {
			return ""
		}
		return strings.TrimSuffix(ref.Name, "-"+hash)
	}
	return ""
}

// PodReady reports whether pod counts as a stand-in: Ready with every readiness gate True,
// bound to a node and not terminating.
func PodReady(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return false
	}
	conds := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, c := range pod.Status.Conditions {
		conds[c.Type] = c.Status
	}
	if conds[corev1.PodReady] != corev1.ConditionTrue {
		return false
	}
	for _, g := range pod.Spec.ReadinessGates {
		if conds[g.ConditionType] != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// podGone reports whether the doomed pod no longer counts: deleted, terminating or
// finished.
func podGone(pod *corev1.Pod) bool {
	return pod == nil || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
