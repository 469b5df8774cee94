package node

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	listersdiscoveryv1 "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ballastk8s/ballast/test/node/svcpick"
)

// svcProxy is a STAND-IN for kube-proxy and cluster DNS (this machine has no netfilter
// tooling for kube-proxy, and no DNS server package): for every ClusterIP Service it puts
// the cluster IP on the namespace's loopback and forwards each TCP connection to an endpoint
// from the EndpointSlices picked as kube-proxy picks one (uniformly at random among the
// Ready endpoints, or among the serving, terminating ones when none is Ready: svcpick),
// and it answers A queries for
// <service>.<namespace>.svc.cluster.local on the cluster DNS IP. Pods reach both through
// the CNI bridge's gateway, exactly where kube-proxy's rules would catch the packets.
type svcProxy struct {
	services listerscorev1.ServiceLister
	slices   listersdiscoveryv1.EndpointSliceLister
	cancel   context.CancelFunc

	mu        sync.Mutex
	listeners map[string]net.Listener // "ip:port" → listener
	addrs     map[string]bool         // cluster IPs on lo
	dns       net.PacketConn
}

func (n *Node) startProxy(ctx context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	f := informers.NewSharedInformerFactory(n.Clientset, 0)
	p := &svcProxy{services: f.Core().V1().Services().Lister(), slices: f.Discovery().V1().EndpointSlices().Lister(),
		cancel: cancel, listeners: map[string]net.Listener{}, addrs: map[string]bool{apiSvcIP: true, dnsIP: true}}
	n.proxy = p
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.sync() },
		UpdateFunc: func(any, any) { p.sync() },
		DeleteFunc: func(any) { p.sync() },
	}
	if _, err := f.Core().V1().Services().Informer().AddEventHandler(h); err != nil {
		return err
	}
	f.Discovery().V1().EndpointSlices().Informer()
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("service stand-in: %v cache did not sync", typ)
		}
	}
	dns, err := net.ListenPacket("udp", net.JoinHostPort(dnsIP, "53"))
	if err != nil {
		return fmt.Errorf("service stand-in: DNS: %w", err)
	}
	p.dns = dns
	go p.serveDNS()
	p.sync()
	return nil
}

// sync opens a listener for every ClusterIP service port that has none and closes those
// of deleted services.
func (p *svcProxy) sync() {
	svcs, err := p.services.List(labels.Everything())
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listeners == nil {
		return // stopped
	}
	want := map[string]bool{}
	for _, s := range svcs {
		ip := s.Spec.ClusterIP
		if ip == "" || ip == corev1.ClusterIPNone {
			continue
		}
		if !p.addrs[ip] {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := run(ctx, "ip", "addr", "add", ip+"/32", "dev", "lo")
			cancel()
			if err != nil {
				continue
			}
			p.addrs[ip] = true
		}
		for _, port := range s.Spec.Ports {
			if port.Protocol != corev1.ProtocolTCP {
				continue
			}
			key := net.JoinHostPort(ip, strconv.Itoa(int(port.Port)))
			want[key] = true
			if p.listeners[key] != nil {
				continue
			}
			l, err := net.Listen("tcp", key)
			if err != nil {
				continue
			}
			p.listeners[key] = l
			go p.accept(l, s.Namespace, s.Name, port.Name)
		}
	}
	for key, l := range p.listeners {
		if !want[key] {
			l.Close()
			delete(p.listeners, key)
		}
	}
}

func (p *svcProxy) accept(l net.Listener, ns, svc, portName string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go p.forward(c, ns, svc, portName)
	}
}

// forward connects c to an endpoint of the service port picked as kube-proxy picks one
// (svcpick: uniformly at random among the Ready endpoints; only when none is Ready, among
// the serving, terminating ones).
func (p *svcProxy) forward(c net.Conn, ns, svc, portName string) {
	defer c.Close()
	target := svcpick.Pick(p.endpoints(ns, svc, portName), rand.IntN)
	if target == "" {
		return
	}
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (p *svcProxy) endpoints(ns, svc, portName string) []svcpick.Endpoint {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc})
	slices, err := p.slices.EndpointSlices(ns).List(sel)
	if err != nil {
		return nil
	}
	return svcpick.FromSlices(slices, portName)
}

// lookup returns the cluster IP of <svc>.<ns>.svc.cluster.local.
func (p *svcProxy) lookup(svc, ns string) net.IP {
	s, err := p.services.Services(ns).Get(svc)
	if err != nil {
		return nil
	}
	return net.ParseIP(s.Spec.ClusterIP).To4()
}

func (p *svcProxy) stop() {
	if p == nil {
		return
	}
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.listeners {
		l.Close()
	}
	p.listeners = nil
	if p.dns != nil {
		p.dns.Close()
	}
}

// Endpoints returns the addresses the service stand-in picks from at random for a new
// connection to the named port of Service ns/svc (sorted), and whether they are Ready
// endpoints; ready is false when there is none or when none is Ready and these are the
// serving, terminating fallback (see svcpick).
func (n *Node) Endpoints(ns, svc, portName string) (addrs []string, ready bool) {
	addrs, ready = svcpick.Candidates(n.proxy.endpoints(ns, svc, portName))
	sort.Strings(addrs)
	return addrs, ready
}

// EndpointsString formats Endpoints' answer for a log: "[]", "[a b]", or
// "terminating [a]" for the fallback.
func EndpointsString(addrs []string, ready bool) string {
	if !ready && len(addrs) > 0 {
		return fmt.Sprintf("terminating %v", addrs)
	}
	return fmt.Sprintf("%v", addrs)
}

// EndpointsDetail formats every EndpointSlice of Service ns/svc with each endpoint's
// conditions (r ready, s serving, t terminating), for a log of what the stand-in saw.
func (n *Node) EndpointsDetail(ns, svc string) string {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc})
	slices, err := n.proxy.slices.EndpointSlices(ns).List(sel)
	if err != nil {
		return err.Error()
	}
	sort.Slice(slices, func(i, j int) bool { return slices[i].Name < slices[j].Name })
	var parts []string
	for _, s := range slices {
		var eps []string
		for _, e := range s.Endpoints {
			c, flags := e.Conditions, ""
			for _, f := range []struct {
				v *bool
				l string
			}{{c.Ready, "r"}, {c.Serving, "s"}, {c.Terminating, "t"}} {
				switch {
				case f.v == nil:
					flags += f.l + "?"
				case *f.v:
					flags += f.l
				}
			}
			eps = append(eps, fmt.Sprintf("%v(%s)", e.Addresses, flags))
		}
		parts = append(parts, fmt.Sprintf("%s{%s}", s.Name, strings.Join(eps, " ")))
	}
	return strings.Join(parts, " ")
}
