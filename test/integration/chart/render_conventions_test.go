package chart

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const certManagerAPI = "cert-manager.io/v1/Certificate"

// TestRenderCertManagerAuto: certManager.enabled auto follows whether the cluster serves
// cert-manager's API; explicit values win; NOTES say which was chosen.
func TestRenderCertManagerAuto(t *testing.T) {
	h := newHelm(t)
	cases := map[string]struct {
		args  []string
		want  bool
		notes string
	}{
		"auto, no cert-manager":   {nil, false, "built-in certificates (certManager.enabled auto: the cluster does not serve cert-manager.io/v1)"},
		"auto, cert-manager":      {[]string{"--api-versions", certManagerAPI}, true, "cert-manager issues it (certManager.enabled auto: the cluster serves cert-manager.io/v1)"},
		"true wins without API":   {[]string{"--set", "certManager.enabled=true"}, true, "cert-manager issues it\n"},
		"false wins with the API": {[]string{"--set", "certManager.enabled=false", "--api-versions", certManagerAPI}, false, "built-in certificates (certManager.enabled is false)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := h.mustTemplate(t, c.args...)
			if got := m.has("Certificate", "ballast-serving-cert"); got != c.want {
				t.Errorf("Certificate rendered %v, want %v", got, c.want)
			}
			checkWebhookConfiguration(t, m, c.want)
			d := &appsv1.Deployment{}
			m.decode(t, "Deployment", fullname, d)
			mode := "--webhook-cert-mode=builtin"
			if c.want {
				mode = "--webhook-cert-mode=files"
			}
			if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, mode) {
				t.Errorf("args %v lack %s", d.Spec.Template.Spec.Containers[0].Args, mode)
			}
			if slices.Contains(c.args, "--api-versions") {
				return // helm install has no --api-versions; the objects above cover these cases
			}
			out, err := h.run(ctx(t), append([]string{"install", release, chartDir(), "--dry-run=client", "-n", namespace, offline}, c.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(notes(out), c.notes) {
				t.Errorf("NOTES lack %q:\n%s", c.notes, notes(out))
			}
		})
	}
}

// TestRenderControlAvailability: a PodDisruptionBudget and a spread for the two replicas.
func TestRenderControlAvailability(t *testing.T) {
	h := newHelm(t)
	m := h.mustTemplate(t)
	pdb := &policyv1.PodDisruptionBudget{}
	m.decode(t, "PodDisruptionBudget", fullname, pdb)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "control" {
		t.Errorf("PDB spec %+v", pdb.Spec)
	}
	d := &appsv1.Deployment{}
	m.decode(t, "Deployment", fullname, d)
	ps := d.Spec.Template.Spec
	aa := ps.Affinity.PodAntiAffinity
	if aa == nil || len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		aa.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" ||
		aa.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels["app.kubernetes.io/component"] != "control" {
		t.Errorf("default anti-affinity %+v", ps.Affinity)
	}
	if len(ps.TopologySpreadConstraints) != 1 || ps.TopologySpreadConstraints[0].WhenUnsatisfiable != corev1.ScheduleAnyway ||
		ps.TopologySpreadConstraints[0].LabelSelector.MatchLabels["app.kubernetes.io/component"] != "control" {
		t.Errorf("topology spread %+v", ps.TopologySpreadConstraints)
	}

	m = h.mustTemplate(t, "--set", "replicaCount=1", "--set", "leaderElect=false")
	if m.has("PodDisruptionBudget", fullname) {
		t.Error("PDB rendered for a single replica (it would block every drain)")
	}
	m = h.mustTemplate(t, "--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
		"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
		"--set", "podDisruptionBudget.enabled=false")
	d = &appsv1.Deployment{}
	m.decode(t, "Deployment", fullname, d)
	if a := d.Spec.Template.Spec.Affinity; a.PodAntiAffinity != nil || a.NodeAffinity == nil {
		t.Errorf("an explicit affinity must replace the default: %+v", a)
	}
	if m.has("PodDisruptionBudget", fullname) {
		t.Error("PDB rendered with podDisruptionBudget.enabled=false")
	}
}

// TestRenderPodConventions: priorityClassName, updateStrategy, podAnnotations, podLabels,
// extraArgs, extraEnv and images for both workloads.
func TestRenderPodConventions(t *testing.T) {
	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	writeFile(t, values, `
priorityClassName: ballast-control-critical
podAnnotations: {team: platform}
podLabels: {tier: control}
extraArgs: [--log-level-webhook=debug]
extraEnv: [{name: GOMEMLIMIT, value: 100MiB}]
image:
  digest: sha256:`+strings.Repeat("a", 64)+`
  pullPolicy: Never
agent:
  image: {repository: registry.example/ballast-node, tag: "9.9.9"}
  priorityClassName: system-node-critical
  updateStrategy: {type: OnDelete}
  podAnnotations: {scrape: "no"}
  podLabels: {tier: agent}
  extraArgs: [--flush-interval=5s]
  extraEnv: [{name: GOMAXPROCS, value: "1"}]
`)
	m := newHelm(t).mustTemplate(t, "-f", values)
	d := &appsv1.Deployment{}
	m.decode(t, "Deployment", fullname, d)
	cp, cc := d.Spec.Template, d.Spec.Template.Spec.Containers[0]
	if cp.Spec.PriorityClassName != "ballast-control-critical" || cp.Annotations["team"] != "platform" || cp.Labels["tier"] != "control" ||
		!slices.Contains(cc.Args, "--log-level-webhook=debug") || !hasEnv(cc.Env, "GOMEMLIMIT") {
		t.Errorf("control pod: priority %q annotations %v labels %v args %v env %v", cp.Spec.PriorityClassName, cp.Annotations, cp.Labels, cc.Args, cc.Env)
	}
	if cc.Image != "ballastk8s/ballast-control@sha256:"+strings.Repeat("a", 64) || cc.ImagePullPolicy != corev1.PullNever {
		t.Errorf("control image %q %q: a digest wins over the tag", cc.Image, cc.ImagePullPolicy)
	}
	if d.Spec.Selector.MatchLabels["tier"] != "" {
		t.Error("podLabels must not enter the (immutable) selector")
	}
	ds := &appsv1.DaemonSet{}
	m.decode(t, "DaemonSet", "ballast-node", ds)
	ap, ac := ds.Spec.Template, ds.Spec.Template.Spec.Containers[0]
	if ap.Spec.PriorityClassName != "system-node-critical" || ap.Annotations["scrape"] != "no" || ap.Labels["tier"] != "agent" ||
		!slices.Contains(ac.Args, "--flush-interval=5s") || !hasEnv(ac.Env, "GOMAXPROCS") {
		t.Errorf("agent pod: priority %q annotations %v labels %v args %v env %v", ap.Spec.PriorityClassName, ap.Annotations, ap.Labels, ac.Args, ac.Env)
	}
	if ac.Image != "registry.example/ballast-node:9.9.9" || ac.ImagePullPolicy != corev1.PullNever {
		t.Errorf("agent image %q %q (pull policy follows image.pullPolicy)", ac.Image, ac.ImagePullPolicy)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("updateStrategy %+v", ds.Spec.UpdateStrategy)
	}
	if !slices.Contains(ac.Args, "--kubelet-interval=30s") {
		t.Errorf("agent args %v: the Summary cadence must follow the kubelet-summary source (30s)", ac.Args)
	}
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	return slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
}

// TestRenderServiceMonitors: labels on both monitors; secure: true makes only the control
// plane's endpoint https (the agent serves plain http).
func TestRenderServiceMonitors(t *testing.T) {
	m := newHelm(t).mustTemplate(t, "--set", "telemetry.prometheus.enabled=true", "--set", "telemetry.prometheus.secure=true",
		"--set", "telemetry.prometheus.serviceMonitor.enabled=true", "--set", "telemetry.prometheus.serviceMonitor.labels.release=prom")
	for name, scheme := range map[string]string{fullname: "https", "ballast-node": "http"} {
		sm := m.generic(t, "ServiceMonitor", name)
		labels := sm["metadata"].(map[string]any)["labels"].(map[string]any)
		ep := sm["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
		if labels["release"] != "prom" || ep["scheme"] != scheme {
			t.Errorf("ServiceMonitor %s: labels %v scheme %v, want release=prom and %s", name, labels, ep["scheme"], scheme)
		}
		sel := sm["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
		want := map[string]string{fullname: "control", "ballast-node": "agent"}[name]
		if sel["app.kubernetes.io/component"] != want {
			t.Errorf("ServiceMonitor %s selects component %v, want %s", name, sel["app.kubernetes.io/component"], want)
		}
	}
}

// TestRenderHelmTest: `helm test` runs check-webhook against the webhook Service with the
// CA of the webhook Secret.
func TestRenderHelmTest(t *testing.T) {
	m := newHelm(t).mustTemplate(t)
	p := &corev1.Pod{}
	m.decode(t, "Pod", "ballast-test-webhook", p)
	if p.Annotations["helm.sh/hook"] != "test" {
		t.Errorf("annotations %v", p.Annotations)
	}
	c := p.Spec.Containers[0]
	want := []string{"check-webhook", "https://ballast-webhook.ballast-system.svc:443/mutate-v1-pod", "/certs/ca.crt"}
	if !slices.Equal(c.Args, want) || c.Image != "ballastk8s/ballast-control:0.1.0" {
		t.Errorf("test pod image %q args %v, want %v", c.Image, c.Args, want)
	}
	if p.Spec.Volumes[0].Secret == nil || p.Spec.Volumes[0].Secret.SecretName != "ballast-webhook-cert" {
		t.Errorf("test pod volumes %+v", p.Spec.Volumes)
	}
	checkHardened(t, p.Spec.SecurityContext, c.SecurityContext)
}

// TestReadmeValuesTable: every value of values.yaml has a row in the chart README's table.
func TestReadmeValuesTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, k := range leafKeys("", values) {
		if !strings.Contains(string(readme), "| `"+k+"` |") {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("charts/ballast/README.md has no values-table row for: %s", strings.Join(missing, ", "))
	}
}

// leafKeys lists the dotted paths of the non-map values (lists and empty maps are leaves).
func leafKeys(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			out = append(out, leafKeys(p, sub)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}
