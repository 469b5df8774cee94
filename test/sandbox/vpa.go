package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/control/certs"
	"github.com/ballastk8s/ballast/test/harness"
)

// VPAOptions are the extra flags of each VPA component (beyond kubeconfig, ports, certs).
type VPAOptions struct {
	Recommender, Updater, AdmissionController []string
	// Deferred leaves the recommender and updater to StartVPALoops (the scale bench starts
	// them once every pod runs, so their first loop is a cold start over the whole cluster).
	Deferred bool
}

// VPAInfo is where the VPA components listen.
type VPAInfo struct {
	WebhookURL string            // the admission controller's https URL
	CAFile     string            // the CA its certificate is signed by
	Metrics    map[string]string // component name → host:port of its Prometheus metrics
	kubeconfig string
}

// VPA's update modes (autoscaling.k8s.io/v1).
const (
	VPAModeInPlaceOrRecreate = "InPlaceOrRecreate"
	VPAModeInitial           = "Initial"
)

var vpaGVK = schema.GroupVersionKind{Group: "autoscaling.k8s.io", Version: "v1", Kind: "VerticalPodAutoscaler"}

// startVPA installs VPA's CRDs (from the pinned module's source, hack/tools/vpa) and starts
// metrics-server, then VPA's admission controller (its webhook registered by URL with the
// real API server, serving a certificate signed by a CA made here), recommender and updater.
func (s *Sandbox) startVPA(ctx context.Context, kc string) error {
	bin := harness.BinDir()
	for _, b := range []string{"vpa-recommender", "vpa-updater", "vpa-admission-controller", "vpa-crds.yaml"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return fmt.Errorf("%s missing: run hack/tools/build.sh vpa (make bench-vpa does)", b)
		}
	}
	s.logf("installing VPA v1.8.1's CRDs")
	if _, err := s.Kube.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join(bin, "vpa-crds.yaml")); err != nil {
		return err
	}
	if _, err := s.Kube.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/verticalpodautoscalers.autoscaling.k8s.io", "crd/verticalpodautoscalercheckpoints.autoscaling.k8s.io"); err != nil {
		return err
	}

	dir := filepath.Join(s.Opts.Dir, "vpa-certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, _, err := certs.Plan(certs.Bundle{}, time.Now(), certs.DefaultLifetimes, []string{"127.0.0.1"})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"ca.crt": b.CABundle, "tls.crt": b.TLSCert, "tls.key": b.TLSKey} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	port, _ := harness.FreePort()
	s.VPAInfo = VPAInfo{WebhookURL: fmt.Sprintf("https://127.0.0.1:%d", port), CAFile: filepath.Join(dir, "ca.crt"),
		Metrics: map[string]string{}, kubeconfig: kc}
	s.logf("starting vpa-admission-controller (webhook https://127.0.0.1:%d, self-registered by URL)", port)
	args := append([]string{"--kubeconfig", kc, "--port", strconv.Itoa(port), "--address", s.metricsAddr("vpa-admission-controller"),
		"--register-by-url", "--webhook-address", "https://127.0.0.1", "--webhook-port", strconv.Itoa(port),
		"--client-ca-file", filepath.Join(dir, "ca.crt"), "--tls-cert-file", filepath.Join(dir, "tls.crt"),
		"--tls-private-key", filepath.Join(dir, "tls.key")}, s.Opts.VPA.AdmissionController...)
	if err := s.startNamed(bin, "vpa-admission-controller", args...); err != nil {
		return err
	}
	err = harness.Poll(ctx, 60*time.Second, "VPA webhook registered", func() error {
		return s.Client.Get(ctx, client.ObjectKey{Name: "vpa-webhook-config"}, &admissionregistrationv1.MutatingWebhookConfiguration{})
	})
	if err != nil {
		return err
	}
	if s.Opts.VPA.Deferred {
		return nil
	}
	return s.StartVPALoops()
}

// StartVPALoops starts vpa-recommender and vpa-updater.
func (s *Sandbox) StartVPALoops() error {
	s.logf("starting vpa-recommender and vpa-updater")
	bin, kc := harness.BinDir(), s.VPAInfo.kubeconfig
	if err := s.startNamed(bin, "vpa-recommender", append([]string{"--kubeconfig", kc, "--address", s.metricsAddr("vpa-recommender")}, s.Opts.VPA.Recommender...)...); err != nil {
		return err
	}
	return s.startNamed(bin, "vpa-updater", append([]string{"--kubeconfig", kc, "--address", s.metricsAddr("vpa-updater")}, s.Opts.VPA.Updater...)...)
}

func (s *Sandbox) metricsAddr(name string) string {
	p, _ := harness.FreePort()
	a := "127.0.0.1:" + strconv.Itoa(p)
	s.VPAInfo.Metrics[name] = a
	return a
}

func (s *Sandbox) startNamed(bin, name string, args ...string) error {
	p, err := harness.StartProc(filepath.Join(s.Opts.Dir, "logs"), name, filepath.Join(bin, name), args...)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	return nil
}

// CreateVPA creates a VerticalPodAutoscaler for the Deployment app in ns, controlling cpu and
// memory requests and limits (VPA's defaults) in the given update mode.
func (s *Sandbox) CreateVPA(ctx context.Context, ns, app, mode string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(vpaGVK)
	u.SetNamespace(ns)
	u.SetName(app)
	u.Object["spec"] = map[string]any{
		"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": app},
		"updatePolicy": map[string]any{"updateMode": mode},
	}
	return s.Client.Create(ctx, u)
}

// DeleteVPA deletes the VerticalPodAutoscaler of app in ns.
func (s *Sandbox) DeleteVPA(ctx context.Context, ns, app string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(vpaGVK)
	u.SetNamespace(ns)
	u.SetName(app)
	return client.IgnoreNotFound(s.Client.Delete(ctx, u))
}

// VPATarget returns the target recommendation of the first container of app's VPA in ns
// (nil when there is none yet).
func (s *Sandbox) VPATarget(ctx context.Context, ns, app string) (cpu, mem *resource.Quantity, err error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(vpaGVK)
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, u); err != nil {
		return nil, nil, err
	}
	recs, _, _ := unstructured.NestedSlice(u.Object, "status", "recommendation", "containerRecommendations")
	if len(recs) == 0 {
		return nil, nil, nil
	}
	target, _, _ := unstructured.NestedStringMap(recs[0].(map[string]any), "target")
	c, err1 := resource.ParseQuantity(target["cpu"])
	m, err2 := resource.ParseQuantity(target["memory"])
	if err1 != nil || err2 != nil {
		return nil, nil, fmt.Errorf("VPA %s/%s target %v", ns, app, target)
	}
	return &c, &m, nil
}
