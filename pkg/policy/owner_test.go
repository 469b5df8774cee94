package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func owner(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, Controller: new(controller)}
}

func TestTopLevel(t *testing.T) {
	// The cluster: objects in namespace "ns" and their ownerReferences.
	objects := map[string][]metav1.OwnerReference{
		"ReplicaSet/web-6d4f":     {owner("apps/v1", "Deployment", "web", true)},
		"ReplicaSet/bare-rs":      nil,
		"ReplicaSet/custom-rs":    {owner("example.com/v1", "Rollout", "canary", true)},
		"ReplicaSet/noncontrol":   {owner("apps/v1", "Deployment", "web", false)},
		"Job/nightly-2901":        {owner("batch/v1", "CronJob", "nightly", true)},
		"Job/one-off":             nil,
		"ReplicaSet/loop-a":       {owner("apps/v1", "ReplicaSet", "loop-b", true)},
		"ReplicaSet/loop-b":       {owner("apps/v1", "ReplicaSet", "loop-a", true)},
		"StatefulSet/db":          {owner("example.com/v1", "Operator", "x", true)},
		"ReplicaSet/other-ns-web": nil,
	}
	var lookedUp []string
	lookup := func(kind, ns, name string) ([]metav1.OwnerReference, bool) {
		lookedUp = append(lookedUp, kind+"/"+name)
		refs, ok := objects[kind+"/"+name]
		return refs, ok && ns == "ns"
	}
	type result struct{ Kind, Name, Controller string }
	cases := map[string]struct {
		refs        []metav1.OwnerReference
		want        result
		wantLookups int
	}{
		"a pod without owners is its own workload": {nil, result{"Pod", "pod-1", ""}, 0},
		"a non-controller owner is ignored": {
			[]metav1.OwnerReference{owner("apps/v1", "ReplicaSet", "web-6d4f", false)}, result{"Pod", "pod-1", ""}, 0,
		},
		"Pod → ReplicaSet → Deployment": {
			[]metav1.OwnerReference{owner("apps/v1", "ReplicaSet", "web-6d4f", true)}, result{"Deployment", "web", "ReplicaSet"}, 1,
		},
		"Pod → Job → CronJob": {
			[]metav1.OwnerReference{owner("batch/v1", "Job", "nightly-2901", true)}, result{"CronJob", "nightly", "Job"}, 1,
		},
		"a Job without owner is the top level": {
			[]metav1.OwnerReference{owner("batch/v1", "Job", "one-off", true)}, result{"Job", "one-off", "Job"}, 1,
		},
		"a ReplicaSet owned by another kind yields that kind": {
			[]metav1.OwnerReference{owner("apps/v1", "ReplicaSet", "custom-rs", true)}, result{"Rollout", "canary", "ReplicaSet"}, 1,
		},
		"a ReplicaSet whose owner is not its controller is the top level": {
			[]metav1.OwnerReference{owner("apps/v1", "ReplicaSet", "noncontrol", true)}, result{"ReplicaSet", "noncontrol", "ReplicaSet"}, 1,
		},
		"an unreadable ReplicaSet stops the walk at the direct owner": {
			[]metav1.OwnerReference{owner("apps/v1", "ReplicaSet", "gone", true)}, result{"ReplicaSet", "gone", "ReplicaSet"}, 1,
		},
		"a StatefulSet ends the walk without a lookup": {
			[]metav1.OwnerReference{owner("apps/v1", "StatefulSet", "db", true)}, result{"StatefulSet", "db", "StatefulSet"}, 0,
		},
		"a ReplicaSet of another API group is not walked": {
			[]metav1.OwnerReference{owner("example.com/v1", "ReplicaSet", "web-6d4f", true)}, result{"ReplicaSet", "web-6d4f", "ReplicaSet"}, 0,
		},
		"the controller is found among several owners": {
			[]metav1.OwnerReference{owner("v1", "ConfigMap", "cm", false), owner("batch/v1", "Job", "nightly-2901", true)},
			result{"CronJob", "nightly", "Job"}, 1,
		},
		"an ownership cycle terminates": {
			[]metav1.OwnerReference{owner("apps/v1", "ReplicaSet", "loop-a", true)}, result{"ReplicaSet", "loop-a", "ReplicaSet"}, maxOwnerDepth,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lookedUp = nil
			var got result
			got.Kind, got.Name, got.Controller = TopLevel("pod-1", "ns", tc.refs, lookup)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TopLevel (-want +got):\n%s", diff)
			}
			if len(lookedUp) != tc.wantLookups {
				t.Errorf("looked up %v, want %d lookups", lookedUp, tc.wantLookups)
			}
		})
	}
}
