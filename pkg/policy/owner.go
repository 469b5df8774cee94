package policy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OwnerLookup returns the ownerReferences of the object kind/namespace/name, and false when
// the object cannot be read. It is called only for apps/ReplicaSet and batch/Job.
type OwnerLookup func(kind, namespace, name string) (ownerRefs []metav1.OwnerReference, found bool)

// maxOwnerDepth bounds the walk so that a cycle of owner references cannot loop forever.
const maxOwnerDepth = 8

// TopLevel walks a pod's controller references to its top-level workload (SPEC §3.1).
// A pod without a controller reference is its own workload (kind Pod, its name) and has
// no direct controller kind. A ReplicaSet (apps) or Job (batch) controller is read via
// lookup and, if it has a controller reference, the walk continues to that owner
// (Pod→ReplicaSet→Deployment, Pod→Job→CronJob); any other kind ends the walk, and so does
// an owner that lookup cannot read (the walk stops at the last object reached).
func TopLevel(podName, podNamespace string, ownerRefs []metav1.OwnerReference, lookup OwnerLookup) (kind, name, directControllerKind string) {
	ref := controllerRef(ownerRefs)
	if ref == nil {
		return "Pod", podName, ""
	}
	directControllerKind = ref.Kind
	for range maxOwnerDepth {
		if !walksThrough(ref) || lookup == nil {
			break
		}
		refs, found := lookup(ref.Kind, podNamespace, ref.Name)
		if !found {
			break
		}
		next := controllerRef(refs)
		if next == nil {
			break
		}
		ref = next
	}
	return ref.Kind, ref.Name, directControllerKind
}

// controllerRef returns the reference with controller: true, or nil.
func controllerRef(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if c := refs[i].Controller; c != nil && *c {
			return &refs[i]
		}
	}
	return nil
}

// walksThrough reports whether the walk reads ref's object to continue past it.
func walksThrough(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	return (gv.Group == "apps" && ref.Kind == "ReplicaSet") || (gv.Group == "batch" && ref.Kind == "Job")
}
