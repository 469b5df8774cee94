package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func runtimeRaw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

// checkWebhook is `ballast-control check-webhook <url> <ca-file>`, the chart's `helm test`:
// it sends the admission webhook at url (its Service) a dry-run AdmissionReview for a pod in
// measure mode, verifying the serving certificate with the CA in ca-file, and fails unless
// the webhook answers for that request and allows it.
func checkWebhook(ctx context.Context, url, caFile string) error {
	if url == "" || caFile == "" {
		return fmt.Errorf("usage: ballast-control check-webhook <url> <ca-file>")
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("reading the webhook CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	dryRun := true
	uid := types.UID(fmt.Sprintf("helm-test-%d", time.Now().UnixNano()))
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: uid, Operation: admissionv1.Create, Namespace: "default", Name: "helm-test", DryRun: &dryRun,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Object: runtimeRaw(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"helm-test","namespace":"default",` +
				`"labels":{"ballast.tightlinesoftware.com/mode":"measure"}},` +
				`"spec":{"containers":[{"name":"c","image":"none"}]}}`),
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("calling the webhook: %w", err)
	}
	defer resp.Body.Close()
	var got admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return fmt.Errorf("webhook answered %s with no AdmissionReview: %w", resp.Status, err)
	}
	if got.Response == nil || got.Response.UID != uid || !got.Response.Allowed {
		return fmt.Errorf("webhook answered %s with %+v, want an allowed response for uid %s", resp.Status, got.Response, uid)
	}
	fmt.Printf("webhook %s answered: allowed (uid %s)\n", url, uid)
	return nil
}
