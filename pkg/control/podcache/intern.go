package podcache

import (
	"sort"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
)

// maxLists bounds the interning table. When it is full it starts over: the lists already
// shared stay shared (the pods hold them), only later pods find fewer to share with.
const maxLists = 16384

// lists interns resource lists across the cached pods: a ResourceList is a map of its own,
// about 600 bytes for two resources, and a pod has up to five per container (spec requests
// and limits, status requests and limits, allocations). Replicas of one Deployment, and a
// container's status once a resize is done, hold equal lists; interned, they hold one map.
// Readers see the same values. A cached object is never written to (every copy a
// controller changes is a DeepCopy, which copies each list on its own).
var lists = &interner{m: map[string]corev1.ResourceList{}}

type interner struct {
	mu sync.Mutex
	m  map[string]corev1.ResourceList
}

// list returns the interned list equal to l (l itself the first time it is seen).
func (in *interner) list(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	key := listKey(l)
	in.mu.Lock()
	defer in.mu.Unlock()
	if s, ok := in.m[key]; ok {
		return s
	}
	if len(in.m) >= maxLists {
		in.m = make(map[string]corev1.ResourceList, len(in.m))
	}
	in.m[key] = l
	return l
}

// listKey names a list exactly: each resource with its quantity's canonical form and
// format (a decoded Quantity keeps nothing else).
func listKey(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte('/')
		b.WriteString(string(q.Format))
		b.WriteByte(';')
	}
	return b.String()
}

// internLists replaces every resource list of a slim pod by its interned equal.
func internLists(pod *corev1.Pod) {
	reqs := func(r *corev1.ResourceRequirements) {
		r.Requests, r.Limits = lists.list(r.Requests), lists.list(r.Limits)
	}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			reqs(&cs[i].Resources)
		}
	}
	for _, ss := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range ss {
			ss[i].AllocatedResources = lists.list(ss[i].AllocatedResources)
			if ss[i].Resources != nil {
				reqs(ss[i].Resources)
			}
		}
	}
	pod.Spec.Overhead = lists.list(pod.Spec.Overhead)
	pod.Status.AllocatedResources = lists.list(pod.Status.AllocatedResources)
	if pod.Spec.Resources != nil {
		reqs(pod.Spec.Resources)
	}
	if pod.Status.Resources != nil {
		reqs(pod.Status.Resources)
	}
}

// intern returns s's canonical copy (unique.Make; "" as it is): equal strings of cached
// objects share one backing array.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
