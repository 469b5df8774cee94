package chart

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestRenderControlNetworkPolicy: by default the webhook port admits every address outside
// networkPolicy.podCIDRs and the helm-test pod; apiServerSources replaces the addresses; the
// health port stays open; metricsSources narrows the metrics port; off renders nothing.
func TestRenderControlNetworkPolicy(t *testing.T) {
	h := newHelm(t)
	name := fullname + "-control"
	np := &networkingv1.NetworkPolicy{}
	h.mustTemplate(t, "--set-json", `networkPolicy.podCIDRs=["10.244.0.0/16","fd00:10::/56"]`).decode(t, "NetworkPolicy", name, np)
	if got := np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"]; got != "control" {
		t.Errorf("podSelector component %q", got)
	}
	if len(np.Spec.Ingress) != 2 {
		t.Fatalf("ingress rules %d, want webhook and health", len(np.Spec.Ingress))
	}
	web := np.Spec.Ingress[0]
	if len(web.Ports) != 1 || web.Ports[0].Port.IntValue() != 9443 || len(web.From) != 3 {
		t.Fatalf("webhook rule %+v", web)
	}
	if b := web.From[0].IPBlock; b == nil || b.CIDR != "0.0.0.0/0" || !slices.Equal(b.Except, []string{"10.244.0.0/16"}) {
		t.Errorf("IPv4 block %+v: want any address but the pod CIDR", b)
	}
	if b := web.From[1].IPBlock; b == nil || b.CIDR != "::/0" || !slices.Equal(b.Except, []string{"fd00:10::/56"}) {
		t.Errorf("IPv6 block %+v", b)
	}
	if p := web.From[2].PodSelector; p == nil || p.MatchLabels["app.kubernetes.io/component"] != "test" {
		t.Errorf("helm-test pod not admitted: %+v", web.From[2])
	}
	if hp := np.Spec.Ingress[1]; hp.Ports[0].Port.IntValue() != 8081 || len(hp.From) != 0 {
		t.Errorf("health rule %+v: want port 8081 from anywhere", hp)
	}

	np = &networkingv1.NetworkPolicy{}
	h.mustTemplate(t, "--set-json", `networkPolicy.apiServerSources=[{"ipBlock":{"cidr":"172.16.0.0/28"}}]`,
		"--set", "telemetry.prometheus.enabled=true",
		"--set-json", `networkPolicy.metricsSources=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`).
		decode(t, "NetworkPolicy", name, np)
	if from := np.Spec.Ingress[0].From; len(from) != 2 || from[0].IPBlock == nil || from[0].IPBlock.CIDR != "172.16.0.0/28" {
		t.Errorf("apiServerSources not used alone: %+v", from)
	}
	if len(np.Spec.Ingress) != 3 || len(np.Spec.Ingress[2].From) != 1 || np.Spec.Ingress[2].From[0].NamespaceSelector == nil {
		t.Errorf("metrics rule %+v", np.Spec.Ingress)
	}
	if h.mustTemplate(t, "--set", "networkPolicy.enabled=false").has("NetworkPolicy", name) {
		t.Error("rendered although disabled")
	}
	if _, err := h.template(t, "--set-json", `networkPolicy.podCIDRs=["not a cidr"]`); err == nil {
		t.Error("a malformed pod CIDR passed the schema")
	}
	// --webhook-client-ca and --understudy-max-hold.
	dep := &appsv1.Deployment{}
	h.mustTemplate(t, "--set", "webhook.clientCA.configMap=apiserver-client-ca", "--set", "understudy.maxHold=20m").decode(t, "Deployment", fullname, dep)
	args := dep.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--webhook-client-ca=/etc/ballast/webhook-client-ca/ca.crt", "--understudy-max-hold=20m"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	mounted := false
	for _, v := range dep.Spec.Template.Spec.Volumes {
		mounted = mounted || (v.ConfigMap != nil && v.ConfigMap.Name == "apiserver-client-ca")
	}
	if !mounted {
		t.Error("client CA ConfigMap not mounted")
	}
}
