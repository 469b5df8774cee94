package chart

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/crds"
)

func TestLint(t *testing.T) {
	h := newHelm(t)
	cases := map[string][]string{
		"defaults":      nil,
		"local-testing": {"-f", filepath.Join(chartDir(), "values-local-testing.yaml")},
		"builtin certificates, no valkey, telemetry": {"--set", "certManager.enabled=false", "--set", "valkey.enabled=false",
			"--set", "telemetry.prometheus.enabled=true", "--set", "telemetry.prometheus.serviceMonitor.enabled=true"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := h.run(ctx(t), append([]string{"lint", "--strict", chartDir(), offline}, args...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestRenderDefaults checks the objects a default install creates (SPEC §13.2, §7.1, §5.2).
// The cluster serves cert-manager's API, so certManager.enabled auto chooses cert-manager
// (TestRenderCertManagerAuto covers the other cases).
func TestRenderDefaults(t *testing.T) {
	m := newHelm(t).mustTemplate(t, "--api-versions", "cert-manager.io/v1/Certificate")

	want := []string{
		"BallastConfig/ballast",
		"Certificate/ballast-serving-cert",
		"ClusterResourcePolicy/default",
		"ClusterRole/ballast", "ClusterRole/ballast-crd-upgrade", "ClusterRole/ballast-node", "ClusterRole/ballast-understudy",
		"ClusterRoleBinding/ballast", "ClusterRoleBinding/ballast-crd-upgrade", "ClusterRoleBinding/ballast-node", "ClusterRoleBinding/ballast-understudy",
		"ConfigMap/ballast-valkey",
		"DaemonSet/ballast-node",
		"Deployment/ballast", "Deployment/ballast-valkey",
		"Issuer/ballast-selfsigned",
		"Job/ballast-crd-upgrade",
		"MetricsSource/kubelet-summary", "MetricsSource/kubernetes-metrics",
		"MutatingWebhookConfiguration/ballast",
		"NetworkPolicy/ballast-control", "NetworkPolicy/ballast-valkey",
		"PersistentVolumeClaim/ballast-valkey",
		"Pod/ballast-test-webhook",
		"PodDisruptionBudget/ballast",
		"Role/ballast-debug", "Role/ballast-killswitch", "Role/ballast-leader-election",
		"RoleBinding/ballast-killswitch", "RoleBinding/ballast-leader-election",
		"Secret/ballast-valkey-agent-auth",
		"Secret/ballast-valkey-auth",
		"Service/ballast-valkey", "Service/ballast-webhook",
		"ServiceAccount/ballast", "ServiceAccount/ballast-crd-upgrade", "ServiceAccount/ballast-debug", "ServiceAccount/ballast-node",
		"ValidatingAdmissionPolicy/ballast-control-pod-patches", "ValidatingAdmissionPolicyBinding/ballast-control-pod-patches",
		"ValidatingAdmissionPolicy/ballast-control-pod-resizes", "ValidatingAdmissionPolicyBinding/ballast-control-pod-resizes",
		"ValidatingAdmissionPolicy/ballast-control-node-patches", "ValidatingAdmissionPolicyBinding/ballast-control-node-patches",
		"ValidatingAdmissionPolicy/ballast-control-deployment-patches", "ValidatingAdmissionPolicyBinding/ballast-control-deployment-patches",
		"ValidatingWebhookConfiguration/ballast",
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, m.keys()); diff != "" {
		t.Errorf("rendered objects (-want +got):\n%s", diff)
	}
	clusterScoped := map[string]bool{"BallastConfig": true, "ClusterResourcePolicy": true, "ClusterRole": true,
		"ClusterRoleBinding": true, "MetricsSource": true, "MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
		"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	for _, k := range m.order {
		o := m.byKey[k]
		if clusterScoped[o.Kind] != (o.Namespace == "") || (o.Namespace != "" && o.Namespace != namespace) {
			t.Errorf("%s: namespace %q", k, o.Namespace)
		}
	}

	t.Run("webhook configuration", func(t *testing.T) { checkWebhookConfiguration(t, m, true) })
	t.Run("control-plane deployment", func(t *testing.T) {
		checkControlDeployment(t, m, []string{
			"--health-probe-bind-address=:8081",
			"--metrics-bind-address=0",
			"--webhook-cert-path=/certs/webhook",
			"--webhook-cert-mode=files",
			"--redis-url=redis://ballast-valkey:6379",
			"--store-password-file=/etc/ballast/store-auth/password", "--store-username=ballast-control",
			"--log-level=info",
			"--log-format=json",
			"--leader-elect",
		})
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", fullname, d)
		mode := int32(0o444)
		want := []corev1.Volume{{Name: "webhook-cert", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: "ballast-webhook-cert"}}},
			{Name: "store-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "ballast-valkey-auth",
				DefaultMode: &mode, Items: []corev1.KeyToPath{{Key: "password", Path: "password"}}}}}}
		if diff := cmp.Diff(want, d.Spec.Template.Spec.Volumes); diff != "" {
			t.Errorf("volumes (-want +got):\n%s", diff)
		}
		if mt := d.Spec.Template.Spec.Containers[0].VolumeMounts; len(mt) != 2 || mt[0].MountPath != "/certs/webhook" || !mt[0].ReadOnly ||
			mt[1].MountPath != "/etc/ballast/store-auth" || !mt[1].ReadOnly {
			t.Errorf("volume mounts: %+v", mt)
		}
	})
	t.Run("webhook service", func(t *testing.T) {
		s := &corev1.Service{}
		m.decode(t, "Service", "ballast-webhook", s)
		want := []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("webhook"), Protocol: corev1.ProtocolTCP}}
		if diff := cmp.Diff(want, s.Spec.Ports); diff != "" {
			t.Errorf("ports (-want +got):\n%s", diff)
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", fullname, d)
		if diff := cmp.Diff(d.Spec.Selector.MatchLabels, s.Spec.Selector); diff != "" {
			t.Errorf("service selector differs from the deployment's pods (-deployment +service):\n%s", diff)
		}
		if p := d.Spec.Template.Spec.Containers[0].Ports[0]; p.Name != "webhook" || p.ContainerPort != ballastv1.WebhookPort {
			t.Errorf("webhook container port: %+v", p)
		}
	})
	t.Run("cert-manager", func(t *testing.T) {
		iss := m.generic(t, "Issuer", "ballast-selfsigned")
		if diff := cmp.Diff(map[string]any{"selfSigned": map[string]any{}}, iss["spec"]); diff != "" {
			t.Errorf("issuer spec (-want +got):\n%s", diff)
		}
		cert := m.generic(t, "Certificate", "ballast-serving-cert")
		wantSpec := map[string]any{
			"dnsNames":   []any{"ballast-webhook.ballast-system.svc", "ballast-webhook.ballast-system.svc.cluster.local"},
			"issuerRef":  map[string]any{"kind": "Issuer", "name": "ballast-selfsigned"},
			"secretName": "ballast-webhook-cert",
		}
		if diff := cmp.Diff(wantSpec, cert["spec"]); diff != "" {
			t.Errorf("certificate spec (-want +got):\n%s", diff)
		}
	})
	t.Run("control-plane rbac", func(t *testing.T) { checkControlRBAC(t, m, nil) })
	t.Run("kill-switch and leader-election roles", func(t *testing.T) {
		ks := &rbacv1.Role{}
		m.decode(t, "Role", "ballast-killswitch", ks)
		wantKS := []rbacv1.PolicyRule{
			// Only the one ConfigMap, listed and watched by field selector metadata.name.
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{ballastv1.KillSwitchConfigMap}, Verbs: []string{"get", "list", "watch"}},
		}
		if diff := cmp.Diff(wantKS, ks.Rules); diff != "" {
			t.Errorf("kill-switch rules (-want +got):\n%s", diff)
		}
		le := &rbacv1.Role{}
		m.decode(t, "Role", "ballast-leader-election", le)
		if len(le.Rules) != 1 || le.Rules[0].Resources[0] != "leases" || le.Rules[0].APIGroups[0] != "coordination.k8s.io" {
			t.Errorf("leader-election rules: %+v", le.Rules)
		}
		for _, name := range []string{"ballast-killswitch", "ballast-leader-election"} {
			rb := &rbacv1.RoleBinding{}
			m.decode(t, "RoleBinding", name, rb)
			want := rbacv1.RoleBinding{
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: fullname, Namespace: namespace}},
			}
			if diff := cmp.Diff(want.RoleRef, rb.RoleRef); diff != "" {
				t.Errorf("%s roleRef (-want +got):\n%s", name, diff)
			}
			if diff := cmp.Diff(want.Subjects, rb.Subjects); diff != "" {
				t.Errorf("%s subjects (-want +got):\n%s", name, diff)
			}
		}
	})
	t.Run("ballastconfig", func(t *testing.T) {
		bc := &ballastv1.BallastConfig{}
		m.decode(t, "BallastConfig", "ballast", bc)
		want := ballastv1.BallastConfigSpec{
			IdentityLabels:  []string{"app.kubernetes.io/name", "app.kubernetes.io/component"},
			OrphanTTL:       "168h",
			RetentionWindow: "168h",
			PolicyFloors:    ballastv1.PolicyFloors{MinResizeInterval: "1m", MinTimeSpan: "1h", MinThreshold: "1%"},
		}
		if diff := cmp.Diff(want, bc.Spec); diff != "" {
			t.Errorf("spec (-want +got):\n%s", diff)
		}
		if strings.Contains(string(m.byKey["BallastConfig/ballast"].JSON), "suspended") {
			t.Error("BallastConfig renders suspended: a manual suspension would not survive an upgrade")
		}
	})
	t.Run("metrics sources", func(t *testing.T) {
		checkMetricsSource(t, m, "kubernetes-metrics", ballastv1.SourceTypeKubernetesMetrics, "10s")
		checkMetricsSource(t, m, "kubelet-summary", ballastv1.SourceTypeKubeletSummary, "30s")
	})
	t.Run("default policy", func(t *testing.T) {
		p := &ballastv1.ClusterResourcePolicy{}
		m.decode(t, "ClusterResourcePolicy", "default", p)
		want := ballastv1.ResourcePolicySpec{
			Priority: 0,
			Metrics: []ballastv1.MetricSpec{
				{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
				{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
				{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
				{Resource: "ephemeral-storage", Field: "request", Source: "kubelet-summary", Aggregation: "p90", Headroom: "1.0"},
				{Resource: "ephemeral-storage", Field: "limit", Source: "kubelet-summary", Aggregation: "p99", Headroom: "1.2"},
			},
			Readiness: ballastv1.Readiness{MinDataPoints: 250, MinTimeSpan: "24h", MaxCV: "1.5",
				CVMeanFloor: map[string]string{"cpu": "25m", "memory": "25Mi", "ephemeral-storage": "2Mi"}},
			Behaviors: ballastv1.Behaviors{
				Thresholds: ballastv1.Thresholds{Default: "10%"},
				Resize:     ballastv1.ResizeBehavior{MaxChangePerCycle: "50%", Interval: "15m"},
			},
		}
		if diff := cmp.Diff(want, p.Spec); diff != "" {
			t.Errorf("spec (-want +got):\n%s", diff)
		}
		if strings.Contains(string(m.byKey["ClusterResourcePolicy/default"].JSON), "selector") {
			t.Error("the default policy renders a selector; it must match every enrolled pod")
		}
	})
	t.Run("node agent", func(t *testing.T) { checkAgent(t, m) })
	t.Run("crd upgrade hook", func(t *testing.T) { checkCRDHook(t, m) })
	t.Run("valkey", func(t *testing.T) {
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "ballast-valkey", d)
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("strategy %q, want Recreate", d.Spec.Strategy.Type)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "valkey/valkey:8" {
			t.Errorf("image %q", c.Image)
		}
		wantRes := corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("96Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")},
		}
		if diff := cmp.Diff(wantRes, c.Resources); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
		vol := d.Spec.Template.Spec.Volumes[1]
		if vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != "ballast-valkey" {
			t.Errorf("data volume: %+v", vol)
		}
		svc := &corev1.Service{}
		m.decode(t, "Service", "ballast-valkey", svc)
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 6379 {
			t.Errorf("service ports: %+v", svc.Spec.Ports)
		}
		pvc := &corev1.PersistentVolumeClaim{}
		m.decode(t, "PersistentVolumeClaim", "ballast-valkey", pvc)
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1Gi")) != 0 {
			t.Errorf("PVC size %s, want 1Gi", got.String())
		}
		if pvc.Spec.StorageClassName != nil {
			t.Errorf("PVC storageClassName %q, want none (cluster default)", *pvc.Spec.StorageClassName)
		}
		cm := &corev1.ConfigMap{}
		m.decode(t, "ConfigMap", "ballast-valkey", cm)
		for _, line := range []string{"maxmemory 64mb", "maxmemory-policy noeviction", "dir /data"} {
			if !slices.Contains(strings.Split(cm.Data["valkey.conf"], "\n"), line) {
				t.Errorf("valkey.conf lacks %q:\n%s", line, cm.Data["valkey.conf"])
			}
		}
	})
}

func checkWebhookConfiguration(t *testing.T, m *manifests, certManager bool) {
	t.Helper()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	m.decode(t, "MutatingWebhookConfiguration", fullname, mwc)
	none := admissionregistrationv1.SideEffectClassNone
	want := []admissionregistrationv1.MutatingWebhook{{
		Name: ballastv1.WebhookName,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: namespace, Name: "ballast-webhook", Path: ptr.To(ballastv1.WebhookPath), Port: ptr.To[int32](443),
		}},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{namespace},
		}}},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: ballastv1.ModeLabel, Operator: metav1.LabelSelectorOpExists,
		}}},
		SideEffects:             &none,
		TimeoutSeconds:          ptr.To[int32](5),
		AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}}
	if diff := cmp.Diff(want, mwc.Webhooks); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}
	inject, has := mwc.Annotations["cert-manager.io/inject-ca-from"]
	switch {
	case certManager && inject != "ballast-system/ballast-serving-cert":
		t.Errorf("inject-ca-from annotation %q", inject)
	case !certManager && has:
		t.Errorf("builtin mode renders the cert-manager annotation %q", inject)
	}
}

// checkControlDeployment checks the control-plane Deployment of SPEC §13.2 with these args.
func checkControlDeployment(t *testing.T, m *manifests, wantArgs []string) {
	t.Helper()
	d := &appsv1.Deployment{}
	m.decode(t, "Deployment", fullname, d)
	if got := ptr.Deref(d.Spec.Replicas, 0); got != 2 {
		t.Errorf("replicas %d, want 2", got)
	}
	ps := d.Spec.Template.Spec
	if len(ps.Containers) != 1 || ps.Containers[0].Name != "ballast-control" {
		t.Fatalf("containers: %+v", ps.Containers)
	}
	c := ps.Containers[0]
	if c.Image != "ballastk8s/ballast-control:0.1.0" || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %q pull policy %q (tag must default to appVersion 0.1.0)", c.Image, c.ImagePullPolicy)
	}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	wantEnv := []corev1.EnvVar{
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		memoryLimitEnv,
	}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	probe := func(path string, delay, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("healthz")}},
			InitialDelaySeconds: delay, PeriodSeconds: period}
	}
	if diff := cmp.Diff(probe("/healthz", 15, 20), c.LivenessProbe); diff != "" {
		t.Errorf("liveness (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(probe("/readyz", 5, 10), c.ReadinessProbe); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "healthz" && p.ContainerPort == 8081 }) {
		t.Errorf("no healthz port 8081: %+v", c.Ports)
	}
	if got := ptr.Deref(ps.TerminationGracePeriodSeconds, 0); got != 10 {
		t.Errorf("terminationGracePeriodSeconds %d, want 10", got)
	}
	if ps.ServiceAccountName != fullname {
		t.Errorf("serviceAccountName %q", ps.ServiceAccountName)
	}
	checkHardened(t, ps.SecurityContext, c.SecurityContext)
	wantRes := corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("256Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("64Mi")},
	}
	if diff := cmp.Diff(wantRes, c.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
}

// checkHardened: runAsNonRoot, seccomp RuntimeDefault, read-only root filesystem, no
// privilege escalation, all capabilities dropped.
func checkHardened(t *testing.T, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	t.Helper()
	if pod == nil || !ptr.Deref(pod.RunAsNonRoot, false) || pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context: %+v", pod)
	}
	want := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("container security context (-want +got):\n%s", diff)
	}
}

// checkControlRBAC checks ClusterRole <fullname> (SPEC §13.2) plus extra rules.
func checkControlRBAC(t *testing.T, m *manifests, extra []rbacv1.PolicyRule) {
	t.Helper()
	cr := &rbacv1.ClusterRole{}
	m.decode(t, "ClusterRole", fullname, cr)
	g := ballastv1.GroupVersion.Group
	want := append([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"limitranges", "resourcequotas"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch"}},
		// behaviors.hpa: the HPAs of a sized pod's owner, read from the cache.
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{g}, Resources: []string{"ballastconfigs", "metricssources", "clusterresourcepolicies", "resourcepolicies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{g}, Resources: []string{"workloadprofiles"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
		{APIGroups: []string{g}, Resources: []string{"workloadprofiles/status", "clusterresourcepolicies/status", "resourcepolicies/status"}, Verbs: []string{"patch"}},
		// fallback.enabled (default): PodMetrics for pods on nodes without a live agent.
		{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	}, extra...)
	if diff := cmp.Diff(want, cr.Rules); diff != "" {
		t.Errorf("ClusterRole %s rules (-want +got):\n%s", fullname, diff)
	}
	crb := &rbacv1.ClusterRoleBinding{}
	m.decode(t, "ClusterRoleBinding", fullname, crb)
	if crb.RoleRef.Name != fullname || len(crb.Subjects) != 1 || crb.Subjects[0].Name != fullname || crb.Subjects[0].Namespace != namespace {
		t.Errorf("ClusterRoleBinding: %+v %+v", crb.RoleRef, crb.Subjects)
	}
}

func checkMetricsSource(t *testing.T, m *manifests, name, typ, poll string) {
	t.Helper()
	s := &ballastv1.MetricsSource{}
	m.decode(t, "MetricsSource", name, s)
	want := ballastv1.MetricsSourceSpec{Type: typ, Config: ballastv1.MetricsSourceConfig{PollInterval: poll, ReservoirSize: 10000}}
	if diff := cmp.Diff(want, s.Spec); diff != "" {
		t.Errorf("MetricsSource %s spec (-want +got):\n%s", name, diff)
	}
}

func checkAgent(t *testing.T, m *manifests) {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	m.decode(t, "DaemonSet", "ballast-node", ds)
	ps := ds.Spec.Template.Spec
	c := ps.Containers[0]
	if c.Name != "ballast-node" || ps.ServiceAccountName != "ballast-node" {
		t.Errorf("container %q service account %q", c.Name, ps.ServiceAccountName)
	}
	if c.Image != "ballastk8s/ballast-node:0.1.0" || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("agent image %q pull policy %q, want the ballast-node image `make images` builds", c.Image, c.ImagePullPolicy)
	}
	for _, arg := range []string{"--cgroup-root=/host/sys/fs/cgroup", "--kubelet-url=https://$(NODE_IP):10250"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args lack %q: %q", arg, c.Args)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	field := func(name string) string {
		if e, ok := env[name]; ok && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
		return ""
	}
	if field("NODE_NAME") != "spec.nodeName" || field("NODE_IP") != "status.hostIP" {
		t.Errorf("NODE_NAME/NODE_IP must come from the downward API: %+v", c.Env)
	}
	if env["REDIS_URL"].Value != "redis://ballast-valkey:6379" {
		t.Errorf("REDIS_URL %q", env["REDIS_URL"].Value)
	}
	if diff := cmp.Diff(memoryLimitEnv, env[memoryLimitEnv.Name]); diff != "" {
		t.Errorf("agent's memory limit env (-want +got):\n%s", diff)
	}
	var cg *corev1.Volume
	for i := range ps.Volumes {
		if ps.Volumes[i].HostPath != nil {
			cg = &ps.Volumes[i]
		}
	}
	if cg == nil || cg.HostPath.Path != "/sys/fs/cgroup" {
		t.Fatalf("no hostPath /sys/fs/cgroup volume: %+v", ps.Volumes)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool {
		return v.Name == cg.Name && v.MountPath == "/host/sys/fs/cgroup" && v.ReadOnly
	}) {
		t.Errorf("cgroup mount must be read-only at /host/sys/fs/cgroup: %+v", c.VolumeMounts)
	}
	if !slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool {
		return v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool { return s.ServiceAccountToken != nil })
	}) {
		t.Errorf("no projected service-account token: %+v", ps.Volumes)
	}
	if diff := cmp.Diff([]corev1.Toleration{{Operator: corev1.TolerationOpExists}}, ps.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	checkHardened(t, ps.SecurityContext, c.SecurityContext)

	cr := &rbacv1.ClusterRole{}
	m.decode(t, "ClusterRole", "ballast-node", cr)
	g := ballastv1.GroupVersion.Group
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{g}, Resources: []string{"ballastconfigs", "metricssources", "clusterresourcepolicies", "resourcepolicies", "workloadprofiles"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/stats"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/configz"}, Verbs: []string{"get"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	}
	if diff := cmp.Diff(want, cr.Rules); diff != "" {
		t.Errorf("agent rules (-want +got):\n%s", diff)
	}
}

func checkCRDHook(t *testing.T, m *manifests) {
	t.Helper()
	name := "ballast-crd-upgrade"
	hooks := map[string]string{"ServiceAccount": "-2", "ClusterRole": "-2", "ClusterRoleBinding": "-1", "Job": "0"}
	for kind, weight := range hooks {
		var o struct {
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(m.byKey[kind+"/"+name].JSON, &o); err != nil {
			t.Fatalf("%s/%s: %v", kind, name, err)
		}
		want := map[string]string{
			"helm.sh/hook":               "pre-install,pre-upgrade",
			"helm.sh/hook-weight":        weight,
			"helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
		}
		if diff := cmp.Diff(want, o.Annotations); diff != "" {
			t.Errorf("%s/%s hook annotations (-want +got):\n%s", kind, name, diff)
		}
	}
	cr := &rbacv1.ClusterRole{}
	m.decode(t, "ClusterRole", name, cr)
	// Patch only Ballast's own CRDs (every one the chart ships); create cannot be limited by name.
	ms, err := ballastv1.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := crds.Decode(ms)
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	for _, o := range objs {
		own = append(own, o.GetName())
	}
	slices.Sort(own)
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"create"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: own,
			Verbs: []string{"get", "patch", "update"}}}
	if diff := cmp.Diff(wantRules, cr.Rules); diff != "" {
		t.Errorf("hook rules (-want +got):\n%s", diff)
	}
	job := &batchv1.Job{}
	m.decode(t, "Job", name, job)
	if got := ptr.Deref(job.Spec.BackoffLimit, 0); got != 2 {
		t.Errorf("backoffLimit %d, want 2", got)
	}
	ps := job.Spec.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever || ps.ServiceAccountName != name {
		t.Errorf("restartPolicy %q serviceAccountName %q", ps.RestartPolicy, ps.ServiceAccountName)
	}
	c := ps.Containers[0]
	if c.Image != "ballastk8s/ballast-control:0.1.0" {
		t.Errorf("image %q, want the control-plane image", c.Image)
	}
	if diff := cmp.Diff([]string{"apply-crds"}, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	wantRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	if diff := cmp.Diff(wantRes, c.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	checkHardened(t, ps.SecurityContext, c.SecurityContext)
}

// memoryLimitEnv hands both binaries their container's memory limit (cli.SetMemoryLimit).
var memoryLimitEnv = corev1.EnvVar{Name: "BALLAST_CONTAINER_MEMORY_LIMIT",
	ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}}
