// Package twonode is Ballast's two-node real tier (issue 29): the node tier's cluster
// (test/node) started with two kubelet nodes, each with its own containerd in its own
// network namespace, Ballast installed by helm from its own images, and real traffic
// through the service stand-in while a singleton's node is drained or its Deployment
// rolled. Run it under the tier lock:
//
//	flock /tmp/realnode.lock env BALLAST_IMAGES=$PWD/_output/images go test -count=1 -timeout 30m ./test/twonode/ -v
package twonode
