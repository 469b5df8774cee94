package svcpick

import (
	"math/rand/v2"
	"reflect"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func ep(addr string, ready, serving, terminating bool) Endpoint {
	return Endpoint{Addr: addr, Ready: ready, Serving: serving, Terminating: terminating}
}

func TestCandidatesAndPick(t *testing.T) {
	newPod := ep("10.0.0.2:80", true, true, false)
	oldDraining := ep("10.0.0.1:80", false, true, true) // still passes readiness while shutting down
	oldFailing := ep("10.0.0.1:80", false, false, true) // readiness already failing
	starting := ep("10.0.0.3:80", false, false, false)  // not yet Ready
	other := ep("10.0.0.4:80", true, true, false)
	for _, tc := range []struct {
		name      string
		eps       []Endpoint
		want      []string
		wantReady bool
	}{
		{"none", nil, nil, false},
		{"one ready", []Endpoint{newPod}, []string{"10.0.0.2:80"}, true},
		{"ready wins over serving terminating", []Endpoint{oldDraining, newPod}, []string{"10.0.0.2:80"}, true},
		{"all ready ones, in order", []Endpoint{other, starting, newPod}, []string{"10.0.0.4:80", "10.0.0.2:80"}, true},
		{"no ready: serving terminating fallback", []Endpoint{oldDraining, starting}, []string{"10.0.0.1:80"}, false},
		{"no ready: not serving is not a fallback", []Endpoint{oldFailing, starting}, nil, false},
		{"not ready and not terminating is never a fallback", []Endpoint{ep("10.0.0.5:80", false, true, false)}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ready := Candidates(tc.eps)
			if !reflect.DeepEqual(got, tc.want) || ready != tc.wantReady {
				t.Fatalf("Candidates = %v, ready %v; want %v, ready %v", got, ready, tc.want, tc.wantReady)
			}
			// Pick with a rand that returns each index in turn reaches exactly the candidates.
			picked := map[string]bool{}
			for i := 0; i < len(tc.want)+1; i++ {
				n := 0
				got := Pick(tc.eps, func(k int) int { n = k; return i % k })
				if len(tc.want) == 0 {
					if got != "" {
						t.Fatalf("Pick = %q with no candidates", got)
					}
					continue
				}
				if n != len(tc.want) {
					t.Fatalf("Pick asked for an int in [0, %d), want [0, %d)", n, len(tc.want))
				}
				picked[got] = true
			}
			if len(tc.want) > 0 && len(picked) != len(tc.want) {
				t.Fatalf("Pick reached %v, want every one of %v", picked, tc.want)
			}
		})
	}
}

// TestPickUniform checks the pick spreads new connections over every Ready endpoint, as
// kube-proxy's random choice does, and never to a not-ready one while one is ready.
func TestPickUniform(t *testing.T) {
	eps := []Endpoint{ep("a:1", true, true, false), ep("b:1", false, true, true), ep("c:1", true, true, false), ep("d:1", true, true, false)}
	r := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	const n = 30000
	for i := 0; i < n; i++ {
		counts[Pick(eps, r.IntN)]++
	}
	if counts["b:1"] != 0 {
		t.Fatalf("a terminating endpoint got %d of %d connections while 3 were Ready", counts["b:1"], n)
	}
	for _, a := range []string{"a:1", "c:1", "d:1"} {
		if c := counts[a]; c < n/3-600 || c > n/3+600 { // ±6% of the expected 10000: ~9 sigma
			t.Fatalf("endpoint %s got %d of %d connections, want about %d: %v", a, c, n, n/3, counts)
		}
	}
}

func TestFromSlices(t *testing.T) {
	port := func(name string, p int32) discoveryv1.EndpointPort {
		ep := discoveryv1.EndpointPort{Port: ptr.To(p)}
		if name != "" {
			ep.Name = ptr.To(name)
		}
		return ep
	}
	slice := func(name string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{Ports: ports, Endpoints: eps}
		s.Name = name
		return s
	}
	e := func(ip string, c discoveryv1.EndpointConditions) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: c}
	}
	slices := []*discoveryv1.EndpointSlice{
		slice("web-b", []discoveryv1.EndpointPort{port("http", 8080)},
			e("10.0.0.2", discoveryv1.EndpointConditions{Ready: ptr.To(true)}),
			e("10.0.0.1", discoveryv1.EndpointConditions{}), // a duplicate of web-a's: web-a's conditions win
		),
		slice("web-a", []discoveryv1.EndpointPort{port("http", 8080), port("metrics", 9090)},
			e("10.0.0.1", discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}),
			discoveryv1.Endpoint{}, // no address: skipped
		),
		slice("web-c", []discoveryv1.EndpointPort{port("", 80)},
			e("10.0.0.9", discoveryv1.EndpointConditions{})),
	}
	got := FromSlices(slices, "http")
	want := []Endpoint{ep("10.0.0.1:8080", false, true, true), ep("10.0.0.2:8080", true, true, false)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("http: got %+v, want %+v", got, want)
	}
	if got, want := FromSlices(slices, "metrics"), []Endpoint{ep("10.0.0.1:9090", false, true, true)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("metrics: got %+v, want %+v", got, want)
	}
	// Unset conditions read as ready and serving, not terminating (as kube-proxy reads them).
	if got, want := FromSlices(slices, ""), []Endpoint{ep("10.0.0.9:80", true, true, false)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("unnamed port: got %+v, want %+v", got, want)
	}
}
