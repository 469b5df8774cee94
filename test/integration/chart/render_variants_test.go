package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestRenderBuiltinCertificates: without cert-manager, ballast-control keeps its own
// certificate in a Secret and the caBundle of its webhook configuration.
func TestRenderBuiltinCertificates(t *testing.T) {
	h := newHelm(t)
	m := h.mustTemplate(t, "--set", "certManager.enabled=false")
	if m.has("Issuer", "ballast-selfsigned") || m.has("Certificate", "ballast-serving-cert") {
		t.Error("cert-manager objects rendered with certManager.enabled=false")
	}
	checkWebhookConfiguration(t, m, false)
	checkControlDeployment(t, m, []string{
		"--health-probe-bind-address=:8081",
		"--metrics-bind-address=0",
		"--webhook-cert-path=/certs/webhook",
		"--webhook-cert-mode=builtin",
		"--webhook-secret-name=ballast-webhook-cert",
		"--webhook-config-name=ballast",
		"--webhook-dns-names=ballast-webhook.ballast-system.svc,ballast-webhook.ballast-system.svc.cluster.local",
		"--redis-url=redis://ballast-valkey:6379",
		"--store-password-file=/etc/ballast/store-auth/password", "--store-username=ballast-control",
		"--log-level=info",
		"--log-format=json",
		"--leader-elect",
	})
	d := &appsv1.Deployment{}
	m.decode(t, "Deployment", fullname, d)
	vols := d.Spec.Template.Spec.Volumes
	if len(vols) != 2 || vols[0].EmptyDir == nil || vols[1].Name != "store-auth" {
		t.Errorf("builtin mode needs a writable emptyDir at the cert path: %+v", vols)
	}
	if mt := d.Spec.Template.Spec.Containers[0].VolumeMounts; len(mt) != 2 || mt[0].MountPath != "/certs/webhook" || mt[0].ReadOnly {
		t.Errorf("volume mounts: %+v", mt)
	}
	checkControlRBAC(t, m, []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"},
		Resources: []string{"mutatingwebhookconfigurations"}, ResourceNames: []string{fullname}, Verbs: []string{"get", "patch"}}})
	role := &rbacv1.Role{}
	m.decode(t, "Role", "ballast-webhook-cert", role)
	// No create: the chart makes the Secret (empty), and RBAC cannot limit create to a name.
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"ballast-webhook-cert"}, Verbs: []string{"get", "update"}},
	}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("webhook-cert role (-want +got):\n%s", diff)
	}
	rb := &rbacv1.RoleBinding{}
	m.decode(t, "RoleBinding", "ballast-webhook-cert", rb)
	if rb.RoleRef.Name != "ballast-webhook-cert" || rb.Subjects[0].Name != fullname {
		t.Errorf("webhook-cert binding: %+v %+v", rb.RoleRef, rb.Subjects)
	}
	sec := &corev1.Secret{}
	m.decode(t, "Secret", "ballast-webhook-cert", sec)
	if sec.Namespace != namespace || len(sec.Data) != 0 || len(sec.StringData) != 0 {
		t.Errorf("the chart's webhook Secret must be empty (an upgrade must not overwrite the certificates): %+v", sec)
	}
	if on := h.mustTemplate(t, "--set", "certManager.enabled=true"); on.has("Secret", "ballast-webhook-cert") {
		t.Error("cert-manager mode renders the builtin mode's Secret (cert-manager owns it)")
	}
}

// TestRenderFailures: invalid combinations fail rendering with a message naming the fix.
func TestRenderFailures(t *testing.T) {
	h := newHelm(t)
	cases := map[string]struct {
		args []string
		want []string
	}{
		"two replicas without leader election": {
			args: []string{"--set", "replicaCount=2", "--set", "leaderElect=false"},
			want: []string{"replicaCount is 2 but leaderElect is false", "Set leaderElect: true, or replicaCount: 1"},
		},
		"empty identity labels": {
			args: []string{"--set-json", "ballastConfig.identityLabels=[]"},
			want: []string{"ballastConfig.identityLabels is empty"},
		},
		"no storage class decision": {
			args: []string{"--set", "valkey.dataStorage.useClusterDefaultClass=false"},
			want: []string{"valkey.dataStorage.className is empty and valkey.dataStorage.useClusterDefaultClass is false"},
		},
		"unknown dry-run mode": {
			args: []string{"--set", "dryRun=everything"},
			want: []string{"dryRun"},
		},
		"misspelt key": {
			args: []string{"--set", "leaderElection=true"},
			want: []string{"leaderElection"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := h.template(t, tc.args...)
			if err == nil {
				t.Fatal("rendering succeeded, want a failure")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestRenderVariants: valid non-default combinations render what they promise.
func TestRenderVariants(t *testing.T) {
	h := newHelm(t)
	t.Run("single replica without leader election", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "replicaCount=1", "--set", "leaderElect=false")
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", fullname, d)
		args := d.Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, "--leader-elect=false") || slices.Contains(args, "--leader-elect") {
			t.Errorf("args %q: want --leader-elect=false (the binary defaults to true)", args)
		}
		if m.has("Role", "ballast-leader-election") || m.has("RoleBinding", "ballast-leader-election") {
			t.Error("leader-election RBAC rendered without leader election")
		}
	})
	t.Run("explicit storage class", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "valkey.dataStorage.useClusterDefaultClass=false", "--set", "valkey.dataStorage.className=fast",
			"--set", "valkey.dataStorage.requestedSize=2Gi", "--set", "valkey.deploymentStrategy=RollingUpdate")
		pvc := &corev1.PersistentVolumeClaim{}
		m.decode(t, "PersistentVolumeClaim", "ballast-valkey", pvc)
		if ptr.Deref(pvc.Spec.StorageClassName, "") != "fast" {
			t.Errorf("storageClassName %v", pvc.Spec.StorageClassName)
		}
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "2Gi" {
			t.Errorf("size %s", got.String())
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "ballast-valkey", d)
		if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
			t.Errorf("strategy %q", d.Spec.Strategy.Type)
		}
	})
	t.Run("valkey without storage", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "valkey.dataStorage.enabled=false", "--set", "valkey.dataStorage.useClusterDefaultClass=false")
		if m.has("PersistentVolumeClaim", "ballast-valkey") {
			t.Error("PVC rendered with dataStorage.enabled=false")
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "ballast-valkey", d)
		if d.Spec.Template.Spec.Volumes[1].EmptyDir == nil {
			t.Errorf("data volume: %+v", d.Spec.Template.Spec.Volumes[1])
		}
	})
	t.Run("external store", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "valkey.enabled=false", "--set", "store.endpoint=rediss://store.example:6380")
		for _, k := range m.keys() {
			if strings.HasSuffix(k, "/ballast-valkey") {
				t.Errorf("%s rendered with valkey.enabled=false", k)
			}
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", fullname, d)
		if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--redis-url=rediss://store.example:6380") {
			t.Errorf("args %q", d.Spec.Template.Spec.Containers[0].Args)
		}
		ds := &appsv1.DaemonSet{}
		m.decode(t, "DaemonSet", "ballast-node", ds)
		if !slices.Contains(ds.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "REDIS_URL", Value: "rediss://store.example:6380"}) {
			t.Errorf("agent env %+v", ds.Spec.Template.Spec.Containers[0].Env)
		}
	})
	t.Run("logging and dry-run", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "logging.level=warn", "--set", "logging.webhook=debug", "--set", "logging.adjuster=error",
			"--set", "logging.format=text", "--set", "dryRun=resize")
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", fullname, d)
		args := d.Spec.Template.Spec.Containers[0].Args
		for _, want := range []string{"--log-level=warn", "--log-level-webhook=debug", "--log-level-adjuster=error", "--log-format=text", "--dry-run=resize"} {
			if !slices.Contains(args, want) {
				t.Errorf("args lack %q: %q", want, args)
			}
		}
		for _, a := range args {
			if strings.HasPrefix(a, "--log-level-watcher") || strings.HasPrefix(a, "--log-level-collector") {
				t.Errorf("empty override rendered: %q", a)
			}
		}
	})
	t.Run("telemetry", func(t *testing.T) {
		for _, secure := range []bool{false, true} {
			m := h.mustTemplate(t, "--api-versions", certManagerAPI, "--set", "telemetry.prometheus.enabled=true", "--set", "telemetry.prometheus.serviceMonitor.enabled=true",
				"--set", "telemetry.prometheus.secure="+map[bool]string{true: "true", false: "false"}[secure])
			d := &appsv1.Deployment{}
			m.decode(t, "Deployment", fullname, d)
			args := d.Spec.Template.Spec.Containers[0].Args
			wantSecure := map[bool]string{true: "--metrics-secure=true", false: "--metrics-secure=false"}[secure]
			if !slices.Contains(args, "--metrics-bind-address=:8080") || !slices.Contains(args, wantSecure) {
				t.Errorf("secure=%v args %q", secure, args)
			}
			for _, name := range []string{"ballast-metrics", "ballast-node-metrics"} {
				s := &corev1.Service{}
				m.decode(t, "Service", name, s)
				if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 8080 || s.Spec.Ports[0].Name != "metrics" {
					t.Errorf("%s ports %+v", name, s.Spec.Ports)
				}
			}
			sm := m.generic(t, "ServiceMonitor", fullname)
			ep := sm["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
			if secure {
				tls, _ := ep["tlsConfig"].(map[string]any)
				if ep["scheme"] != "https" || tls["insecureSkipVerify"] != true {
					t.Errorf("secure endpoint %v", ep)
				}
				checkControlRBAC(t, m, []rbacv1.PolicyRule{
					{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
					{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
				})
				if !m.has("ClusterRole", "ballast-metrics-reader") {
					t.Error("no metrics-reader ClusterRole for scrapers")
				}
			} else if ep["scheme"] != "http" || ep["interval"] != "30s" || ep["scrapeTimeout"] != "10s" {
				t.Errorf("endpoint %v", ep)
			}
		}
		m := h.mustTemplate(t, "--set", "telemetry.prometheus.enabled=true")
		if m.has("ServiceMonitor", fullname) {
			t.Error("ServiceMonitor rendered without serviceMonitor.enabled")
		}
	})
	t.Run("agent debug endpoint for pods/proxy", func(t *testing.T) {
		port := func(c corev1.Container) int32 {
			for _, p := range c.Ports {
				if p.Name == "debug-proxy" {
					return p.ContainerPort
				}
			}
			return 0
		}
		for enabled, want := range map[bool]int32{false: 0, true: 9443} {
			m := h.mustTemplate(t, "--set", fmt.Sprintf("agent.debug.proxy.enabled=%t", enabled), "--set", "agent.debug.proxy.port=9443")
			ds := &appsv1.DaemonSet{}
			m.decode(t, "DaemonSet", "ballast-node", ds)
			c := ds.Spec.Template.Spec.Containers[0]
			hasArg := slices.Contains(c.Args, "--debug-proxy-bind-address=:9443")
			if port(c) != want || hasArg != enabled {
				t.Errorf("enabled=%t: debug-proxy port %d (want %d), arg %t: %q", enabled, port(c), want, hasArg, c.Args)
			}
		}
	})
	t.Run("names", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "fullnameOverride=rs", "--set", "serviceAccount.name=ctl")
		for _, k := range []string{"Deployment/rs", "Service/rs-webhook", "MutatingWebhookConfiguration/rs", "ServiceAccount/ctl", "DaemonSet/rs-node"} {
			if _, ok := m.byKey[k]; !ok {
				t.Errorf("%s not rendered: %v", k, m.keys())
			}
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "rs", d)
		if d.Spec.Template.Spec.ServiceAccountName != "ctl" {
			t.Errorf("serviceAccountName %q", d.Spec.Template.Spec.ServiceAccountName)
		}
	})
}

// TestRenderLocalTesting: the local-testing overlay (SPEC §5.3).
func TestRenderLocalTesting(t *testing.T) {
	m := newHelm(t).mustTemplate(t, "-f", filepath.Join(chartDir(), "values-local-testing.yaml"))
	checkMetricsSource(t, m, "kubernetes-metrics", ballastv1.SourceTypeKubernetesMetrics, "15s")
	checkMetricsSource(t, m, "kubelet-summary", ballastv1.SourceTypeKubeletSummary, "15s")
	p := &ballastv1.ClusterResourcePolicy{}
	m.decode(t, "ClusterResourcePolicy", "default", p)
	want := ballastv1.ResourcePolicySpec{
		Metrics: []ballastv1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
			{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
			{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
		},
		// Maps deep-merge: cvMeanFloor and the other behaviors keep their defaults.
		Readiness: ballastv1.Readiness{MinDataPoints: 5, MinTimeSpan: "1m", MaxCV: "2.0",
			CVMeanFloor: map[string]string{"cpu": "25m", "memory": "25Mi", "ephemeral-storage": "2Mi"}},
		Behaviors: ballastv1.Behaviors{
			Thresholds: ballastv1.Thresholds{Default: "10%"},
			Resize:     ballastv1.ResizeBehavior{MaxChangePerCycle: "50%", Interval: "30s"},
		},
	}
	if diff := cmp.Diff(want, p.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

// TestRenderPolicyOptions: entries without source use metricsSource; an empty cvMeanFloor is
// (null in values) is not rendered; a disabled source or policy is not rendered.
func TestRenderPolicyOptions(t *testing.T) {
	h := newHelm(t)
	values := filepath.Join(t.TempDir(), "values.yaml")
	writeFile(t, values, `
defaultClusterResourcePolicy:
  name: fleet
  priority: 5
  metricsSource: fast
  selector:
    kinds: [Deployment]
  metrics:
    - {resource: cpu, field: request, aggregation: p90}
    - {resource: memory, field: limit, source: slow, aggregation: max, headroom: "1.5"}
  readiness:
    cvMeanFloor: null # Helm deep-merges maps: null removes the default floors
defaultMetricsSources:
  kubeletSummary:
    enabled: false
`)
	m := h.mustTemplate(t, "-f", values)
	p := &ballastv1.ClusterResourcePolicy{}
	m.decode(t, "ClusterResourcePolicy", "fleet", p)
	want := ballastv1.ResourcePolicySpec{
		Priority: 5,
		Selector: ballastv1.PolicySelector{Kinds: []string{"Deployment"}},
		Metrics: []ballastv1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "fast", Aggregation: "p90"},
			{Resource: "memory", Field: "limit", Source: "slow", Aggregation: "max", Headroom: "1.5"},
		},
		Readiness: ballastv1.Readiness{MinDataPoints: 250, MinTimeSpan: "24h", MaxCV: "1.5"},
		Behaviors: ballastv1.Behaviors{
			Thresholds: ballastv1.Thresholds{Default: "10%"},
			Resize:     ballastv1.ResizeBehavior{MaxChangePerCycle: "50%", Interval: "15m"},
		},
	}
	if diff := cmp.Diff(want, p.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if m.has("MetricsSource", "kubelet-summary") || !m.has("MetricsSource", "kubernetes-metrics") {
		t.Errorf("sources: %v", m.keys())
	}
	m = h.mustTemplate(t, "--set", "defaultClusterResourcePolicy.enabled=false", "--set", "crds.upgradeHook.enabled=false")
	for _, k := range m.keys() {
		if strings.HasPrefix(k, "ClusterResourcePolicy/") || strings.HasSuffix(k, "/ballast-crd-upgrade") {
			t.Errorf("%s rendered while disabled", k)
		}
	}
}

// TestRenderLegacyDryRun: the legacy map form is translated and NOTES warns about it.
func TestRenderLegacyDryRun(t *testing.T) {
	h := newHelm(t)
	cases := map[string]struct {
		values string
		want   string // "" = no --dry-run flag
	}{
		"all three":     {"dryRun: {measure: true, apply: true, resize: true}", "--dry-run=all"},
		"apply only":    {"dryRun: {measure: false, apply: true, resize: false}", "--dry-run=apply"},
		"resize only":   {"dryRun: {resize: true}", "--dry-run=resize"},
		"measure only":  {"dryRun: {measure: true}", ""},
		"modern string": {"dryRun: apply", "--dry-run=apply"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			values := filepath.Join(t.TempDir(), "values.yaml")
			writeFile(t, values, tc.values+"\n")
			m := h.mustTemplate(t, "-f", values)
			d := &appsv1.Deployment{}
			m.decode(t, "Deployment", fullname, d)
			var got []string
			for _, a := range d.Spec.Template.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--dry-run") {
					got = append(got, a)
				}
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("dry-run args (-want +got):\n%s", diff)
			}

			// NOTES are rendered by install, not template: a client-side dry run prints them.
			out, err := h.run(ctx(t), "install", release, chartDir(), "--namespace", namespace, "--dry-run=client", offline, "-f", values)
			if err != nil {
				t.Fatal(err)
			}
			legacy := strings.HasPrefix(tc.values, "dryRun: {")
			if warned := strings.Contains(out, "WARNING: dryRun is set in the legacy map form"); warned != legacy {
				t.Errorf("NOTES legacy warning shown = %v, want %v:\n%s", warned, legacy, notes(out))
			}
		})
	}
}

// notes returns the NOTES part of helm install output.
func notes(out string) string {
	if i := strings.Index(out, "NOTES:"); i >= 0 {
		return out[i:]
	}
	return "(no NOTES)"
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
