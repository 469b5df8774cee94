package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// buildControl builds the real ballast-control binary.
func buildControl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ballast-control")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ballast-control")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ballast-control: %v\n%s", err, out)
	}
	return bin
}

// kubeconfigAs writes a copy of the admin kubeconfig that impersonates user.
func kubeconfigAs(t *testing.T, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(srv.Kube.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func serviceAccountUser(name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// hookRunner plays the kubelet and job controller for the CRD hook Job: for each new Job it
// runs the Job's command (the real apply-crds) as the Job's ServiceAccount, then records the
// outcome in the Job's status, which Helm waits for.
type hookRunner struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	n      int
	errs   []error
}

func startHookRunner(t *testing.T, control string) *hookRunner {
	t.Helper()
	cx, cancel := context.WithCancel(context.Background())
	r := &hookRunner{cancel: cancel, done: make(chan struct{})}
	kubeconfig := kubeconfigAs(t, serviceAccountUser("ballast-crd-upgrade"))
	c := srv.Kube.Client
	seen := map[string]bool{}
	go func() {
		defer close(r.done)
		for cx.Err() == nil {
			job := &batchv1.Job{}
			err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: "ballast-crd-upgrade"}, job)
			if err != nil || seen[string(job.UID)] {
				select {
				case <-cx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			seen[string(job.UID)] = true
			if err := r.run(cx, control, kubeconfig, job); err != nil {
				r.fail(err)
				continue
			}
			r.mu.Lock()
			r.n++
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func (r *hookRunner) run(cx context.Context, control, kubeconfig string, job *batchv1.Job) error {
	ps := job.Spec.Template.Spec
	if ps.ServiceAccountName != "ballast-crd-upgrade" || len(ps.Containers) != 1 {
		return fmt.Errorf("unexpected hook Job pod spec: %+v", ps)
	}
	args := append([]string{"--kubeconfig", kubeconfig}, ps.Containers[0].Args...)
	out, runErr := exec.CommandContext(cx, control, args...).CombinedOutput()
	now := metav1.Now()
	job.Status = batchv1.JobStatus{
		StartTime:      &now,
		CompletionTime: &now,
		Succeeded:      1,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now},
		},
	}
	if runErr != nil {
		// Fail the Job so Helm fails now rather than at its timeout.
		job.Status = batchv1.JobStatus{
			StartTime: &now,
			Failed:    1,
			Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, LastProbeTime: now, LastTransitionTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, LastProbeTime: now, LastTransitionTime: now},
			},
		}
	}
	if err := srv.Kube.Client.Status().Update(cx, job); err != nil {
		return fmt.Errorf("recording the hook Job's outcome: %w", err)
	}
	if runErr != nil {
		return fmt.Errorf("running the hook as its ServiceAccount: ballast-control %v: %w\n%s", args, runErr, out)
	}
	return nil
}

func (r *hookRunner) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *hookRunner) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

func (r *hookRunner) runs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *hookRunner) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	<-r.done
	for _, err := range r.errs {
		t.Error(err)
	}
}

// runControlPlane runs the real ballast-control with the installed Deployment's arguments,
// as the chart's ServiceAccount, and waits until it is ready, holds the leader lease, has
// synced every controller's cache, created its certificate Secret and written the caBundle.
// Any "forbidden" in its log is a missing RBAC rule.
func runControlPlane(t *testing.T, cx context.Context, control string) {
	t.Helper()
	c := srv.Kube.Client
	d := &appsv1.Deployment{}
	if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: fullname}, d); err != nil {
		t.Fatal(err)
	}
	healthPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	webhookPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// Loopback ports and a temp folder stand in for the pod's; everything else is the chart's.
	args := []string{"--kubeconfig", kubeconfigAs(t, serviceAccountUser(d.Spec.Template.Spec.ServiceAccountName))}
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort)
		case strings.HasPrefix(a, "--webhook-cert-path="):
			a = "--webhook-cert-path=" + t.TempDir()
		case strings.HasPrefix(a, "--store-password-file="):
			// The file the pod would mount: the chart's generated Secret, as the kubelet writes it.
			sec := &corev1.Secret{}
			if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: release + "-valkey-auth"}, sec); err != nil {
				t.Fatalf("the store password Secret the Deployment mounts: %v", err)
			}
			f := filepath.Join(t.TempDir(), "password")
			if err := os.WriteFile(f, sec.Data["password"], 0o400); err != nil {
				t.Fatal(err)
			}
			a = "--store-password-file=" + f
		}
		args = append(args, a)
	}
	args = append(args, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", webhookPort))

	run, cancel := context.WithCancel(cx)
	defer cancel()
	cmd := exec.CommandContext(run, control, args...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+namespace, "POD_NAME=ballast-test-0")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("ballast-control %q log:\n%s", args, logs.String())
		}
	}()

	ready := func() (string, bool) {
		if s := logs.String(); strings.Contains(s, "forbidden") {
			t.Fatalf("ballast-control was refused an API call: the chart's RBAC lacks a rule")
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		if err != nil {
			return "readyz: " + err.Error(), false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("readyz: %d", resp.StatusCode), false
		}
		lease := &coordinationv1.Lease{}
		if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: ballastv1.LeaderElectionID}, lease); err != nil {
			return "lease: " + err.Error(), false
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return "lease has no holder", false
		}
		s := logs.String()
		started, workers := strings.Count(s, `"Starting Controller"`), strings.Count(s, `"Starting workers"`)
		if started == 0 || workers != started {
			return fmt.Sprintf("%d controllers started, %d synced", started, workers), false
		}
		secret := &corev1.Secret{}
		if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: "ballast-webhook-cert"}, secret); err != nil {
			return "secret: " + err.Error(), false
		}
		if len(secret.Data["tls.crt"]) == 0 {
			return "secret has no tls.crt", false
		}
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(cx, client.ObjectKey{Name: fullname}, mwc); err != nil {
			return "webhook configuration: " + err.Error(), false
		}
		if len(mwc.Webhooks[0].ClientConfig.CABundle) == 0 {
			return "no caBundle yet", false
		}
		return "", true
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("ballast-control exited: %v", err)
		default:
		}
		why, ok := ready()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ballast-control not ready after 90s: %s", why)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The webhook server serves the certificate ballast-control issued for the Service names.
	if !strings.Contains(logs.String(), "created webhook certificates") {
		t.Error("ballast-control did not log creating its webhook certificates")
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
