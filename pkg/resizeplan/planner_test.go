package resizeplan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func r(mcpu, mib int64) Resources { return Resources{MilliCPU: mcpu, Bytes: mib << 20} }

func TestPlanNode(t *testing.T) {
	node := func(pods ...NodePod) Node {
		return Node{Name: "n", Allocatable: r(2000, 4096), MaxPods: 110, Pods: pods}
	}
	cases := map[string]struct {
		node  Node
		props []Proposal
		want  []Step
		guard bool
	}{
		"a growth that fits goes without the guard": {
			node:  node(NodePod{Key: "a", Held: r(500, 512)}, NodePod{Key: "x", Held: r(500, 512)}),
			props: []Proposal{{Key: "a", Target: r(900, 512)}},
			want:  []Step{{Key: "a", Decision: DecisionSend, Need: r(400, 0)}},
		},
		"non-enrolled pods count: the growth does not fit": {
			node:  node(NodePod{Key: "a", Held: r(900, 512)}, NodePod{Key: "other-team", Held: r(900, 512)}),
			props: []Proposal{{Key: "a", Target: r(1500, 512)}},
			want:  []Step{{Key: "a", Decision: DecisionLadder, Need: r(600, 0), Room: r(200, 3072), Shortfall: r(400, 0)}},
			guard: true,
		},
		"shrinks go first and make room, the growth waits for them under the guard": {
			node:  node(NodePod{Key: "a", Held: r(900, 512)}, NodePod{Key: "b", Held: r(900, 512)}),
			props: []Proposal{{Key: "a", Target: r(1500, 512)}, {Key: "b", Target: r(400, 512)}},
			want: []Step{{Key: "b", Shrink: true, Decision: DecisionSend},
				{Key: "a", Decision: DecisionAfterDonors, Need: r(600, 0)}},
			guard: true,
		},
		"donors are taken only when a growth is on the ladder": {
			node:  node(NodePod{Key: "a", Held: r(900, 512)}, NodePod{Key: "d", Held: r(900, 512)}),
			props: []Proposal{{Key: "a", Target: r(1000, 512)}, {Key: "d", Target: r(400, 512), Donor: true}},
			want: []Step{{Key: "d", Shrink: true, Donor: true, Decision: DecisionNotNeeded},
				{Key: "a", Decision: DecisionSend, Need: r(100, 0)}},
		},
		"a donor's pending shrink resolves a laddered growth": {
			node:  node(NodePod{Key: "a", Held: r(900, 512)}, NodePod{Key: "d", Held: r(900, 512)}),
			props: []Proposal{{Key: "a", Target: r(1500, 512)}, {Key: "d", Target: r(400, 512), Donor: true}},
			want: []Step{{Key: "d", Shrink: true, Donor: true, Decision: DecisionSend},
				{Key: "a", Decision: DecisionAfterDonors, Need: r(600, 0)}},
			guard: true,
		},
		"held is max(spec, allocated, actual): an unactuated shrink frees nothing yet": {
			// b's spec already says 400m but it still holds 900m: only a's own 200m are free.
			node:  node(NodePod{Key: "a", Held: r(900, 512)}, NodePod{Key: "b", Held: r(900, 512)}),
			props: []Proposal{{Key: "a", Target: r(1300, 512)}},
			want:  []Step{{Key: "a", Decision: DecisionLadder, Need: r(400, 0), Room: r(200, 3072), Shortfall: r(200, 0)}},
			guard: true,
		},
		"higher priority growth first": {
			node:  node(NodePod{Key: "lo", Held: r(500, 512)}, NodePod{Key: "hi", Held: r(500, 512), Priority: 10}),
			props: []Proposal{{Key: "lo", Target: r(1300, 512)}, {Key: "hi", Target: r(1300, 512)}},
			want: []Step{{Key: "hi", Decision: DecisionSend, Need: r(800, 0)},
				{Key: "lo", Decision: DecisionLadder, Need: r(800, 0), Room: r(200, 3072), Shortfall: r(600, 0)}},
			guard: true,
		},
		"mixed: cpu grows, memory shrinks": {
			node:  node(NodePod{Key: "a", Held: r(500, 2048)}),
			props: []Proposal{{Key: "a", Target: r(800, 1024)}},
			want:  []Step{{Key: "a", Decision: DecisionSend, Need: r(300, 0)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := PlanNode(tc.node, tc.props)
			if diff := cmp.Diff(tc.want, p.Steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if p.Guard != tc.guard {
				t.Errorf("guard = %v, want %v", p.Guard, tc.guard)
			}
		})
	}
}

func TestPlanNodeMaxPods(t *testing.T) {
	n := Node{Allocatable: r(2000, 4096), MaxPods: 2, Pods: []NodePod{{Key: "a", Held: r(100, 64)}, {Key: "b", Held: r(100, 64)}}}
	if p := PlanNode(n, nil); !p.AtMaxPods {
		t.Error("a node holding maxPods pods is not reported at maxPods")
	}
	if p := PlanNode(n, []Proposal{{Key: "a", Target: r(200, 64)}}); !p.Guard || p.Steps[0].Decision != DecisionSend {
		t.Errorf("a growth that fits on a full node: guard %v, steps %+v; want sent under the guard", p.Guard, p.Steps)
	}
	n.MaxPods = 3
	if p := PlanNode(n, nil); p.AtMaxPods {
		t.Error("room for a pod reported at maxPods")
	}
	if p := PlanNode(n, []Proposal{{Key: "a", Target: r(200, 64)}}); p.Guard {
		t.Error("a growth that fits below maxPods took the guard")
	}
}

func TestHandOver(t *testing.T) {
	node := Node{Allocatable: r(2000, 4096), MaxPods: 110, Pods: []NodePod{
		{Key: "target", Held: r(900, 512), Priority: 1000},
		{Key: "low", Held: r(900, 512), Priority: 100},
		{Key: "peer", Held: r(200, 512), Priority: 1000},
	}}
	base := HandOverInput{Node: node, Target: node.Pods[0], Shortfall: r(600, 0)}
	cases := map[string]struct {
		mod    func(*HandOverInput)
		ok     bool
		reason string
	}{
		"unprotected lower-priority victim": {ok: true},
		"PDB-protected victim": {mod: func(in *HandOverInput) {
			in.Node.Pods = append([]NodePod{}, in.Node.Pods...)
			in.Node.Pods[1].Protected = true
		}, reason: "pod low could be preempted but a PodDisruptionBudget allows no disruption"},
		"preemptionPolicy Never": {mod: func(in *HandOverInput) { in.PreemptionNever = true }, reason: "the pod's preemptionPolicy is Never"},
		"another owner's key":    {mod: func(in *HandOverInput) { in.OtherOwners = []string{"ops.example.com/freeze"} }, reason: "resize preemption is disabled on the node by ops.example.com/freeze"},
		"equal priority is never a victim": {mod: func(in *HandOverInput) {
			in.Node.Pods = []NodePod{in.Node.Pods[0], in.Node.Pods[2]}
		}, reason: "no pod of lower priority on the node"},
		"victims not enough": {mod: func(in *HandOverInput) { in.Shortfall = r(1000, 0) }, reason: "preempting every lower-priority pod would not free enough"},
		"maxPods with a donor in flight": {mod: func(in *HandOverInput) {
			in.Node.MaxPods, in.DonorsInFlight = 3, true
		}, reason: "the node is at maxPods and a donor shrink is still in flight"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := base
			if tc.mod != nil {
				tc.mod(&in)
			}
			ok, reason := HandOver(in)
			if ok != tc.ok || reason != tc.reason {
				t.Errorf("HandOver = %v %q, want %v %q", ok, reason, tc.ok, tc.reason)
			}
		})
	}
}

// genNode is a random node whose pods fit its allocatable, with proposals for some of the
// enrolled ones (own and donors).
func genNode(rng *rand.Rand, pods int) (Node, []Proposal, map[string]bool) {
	n := Node{Name: "n", Allocatable: r(int64(1000+rng.IntN(64000)), int64(1024+rng.IntN(256<<10))), MaxPods: 110}
	left := n.Allocatable
	enrolled := map[string]bool{}
	var props []Proposal
	for i := 0; i < pods; i++ {
		h := Resources{MilliCPU: rng.Int64N(max(left.MilliCPU, 0)/int64(pods-i) + 1), Bytes: rng.Int64N(max(left.Bytes, 0)/int64(pods-i) + 1)}
		left = left.Sub(h)
		p := NodePod{Key: fmt.Sprintf("ns/p%d", i), Held: h, Priority: int32(rng.IntN(3) * 100), Protected: rng.IntN(4) == 0}
		n.Pods = append(n.Pods, p)
		if rng.IntN(3) == 0 {
			continue // not enrolled: never proposed
		}
		enrolled[p.Key] = true
		if rng.IntN(2) == 0 {
			continue
		}
		scale := func(v int64) int64 { return max(0, v*int64(20+rng.IntN(260))/100) }
		props = append(props, Proposal{Key: p.Key, Target: Resources{MilliCPU: scale(h.MilliCPU), Bytes: scale(h.Bytes)}, Donor: rng.IntN(3) == 0})
	}
	return n, props, enrolled
}

// TestPlanNodeProperties checks the planner over generated nodes: with the guard held,
// what it sends never exceeds allocatable once actuated; shrinks come before growths; only
// proposed (enrolled) pods appear; a hand-over never has a PDB-protected candidate victim.
func TestPlanNodeProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[Decision]int{}
	handOvers := 0
	for iter := 0; iter < 3000; iter++ {
		n, props, enrolled := genNode(rng, 1+rng.IntN(40))
		p := PlanNode(n, props)
		target := map[string]Resources{}
		for _, pr := range props {
			target[pr.Key] = pr.Target
		}
		final := map[string]Resources{}
		for _, pod := range n.Pods {
			final[pod.Key] = pod.Held
		}
		seenGrowth := false
		for _, s := range p.Steps {
			if !enrolled[s.Key] {
				t.Fatalf("iter %d: step for a pod that is not enrolled: %s", iter, s.Key)
			}
			if s.Shrink && seenGrowth {
				t.Fatalf("iter %d: shrink %s after a growth", iter, s.Key)
			}
			seenGrowth = seenGrowth || !s.Shrink
			seen[s.Decision]++
			if s.Decision == DecisionSend || s.Decision == DecisionAfterDonors {
				final[s.Key] = target[s.Key]
			}
			if !s.Shrink && s.Decision != DecisionSend && !p.Guard {
				t.Fatalf("iter %d: growth %s may not fit but no guard", iter, s.Key)
			}
			if s.Decision == DecisionLadder {
				ok, _ := HandOver(HandOverInput{Node: n, Target: pod(n, s.Key), Shortfall: s.Shortfall})
				if ok {
					handOvers++
					for _, v := range n.Pods {
						if v.Priority < pod(n, s.Key).Priority && v.Protected {
							t.Fatalf("iter %d: hand-over with protected candidate victim %s", iter, v.Key)
						}
					}
				}
			}
		}
		var sum Resources
		for _, v := range final {
			sum = sum.Add(v)
		}
		if !sum.Fits(n.Allocatable) {
			t.Fatalf("iter %d: actuated plan holds %+v > allocatable %+v", iter, sum, n.Allocatable)
		}
	}
	// The generator must reach every decision, or the properties above prove little.
	for _, d := range []Decision{DecisionSend, DecisionAfterDonors, DecisionLadder, DecisionNotNeeded} {
		if seen[d] == 0 {
			t.Errorf("no generated node produced decision %s (%v)", d, seen)
		}
	}
	if handOvers == 0 {
		t.Error("no generated ladder step was handed over")
	}
	t.Logf("decisions %v, hand-overs %d", seen, handOvers)
}

func pod(n Node, key string) NodePod {
	for _, p := range n.Pods {
		if p.Key == key {
			return p
		}
	}
	return NodePod{}
}

// BenchmarkPlanNode110 plans one full node of 110 pods, every pod proposing a resize.
func BenchmarkPlanNode110(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, props, _ := genNode(rng, 110)
	b.ReportAllocs()
	for b.Loop() {
		PlanNode(n, props)
	}
}

// BenchmarkPlanCluster1000x20 plans 1,000 nodes of 20 pods: one interval of a large cluster.
func BenchmarkPlanCluster1000x20(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	type in struct {
		n     Node
		props []Proposal
	}
	nodes := make([]in, 1000)
	for i := range nodes {
		nodes[i].n, nodes[i].props, _ = genNode(rng, 20)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, x := range nodes {
			PlanNode(x.n, x.props)
		}
	}
}
