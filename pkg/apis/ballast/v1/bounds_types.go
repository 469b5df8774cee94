package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeBounds are the administrator's caps on every recommendation Ballast applies, so the
// node cap does not rest on what nodes report about themselves alone (a kubelet writes its
// own Node's status.allocatable). The cap of a resource is the smaller of its maximum here
// and the largest allocatable among the trusted nodes. Without bounds every node is
// trusted and the cap is the largest allocatable of all nodes (compute default).
type NodeBounds struct {
	// MaxNodeCPU caps every cpu request and limit Ballast applies.
	// +optional
	MaxNodeCPU *resource.Quantity `json:"maxNodeCPU,omitempty"`
	// MaxNodeMemory caps every memory request and limit Ballast applies.
	// +optional
	MaxNodeMemory *resource.Quantity `json:"maxNodeMemory,omitempty"`
	// TrustedNodeSelector selects the nodes whose status.allocatable sets the node cap;
	// others are ignored for it. Unset: every node. A selector no node matches leaves only
	// the maxima above (no node cap).
	// +optional
	TrustedNodeSelector *metav1.LabelSelector `json:"trustedNodeSelector,omitempty"`
}
