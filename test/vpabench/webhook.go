package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/test/sandbox"
)

const webhookRate, webhookRequests = 200, 2000

// vpaWebhookLatency posts AdmissionReviews of pod creations straight to VPA's admission
// controller at 200/s, over TLS, the way test/bench's BenchmarkAdmissionLatency posts them to
// Ballast's handler: each pod is owned by a real ReplicaSet of a Deployment under a VPA with
// a recommendation, so the controller resolves the owner chain, matches the VPA and patches.
func vpaWebhookLatency(ctx context.Context, s *sandbox.Sandbox, nsOf func(int) string, apps []string) (p50, p99 float64, err error) {
	var owners []*appsv1.ReplicaSet
	for i := 0; i < len(apps) && len(owners) < 200; i += max(1, len(apps)/200) {
		l := &appsv1.ReplicaSetList{}
		if err := s.Client.List(ctx, l, client.InNamespace(nsOf(i)), client.MatchingLabels{"app.kubernetes.io/name": apps[i]}); err != nil {
			return 0, 0, err
		}
		if len(l.Items) > 0 {
			owners = append(owners, &l.Items[0])
		}
	}
	if len(owners) == 0 {
		return 0, 0, fmt.Errorf("no ReplicaSets")
	}
	ca, err := os.ReadFile(s.VPAInfo.CAFile)
	if err != nil {
		return 0, 0, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64}}
	post := func(n int) ([]time.Duration, error) {
		lat := make([]time.Duration, n)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		tick := time.NewTicker(time.Second / webhookRate)
		defer tick.Stop()
		for i := 0; i < n; i++ {
			<-tick.C
			body := vpaReview(i, owners[i%len(owners)])
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				t0 := time.Now()
				resp, err := hc.Post(s.VPAInfo.WebhookURL+"/", "application/json", bytes.NewReader(body))
				if err == nil {
					out, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"allowed":true`)) {
						err = fmt.Errorf("status %d: %.200s", resp.StatusCode, out)
					}
				}
				lat[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}(i)
		}
		wg.Wait()
		slices.Sort(lat)
		return lat, firstErr
	}
	if _, err := post(200); err != nil { // warm up (TLS sessions, caches)
		return 0, 0, err
	}
	lat, err := post(webhookRequests)
	q := func(x float64) float64 { return float64(lat[int(x*float64(len(lat)-1))].Microseconds()) / 1000 }
	return q(0.5), q(0.99), err
}

func vpaReview(i int, rs *appsv1.ReplicaSet) []byte {
	tmpl := rs.Spec.Template
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-churn-%d", rs.Name, i), Namespace: rs.Namespace, Labels: tmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec: tmpl.Spec,
	}
	raw, _ := json.Marshal(pod)
	ar := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprint(i)), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: rs.Namespace, Name: pod.Name,
			// requestKind and requestResource as kube-apiserver sends them (VPA reads requestKind).
			RequestKind:     &metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			RequestResource: &metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Operation:       admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
	out, _ := json.Marshal(ar)
	return out
}

func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
