package resizeplan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// benchPods are n running pods of two containers each with status resources, half of
// them proposing a resize of their app container.
func benchPods(rng *rand.Rand, n int) ([]*corev1.Pod, map[string]map[string]corev1.ResourceList) {
	pods := make([]*corev1.Pod, n)
	props := map[string]map[string]corev1.ResourceList{}
	for i := range pods {
		p := &corev1.Pod{}
		p.Namespace, p.Name = "ns", fmt.Sprintf("p%d", i)
		for _, c := range []string{"app", "proxy"} {
			r := req(10+rng.Int64N(500), 16+rng.Int64N(512))
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Resources: r})
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c,
				AllocatedResources: r.Requests, Resources: &corev1.ResourceRequirements{Requests: r.Requests}})
		}
		pods[i] = p
		if i%2 == 0 {
			props[p.Namespace+"/"+p.Name] = map[string]corev1.ResourceList{"app": req(10+rng.Int64N(800), 16+rng.Int64N(800)).Requests}
		}
	}
	return pods, props
}

// nodePass is the pure part of one node's pass: accounting every pod from its objects,
// then planning.
func nodePass(pods []*corev1.Pod, props map[string]map[string]corev1.ResourceList) Plan {
	n := Node{Allocatable: r(64000, 256<<10), MaxPods: 110, Pods: make([]NodePod, 0, len(pods))}
	var ps []Proposal
	for _, p := range pods {
		k := p.Namespace + "/" + p.Name
		n.Pods = append(n.Pods, NodePod{Key: k, Held: Accounted(p, nil)})
		if o, ok := props[k]; ok {
			ps = append(ps, Proposal{Key: k, Target: Planned(p, o)})
		}
	}
	return PlanNode(n, ps)
}

// BenchmarkNodePass110 is one interval of a full node (110 pods, 55 proposals) from pod
// objects.
func BenchmarkNodePass110(b *testing.B) {
	pods, props := benchPods(rand.New(rand.NewPCG(11, 12)), 110)
	b.ReportAllocs()
	for b.Loop() {
		nodePass(pods, props)
	}
}

// BenchmarkClusterPass1000x20 is one interval of 1,000 nodes × 20 pods from pod objects.
func BenchmarkClusterPass1000x20(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	type node struct {
		pods  []*corev1.Pod
		props map[string]map[string]corev1.ResourceList
	}
	nodes := make([]node, 1000)
	for i := range nodes {
		nodes[i].pods, nodes[i].props = benchPods(rng, 20)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range nodes {
			nodePass(n.pods, n.props)
		}
	}
}

// BenchmarkTargetsOf is one proposal's full targets (a two-container pod, one changed), as
// each node pass computes them for Planned.
func BenchmarkTargetsOf(b *testing.B) {
	pods, props := benchPods(rand.New(rand.NewPCG(15, 16)), 2)
	pod := pods[0]
	changes := []sizing.ContainerChanges{{Name: "app", Index: 0, Requests: props[pod.Namespace+"/"+pod.Name]["app"]}}
	b.ReportAllocs()
	for b.Loop() {
		TargetsOf(pod, changes)
	}
}
