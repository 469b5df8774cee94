// Package svcpick is the endpoint choice of the real-node tiers' kube-proxy stand-in
// (test/node/svcproxy.go), kept pure so it can be tested without a node: EndpointSlices
// in, the candidate set and one pick out, with the random source injected.
//
// It does what kube-proxy (iptables and nftables modes) does for a Service without
// trafficDistribution, topology hints or a Local traffic policy:
//   - an endpoint is ready when its Ready condition is unset or true, serving when its
//     Serving condition is unset or true, terminating when its Terminating condition is
//     set and true (kube-proxy's endpointslice cache reads the conditions this way);
//   - the cluster endpoints are the ready ones; only when none is ready, kube-proxy falls
//     back to the endpoints that are serving and terminating (a pod that still passes its
//     readiness probe while it shuts down), so connections are not refused while a
//     replacement is not yet Ready;
//   - each new connection goes to one of those, chosen uniformly at random.
package svcpick

import (
	"net"
	"sort"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// Endpoint is one address:port of a Service port with its EndpointSlice conditions.
type Endpoint struct {
	Addr                        string // host:port
	Ready, Serving, Terminating bool
}

// FromSlices lists the endpoints of the named Service port (portName "" for an unnamed
// port) across slices, one per address:port (kube-proxy merges duplicates across slices;
// here the first slice that lists one wins, and slices are taken in name order so the
// result does not depend on the lister's order). Only an endpoint's first address is used,
// as kube-proxy does.
func FromSlices(slices []*discoveryv1.EndpointSlice, portName string) []Endpoint {
	sorted := append([]*discoveryv1.EndpointSlice(nil), slices...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	seen := map[string]bool{}
	var out []Endpoint
	for _, s := range sorted {
		for _, port := range s.Ports {
			if port.Port == nil || (port.Name != nil && *port.Name != portName) || (port.Name == nil && portName != "") {
				continue
			}
			for _, e := range s.Endpoints {
				if len(e.Addresses) == 0 {
					continue
				}
				addr := net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*port.Port)))
				if seen[addr] {
					continue
				}
				seen[addr] = true
				c := e.Conditions
				out = append(out, Endpoint{Addr: addr,
					Ready:       c.Ready == nil || *c.Ready,
					Serving:     c.Serving == nil || *c.Serving,
					Terminating: c.Terminating != nil && *c.Terminating})
			}
		}
	}
	return out
}

// Candidates returns the addresses a new connection may go to, in input order, and
// whether they are Ready endpoints (false: none is ready and these are the serving,
// terminating fallback, or there are none at all).
func Candidates(eps []Endpoint) (addrs []string, ready bool) {
	for _, e := range eps {
		if e.Ready {
			addrs = append(addrs, e.Addr)
		}
	}
	if len(addrs) > 0 {
		return addrs, true
	}
	for _, e := range eps {
		if e.Serving && e.Terminating {
			addrs = append(addrs, e.Addr)
		}
	}
	return addrs, false
}

// Pick returns the address for one new connection: one of Candidates(eps), chosen by
// intn (math/rand's IntN: a uniform int in [0, n)), or "" when there is none.
func Pick(eps []Endpoint, intn func(n int) int) string {
	addrs, _ := Candidates(eps)
	if len(addrs) == 0 {
		return ""
	}
	return addrs[intn(len(addrs))]
}
