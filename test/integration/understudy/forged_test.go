package understudy

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// forge POSTs an AdmissionReview for the eviction of ns/pod straight to the webhook port,
// as any pod that can reach it could (no client certificate, the serving certificate
// unchecked, any user name it likes), and returns the answer.
func forge(t *testing.T, c context.Context, ns, pod string) *admissionv1.AdmissionResponse {
	t.Helper()
	ev, _ := json.Marshal(&policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}})
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprintf("forged-%d", time.Now().UnixNano())),
			Kind:     metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "eviction",
			Namespace: ns, Name: pod, Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:cluster-autoscaler"},
			Object:   runtime.RawExtension{Raw: ev}}}
	body, _ := json.Marshal(&review)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequestWithContext(c, http.MethodPost, fmt.Sprintf("https://127.0.0.1:%d%s", sb.WebhookPort(), ballastv1.EvictionWebhookPath), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("posting the forged review: %v", err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		t.Fatalf("answer to the forged review: %v", err)
	}
	return out.Response
}

// TestForgedEvictionReviewKeepsThePod: a review forged from inside the cluster for a
// protected singleton whose node is not doomed starts at most one surge, and the real
// ReplicaSet controller's scale-back removes the stand-in, not the singleton's pod; a
// repeat is not held and writes nothing.
func TestForgedEvictionReviewKeepsThePod(t *testing.T) {
	c := ctx(t, 3*time.Minute)
	if _, err := sb.DeploySingleton(c, "team-forged", "web", nil); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-forged", "guard", "web", func(u *ballastv1.Understudy) { u.Spec.ReadinessDeadlineSeconds = 20 })
	wantPhase(t, c, "team-forged", "guard", ballastv1.UnderstudyIdle)
	orig := onePod(t, c, "team-forged", "web")

	w := watch("team-forged", "web", orig.Name)
	// Until the webhook replica's caches know the pod and the Understudy, it allows.
	waitFor(t, c, "forged review held", func() error {
		if r := forge(t, c, "team-forged", orig.Name); r.Allowed {
			return fmt.Errorf("allowed")
		}
		return nil
	})
	// Nobody evicts the pod: once the stand-in is Ready and (now) readinessDeadlineSeconds
	// after the surge the Understudy scales back and the ReplicaSet removes one pod.
	var u *ballastv1.Understudy
	waitFor(t, c, "surge and scale-back", func() error {
		var err error
		if u, err = phase(c, "team-forged", "guard"); err != nil {
			return err
		}
		if u.Status.LastSurgeTime == nil || u.Status.LastReleaseTime == nil || u.Status.Phase != ballastv1.UnderstudyIdle {
			return fmt.Errorf("status %+v", u.Status)
		}
		return nil
	})
	t.Logf("surge at %s, scale-back at %s", u.Status.LastSurgeTime.Format(time.RFC3339), u.Status.LastReleaseTime.Format(time.RFC3339))
	wantReplicas(t, c, "team-forged", "web", 1)
	waitFor(t, c, "one pod left", func() error {
		ps, err := pods(c, "team-forged", "web")
		if err != nil {
			return err
		}
		live := 0
		for i := range ps {
			if ps[i].DeletionTimestamp == nil {
				live++
			}
		}
		if live != 1 {
			return fmt.Errorf("%d live pods", live)
		}
		return nil
	})
	minReady, maxReady, samples := w.end()
	now := onePod(t, c, "team-forged", "web")
	t.Logf("forged review: Ready pods min %d max %d over %d samples; pod before %s, after %s; doomed pod ended %v",
		minReady, maxReady, samples, orig.Name, now.Name, !w.doomedEnd.IsZero())
	if now.Name != orig.Name || !w.doomedEnd.IsZero() {
		t.Fatalf("the singleton's pod %s was deleted by a forged review (now %s)", orig.Name, now.Name)
	}
	if minReady < 1 {
		t.Errorf("Ready pods dropped to %d", minReady)
	}
	// A repeat within the rate limit: allowed, nothing recorded.
	if again := forge(t, c, "team-forged", orig.Name); !again.Allowed {
		t.Errorf("repeated forged review held: %v", again.Result)
	}
	if u, err := phase(c, "team-forged", "guard"); err != nil || u.Status.BlockedSince != nil || u.Status.OriginalReplicas != nil {
		t.Errorf("repeat recorded a hold or surged: %+v %v", u.Status, err)
	}
}
