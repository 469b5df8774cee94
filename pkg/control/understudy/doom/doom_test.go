package doom

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func node(mut func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if mut != nil {
		mut(n)
	}
	return n
}

func taint(key, value string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule})
	}
}

func TestFromNode(t *testing.T) {
	keys := Keys{Voluntary: []string{"example.com/maintenance"}, Involuntary: []string{"aws-node-termination-handler/spot-itn"}}
	deadline := t0.Add(2 * time.Minute)
	cases := map[string]struct {
		node         *corev1.Node
		want         []Signal
		class        Class
		hasDeadline  bool
		mergedSource string
	}{
		"healthy node":   {node: node(nil)},
		"other taint":    {node: node(taint("node.kubernetes.io/not-ready", ""))},
		"nil node":       {node: nil},
		"cordon":         {node: node(func(n *corev1.Node) { n.Spec.Unschedulable = true }), want: []Signal{{Node: "n1", Class: Voluntary, Source: SourceCordon}}},
		"karpenter":      {node: node(taint(TaintKarpenterDisrupted, "")), want: []Signal{{Node: "n1", Class: Voluntary, Source: SourceKarpenter}}},
		"autoscaler":     {node: node(taint(TaintClusterAutoscaler, "1733047200")), want: []Signal{{Node: "n1", Class: Voluntary, Source: SourceClusterAutoscaler}}},
		"out of service": {node: node(taint(TaintOutOfService, "nodeshutdown")), want: []Signal{{Node: "n1", Class: Involuntary, Source: SourceOutOfService}}},
		"deletion": {node: node(func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: t0} }),
			want: []Signal{{Node: "n1", Class: Involuntary, Source: SourceNodeDeletion}}},
		"configured voluntary": {node: node(taint("example.com/maintenance", "soon")),
			want: []Signal{{Node: "n1", Class: Voluntary, Source: "taint:example.com/maintenance"}}},
		"configured involuntary with deadline": {node: node(taint("aws-node-termination-handler/spot-itn", deadline.Format(time.RFC3339))),
			want: []Signal{{Node: "n1", Class: Involuntary, Source: "taint:aws-node-termination-handler/spot-itn", Deadline: &deadline}}},
	}
	for name, tc := range cases {
		got := FromNode(tc.node, keys)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %d signals %+v, want %+v", name, len(got), got, tc.want)
			continue
		}
		for i := range got {
			g, w := got[i], tc.want[i]
			if g.Node != w.Node || g.Class != w.Class || g.Source != w.Source || (g.Deadline == nil) != (w.Deadline == nil) ||
				(g.Deadline != nil && !g.Deadline.Equal(*w.Deadline)) {
				t.Errorf("%s: signal %d = %+v, want %+v", name, i, g, w)
			}
		}
	}
}

func TestMerge(t *testing.T) {
	if _, ok := Merge(nil); ok {
		t.Error("no signals must merge to none")
	}
	d1, d2 := t0.Add(time.Minute), t0.Add(3*time.Minute)
	s, ok := Merge([]Signal{
		{Node: "n1", Class: Voluntary, Source: SourceCordon, Deadline: &d2},
		{Node: "n1", Class: Involuntary, Source: SourceOutOfService},
		{Node: "n1", Class: Voluntary, Source: "taint:x", Deadline: &d1},
	})
	if !ok || s.Class != Involuntary || s.Source != SourceOutOfService || s.Deadline == nil || !s.Deadline.Equal(d1) {
		t.Errorf("merged = %+v, want involuntary from out-of-service with the earliest deadline", s)
	}
	v, _ := Merge([]Signal{{Node: "n1", Class: Voluntary, Source: SourceCordon}, {Node: "n1", Class: Voluntary, Source: SourceKarpenter}})
	if v.Class != Voluntary || v.Source != SourceCordon || v.Deadline != nil {
		t.Errorf("two voluntary = %+v", v)
	}
}

func TestHeldAndTooClose(t *testing.T) {
	cases := []struct {
		mode  string
		class Class
		want  bool
	}{
		{"always", Voluntary, true}, {"always", Involuntary, true}, {"", Involuntary, true},
		{"voluntary-only", Voluntary, true}, {"voluntary-only", Involuntary, false},
		{"off", Voluntary, false}, {"off", Involuntary, false},
	}
	for _, c := range cases {
		if got := Held(c.mode, c.class); got != c.want {
			t.Errorf("Held(%q, %s) = %v, want %v", c.mode, c.class, got, c.want)
		}
	}
	near, far := t0.Add(30*time.Second), t0.Add(5*time.Minute)
	if !TooClose(Signal{Deadline: &near}, t0, time.Minute) || TooClose(Signal{Deadline: &far}, t0, time.Minute) ||
		TooClose(Signal{}, t0, time.Minute) {
		t.Error("TooClose: want true only for a known deadline closer than minSurge")
	}
	if got := FromEviction("n2"); got.Node != "n2" || got.Class != Voluntary || got.Source != SourceEviction {
		t.Errorf("FromEviction = %+v", got)
	}
	if got := ParseKeys(" a, ,b/c,"); len(got) != 2 || got[0] != "a" || got[1] != "b/c" {
		t.Errorf("ParseKeys = %q", got)
	}
}
