package node

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// freeCPU is the node's allocatable cpu minus the requests of its non-terminal pods, in
// millicores (the scheduler's accounting; no pod here has overhead).
func freeCPU(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	node := &corev1.Node{}
	if err := n.Client.Get(ctx, client.ObjectKey{Name: NodeName}, node); err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := n.Client.List(ctx, pods); err != nil {
		t.Fatal(err)
	}
	free := node.Status.Allocatable.Cpu().MilliValue()
	for _, p := range pods.Items {
		if p.Spec.NodeName != NodeName || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var sum, initMax int64
		for _, c := range p.Spec.Containers {
			sum += c.Resources.Requests.Cpu().MilliValue()
		}
		for _, c := range p.Spec.InitContainers {
			initMax = max(initMax, c.Resources.Requests.Cpu().MilliValue())
		}
		free -= max(sum, initMax)
	}
	return free
}

// kubeletCounter sums a counter of the kubelet's /metrics (read through the API server's
// node proxy) over its label sets; -1 when absent.
func kubeletCounter(t *testing.T, ctx context.Context, name string) float64 {
	t.Helper()
	b, err := n.Clientset.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + NodeName + "/proxy/metrics").DoRaw(ctx)
	if err != nil {
		t.Logf("kubelet metrics: %v", err)
		return -1
	}
	sum, found := 0.0, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	if !found {
		return -1
	}
	return sum
}

// podEvents lists "<reason> <message>" of p's events.
func podEvents(t *testing.T, ctx context.Context, p *corev1.Pod) []string {
	t.Helper()
	evs := &corev1.EventList{}
	if err := n.Client.List(ctx, evs, client.InNamespace(p.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == p.Name {
			out = append(out, e.Reason+" "+e.Message)
		}
	}
	return out
}

// controlCounter sums the series of a counter whose line contains every one of match over
// the control-plane pods' /metrics (plain HTTP on the pod IP, telemetry.prometheus.enabled
// in the test values); -1 when no pod serves it.
func controlCounter(t *testing.T, ctx context.Context, name string, match ...string) float64 {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ballast"}, dep); err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := n.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for _, p := range pods.Items {
		if p.Status.PodIP == "" {
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Status.PodIP+":8080/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Logf("metrics of %s: %v", p.Name, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, name+"{") || !all(line, match) {
				continue
			}
			f := strings.Fields(line)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				sum, found = sum+v, true
			}
		}
	}
	if !found {
		return -1
	}
	return sum
}

func all(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
