package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/certs"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/sizing"
	"github.com/ballastk8s/ballast/test/harness"
)

func res(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	put := func(l corev1.ResourceList, name corev1.ResourceName, v string) {
		if v != "" {
			l[name] = resource.MustParse(v)
		}
	}
	put(r.Requests, corev1.ResourceCPU, cpuReq)
	put(r.Limits, corev1.ResourceCPU, cpuLim)
	put(r.Requests, corev1.ResourceMemory, memReq)
	put(r.Limits, corev1.ResourceMemory, memLim)
	return r
}

func webhookSuite(t *testing.T, e *env) {
	ctx := context.Background()

	t.Run("an invalid mode is denied", func(t *testing.T) {
		ns := e.namespace(t, "wh-bogus")
		err := e.c.Create(ctx, pod("p", ns, "bogus", "bogus", "x"))
		want := `invalid Ballast ballast.tightlinesoftware.com/mode label "bogus": must be one of measure, apply, resize`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want denial %q", err, want)
		}
	})

	t.Run("measure pods get the two bookkeeping annotations only", func(t *testing.T) {
		ns := e.namespace(t, "wh-measure")
		p := pod("p", ns, "measure", "measured", "x")
		mustCreate(t, e.c, p)
		if len(p.Annotations) != 2 || p.Annotations[ballastv1.ProfileRefAnnotation] == "" || p.Annotations[ballastv1.PolicyRefAnnotation] != "default" {
			t.Errorf("annotations = %v", p.Annotations)
		}
		if p.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" {
			t.Errorf("measure pod resized: %v", p.Spec.Containers[0].Resources)
		}
	})

	t.Run("apply pods of an accruing profile keep their resources", func(t *testing.T) {
		ns := e.namespace(t, "wh-accruing")
		p := pod("p", ns, "apply", "accruing", "x")
		mustCreate(t, e.c, p)
		if p.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" || p.Annotations[ballastv1.AppliedAnnotation("cpu", "request")] != "" {
			t.Errorf("accruing profile applied: %v %v", p.Spec.Containers[0].Resources, p.Annotations)
		}
	})

	// A requests-only profile made Sufficient with samples for app, sidecar and init.
	qosNS := e.namespace(t, "wh-qos")
	mustCreate(t, e.c, &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "requests-only", Namespace: qosNS},
		Spec: ballastv1.ResourcePolicySpec{Metrics: fastPolicy().Metrics[:2], Readiness: fastPolicy().Readiness}})
	seed := pod("seed", qosNS, "measure", "qos", "x")
	eventually(t, 30*time.Second, "seed pod bound to the ResourcePolicy", func() error {
		seed = pod("seed", qosNS, "measure", "qos", "x")
		_ = e.c.Delete(ctx, seed, client.GracePeriodSeconds(0))
		if err := e.c.Create(ctx, seed); err != nil {
			return err
		}
		if seed.Annotations[ballastv1.PolicyRefAnnotation] != qosNS+"/requests-only" {
			return fmt.Errorf("policy-ref %q", seed.Annotations[ballastv1.PolicyRefAnnotation])
		}
		return nil
	})
	profileName := seed.Annotations[ballastv1.ProfileRefAnnotation]
	wp := e.profile(t, profileName, "qos profile created", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no hash yet")
		}
		return nil
	})
	for _, c := range []string{"app", "sidecar", "init"} {
		e.writeSamples(t, wp.Status.MeasurementHash, c, series.ResourceCPU, repeat(240, 13), 20*time.Second)
		e.writeSamples(t, wp.Status.MeasurementHash, c, series.ResourceMemory, repeat(192<<20, 13), 20*time.Second)
	}
	e.clock.Step(time.Second)
	e.reconcile(t, profileName)
	e.profile(t, profileName, "qos profile Sufficient", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		return nil
	})

	type want struct {
		qos            corev1.PodQOSClass
		cpuReq, memReq string
		annotations    map[string]string
	}
	cases := map[string]struct {
		r    corev1.ResourceRequirements
		want want
	}{
		"BestEffort takes the recommendations and may change class": {
			r:    res("", "", "", ""),
			want: want{qos: corev1.PodQOSBurstable, cpuReq: "300m", memReq: "192Mi"},
		},
		"Burstable with a limit below the recommendation is clamped and stepped down": {
			r: res("100m", "200m", "100Mi", "128Mi"),
			want: want{qos: corev1.PodQOSBurstable, cpuReq: "199m", memReq: "134217727",
				annotations: map[string]string{ballastv1.ClampedAnnotation("cpu"): "300m", ballastv1.ClampedAnnotation("memory"): "192Mi"}},
		},
		"Burstable without limits takes the recommendation unclamped": {
			r:    res("100m", "", "1Gi", ""),
			want: want{qos: corev1.PodQOSBurstable, cpuReq: "300m", memReq: "192Mi"},
		},
		"Guaranteed stays Guaranteed: the clamp lands on the unchanged value": {
			r:    res("100m", "100m", "128Mi", "128Mi"),
			want: want{qos: corev1.PodQOSGuaranteed, cpuReq: "100m", memReq: "128Mi"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := pod("", qosNS, "apply", "qos", "x")
			p.GenerateName = "qos-"
			p.Spec.Containers[0].Resources = tc.r
			before := sizing.QoS(p)
			if err := e.c.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			got := p.Spec.Containers[0].Resources
			if q := sizing.QoS(p); q != tc.want.qos {
				t.Errorf("QoS %s → %s, want %s", before, q, tc.want.qos)
			}
			if got.Requests.Cpu().String() != tc.want.cpuReq || got.Requests.Memory().String() != tc.want.memReq {
				t.Errorf("requests = cpu %s memory %s, want %s %s", got.Requests.Cpu(), got.Requests.Memory(), tc.want.cpuReq, tc.want.memReq)
			}
			for res, lim := range got.Limits {
				if req, ok := got.Requests[res]; ok && req.Cmp(lim) > 0 {
					t.Errorf("%s request %s above limit %s", res, req.String(), lim.String())
				}
			}
			for k, v := range tc.want.annotations {
				if p.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, p.Annotations[k], v)
				}
			}
		})
	}

	t.Run("native sidecars are sized, init containers are not", func(t *testing.T) {
		p := pod("sidecars", qosNS, "apply", "qos", "x")
		p.Spec.InitContainers = []corev1.Container{
			{Name: "init", Image: "i", Resources: res("1", "", "1Gi", "")},
			{Name: "sidecar", Image: "i", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: res("1", "", "1Gi", "")},
		}
		if err := e.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if got := p.Spec.InitContainers[1].Resources.Requests.Cpu().String(); got != "300m" {
			t.Errorf("sidecar cpu request = %s, want 300m", got)
		}
		if got := p.Spec.InitContainers[0].Resources.Requests.Cpu().String(); got != "1" {
			t.Errorf("init container cpu request = %s, want untouched 1", got)
		}
	})

	t.Run("pods without the mode label never reach the webhook", func(t *testing.T) {
		sum := func() float64 { return e.counterTotal(t, "ballast_webhook_mutations_total") }
		s0 := sum()
		ns := e.namespace(t, "wh-plain")
		for i := 0; i < 3; i++ {
			mustCreate(t, e.c, pod(fmt.Sprintf("plain-%d", i), ns, "", "plain", "x"))
		}
		// A labelled pod afterwards proves the counter moves when the webhook is called.
		mustCreate(t, e.c, pod("labelled", ns, "measure", "plain", "x"))
		if d := sum() - s0; d != 1 {
			t.Errorf("webhook counted %v admissions for 3 unlabelled + 1 labelled pod, want 1", d)
		}
	})

	t.Run("kill switch admits pods unchanged within 5s and still denies invalid modes", func(t *testing.T) {
		ns := e.namespace(t, "wh-kill")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: operatorNS}}
		mustCreate(t, e.c, cm)
		eventually(t, 5*time.Second, "pods admitted unchanged", func() error {
			p := pod("", ns, "apply", "qos", "x")
			p.GenerateName = "k-"
			p.Namespace = qosNS
			if err := e.c.Create(ctx, p); err != nil {
				return err
			}
			if len(p.Annotations) != 0 || p.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" {
				return fmt.Errorf("still mutated: %v", p.Annotations)
			}
			return nil
		})
		if err := e.c.Create(ctx, pod("bad", ns, "Resize", "x", "y")); err == nil {
			t.Error("invalid mode admitted under the kill switch")
		}
		if err := e.c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, "sizing resumes", func() error {
			p := pod("", qosNS, "apply", "qos", "x")
			p.GenerateName = "r-"
			if err := e.c.Create(ctx, p); err != nil {
				return err
			}
			if p.Spec.Containers[0].Resources.Requests.Cpu().String() != "300m" {
				return fmt.Errorf("not sized: %v", p.Spec.Containers[0].Resources.Requests)
			}
			return nil
		})
	})

	t.Run("built-in certificates: the API server trusts the webhook after a forced rotation", func(t *testing.T) {
		before := e.servedSerial(t)
		cm := certs.New(e.c, certs.Options{Namespace: operatorNS, SecretName: e.opts.WebhookSecretName,
			Webhook: e.opts.WebhookConfigName, Hosts: []string{"127.0.0.1"}, CertDir: e.certDir})
		if err := cm.Rotate(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "webhook serves the new certificate", func() error {
			if s := e.servedSerial(t); s == before {
				return fmt.Errorf("still serving serial %s", s)
			}
			return nil
		})
		p := pod("after-rotation", qosNS, "measure", "qos", "x")
		mustCreate(t, e.c, p)
		if p.Annotations[ballastv1.ProfileRefAnnotation] == "" {
			t.Error("pod admitted after rotation was not stamped: the API server no longer reaches the webhook")
		}
	})

	t.Run("an unreachable webhook never blocks pod creation", func(t *testing.T) {
		port, _ := harness.FreePort()
		dead := webhookConfig(port)
		dead.Name = "ballast-unreachable"
		dead.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"test.ballast/route": "dead"}}
		mustCreate(t, e.c, dead)
		defer e.c.Delete(ctx, dead)
		ns := e.namespace(t, "wh-dead")
		p := pod("dead", ns, "", "dead", "x")
		p.Labels["test.ballast/route"] = "dead"
		if err := e.c.Create(ctx, p); err != nil {
			t.Fatalf("pod creation blocked by an unreachable webhook: %v", err)
		}
		// And with Ballast's own server stopped (last: it ends the control plane).
		e.stop()
		q := pod("after-stop", qosNS, "apply", "qos", "x")
		if err := e.c.Create(ctx, q); err != nil {
			t.Fatalf("pod creation blocked with ballast-control stopped: %v", err)
		}
		if len(q.Annotations) != 0 || q.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" {
			t.Errorf("pod half-applied with the webhook down: %v %v", q.Annotations, q.Spec.Containers[0].Resources)
		}
	})
}
