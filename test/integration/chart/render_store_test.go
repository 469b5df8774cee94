package chart

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// storeWiring is how one container reaches the store: its args and mounts.
func storeWiring(t *testing.T, m *manifests, kind, name string) (args []string, mounts map[string]string, vols map[string]*corev1.SecretVolumeSource) {
	t.Helper()
	var spec corev1.PodSpec
	switch kind {
	case "Deployment":
		d := &appsv1.Deployment{}
		m.decode(t, kind, name, d)
		spec = d.Spec.Template.Spec
	default:
		d := &appsv1.DaemonSet{}
		m.decode(t, kind, name, d)
		spec = d.Spec.Template.Spec
	}
	mounts, vols = map[string]string{}, map[string]*corev1.SecretVolumeSource{}
	for _, mt := range spec.Containers[0].VolumeMounts {
		mounts[mt.Name] = mt.MountPath
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			vols[v.Name] = v.Secret
		}
	}
	return spec.Containers[0].Args, mounts, vols
}

// TestRenderLockedStore: by default Valkey requires the generated password, which reaches
// valkey-server from the Secret and both binaries as a mounted file; a NetworkPolicy admits
// only Ballast's pods.
func TestRenderLockedStore(t *testing.T) {
	h := newHelm(t)
	t.Run("defaults", func(t *testing.T) {
		m := h.mustTemplate(t)
		sec := &corev1.Secret{}
		m.decode(t, "Secret", "ballast-valkey-auth", sec)
		pw := string(sec.Data["password"])
		if len(pw) != 40 {
			t.Fatalf("generated password has %d characters, want 40", len(pw))
		}
		if again := h.mustTemplate(t); again.has("Secret", "ballast-valkey-auth") {
			s2 := &corev1.Secret{}
			again.decode(t, "Secret", "ballast-valkey-auth", s2)
			if string(s2.Data["password"]) == pw {
				t.Error("two renders without a cluster produced the same password: it is not random")
			}
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "ballast-valkey", d)
		c := d.Spec.Template.Spec.Containers[0]
		if !slices.Equal(c.Command, []string{"valkey-server", "/etc/valkey/valkey.conf", "--requirepass", "$(VALKEY_PASSWORD)"}) {
			t.Errorf("valkey command %q", c.Command)
		}
		for _, name := range []string{"VALKEY_PASSWORD", "REDISCLI_AUTH"} {
			var ref *corev1.SecretKeySelector
			for _, e := range c.Env {
				if e.Name == name && e.ValueFrom != nil {
					ref = e.ValueFrom.SecretKeyRef
				}
			}
			if ref == nil || ref.Name != "ballast-valkey-auth" || ref.Key != "password" {
				t.Errorf("env %s: %+v, want the Secret's password", name, ref)
			}
		}
		cm := &corev1.ConfigMap{}
		m.decode(t, "ConfigMap", "ballast-valkey", cm)
		if strings.Contains(cm.Data["valkey.conf"], "requirepass") {
			t.Error("the password belongs in the Secret, not the ConfigMap")
		}
		for _, w := range [][2]string{{"Deployment", fullname}, {"DaemonSet", "ballast-node"}} {
			args, mounts, vols := storeWiring(t, m, w[0], w[1])
			if !slices.Contains(args, "--store-password-file=/etc/ballast/store-auth/password") {
				t.Errorf("%s args %q lack the password file", w[1], args)
			}
			if mounts["store-auth"] != "/etc/ballast/store-auth" || vols["store-auth"] == nil || vols["store-auth"].SecretName != "ballast-valkey-auth" {
				t.Errorf("%s mounts %v volumes %v", w[1], mounts, vols)
			}
		}
		if strings.Contains(m.raw, pw) {
			// The password may only appear base64-encoded in the Secret.
			t.Error("the generated password appears in clear text in the rendered manifests")
		}
		np := &networkingv1.NetworkPolicy{}
		m.decode(t, "NetworkPolicy", "ballast-valkey", np)
		if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != "valkey" || len(np.Spec.Ingress) != 1 {
			t.Fatalf("network policy %+v", np.Spec)
		}
		var components []string
		for _, from := range np.Spec.Ingress[0].From {
			if from.NamespaceSelector != nil || from.IPBlock != nil || from.PodSelector == nil {
				t.Errorf("peer %+v admits more than Ballast's pods of the release namespace", from)
				continue
			}
			components = append(components, from.PodSelector.MatchLabels["app.kubernetes.io/component"])
		}
		if !slices.Equal(components, []string{"control", "agent"}) {
			t.Errorf("admitted components %q", components)
		}
	})
	t.Run("existing secret", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "valkey.auth.existingSecret=my-store", "--set", "valkey.auth.existingSecretPasswordKey=pw")
		if m.has("Secret", "ballast-valkey-auth") {
			t.Error("a password was generated although valkey.auth.existingSecret names one")
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "ballast-valkey", d)
		if e := d.Spec.Template.Spec.Containers[0].Env[0]; e.ValueFrom.SecretKeyRef.Name != "my-store" || e.ValueFrom.SecretKeyRef.Key != "pw" {
			t.Errorf("valkey env %+v", e)
		}
		_, _, vols := storeWiring(t, m, "Deployment", fullname)
		if v := vols["store-auth"]; v == nil || v.SecretName != "my-store" || v.Items[0].Key != "pw" || v.Items[0].Path != "password" {
			t.Errorf("control volume %+v", v)
		}
	})
	t.Run("auth and network policy off", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "valkey.auth.enabled=false", "--set", "valkey.networkPolicy.enabled=false")
		if m.has("Secret", "ballast-valkey-auth") || m.has("NetworkPolicy", "ballast-valkey") {
			t.Error("Secret or NetworkPolicy rendered although turned off")
		}
		args, mounts, _ := storeWiring(t, m, "DaemonSet", "ballast-node")
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--store-password-file") }) || mounts["store-auth"] != "" {
			t.Errorf("agent still reads a password: %q %v", args, mounts)
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "ballast-valkey", d)
		if slices.Contains(d.Spec.Template.Spec.Containers[0].Command, "--requirepass") {
			t.Error("valkey still requires a password")
		}
	})
	t.Run("external store with credentials and a private CA", func(t *testing.T) {
		m := h.mustTemplate(t, "--set", "valkey.enabled=false", "--set", "store.endpoint=rediss://store.example:6380",
			"--set", "store.auth.existingSecret=managed-store", "--set", "store.auth.username=ballast",
			"--set", "store.tls.existingSecret=managed-store-ca", "--set", "store.tls.clientCertificate=true",
			"--set", "store.tls.serverName=store.internal")
		if m.has("NetworkPolicy", "ballast-valkey") || m.has("Secret", "ballast-valkey-auth") {
			t.Error("subchart objects rendered for an external store")
		}
		for _, w := range [][2]string{{"Deployment", fullname}, {"DaemonSet", "ballast-node"}} {
			args, mounts, vols := storeWiring(t, m, w[0], w[1])
			for _, want := range []string{"--store-password-file=/etc/ballast/store-auth/password", "--store-username=ballast",
				"--store-tls-ca-file=/etc/ballast/store-tls/ca.crt", "--store-tls-cert-file=/etc/ballast/store-tls/tls.crt",
				"--store-tls-key-file=/etc/ballast/store-tls/tls.key", "--store-tls-server-name=store.internal"} {
				if !slices.Contains(args, want) {
					t.Errorf("%s args lack %s: %q", w[1], want, args)
				}
			}
			if mounts["store-tls"] != "/etc/ballast/store-tls" || vols["store-tls"] == nil || vols["store-tls"].SecretName != "managed-store-ca" ||
				len(vols["store-tls"].Items) != 3 || vols["store-auth"].SecretName != "managed-store" {
				t.Errorf("%s mounts %v volumes %+v", w[1], mounts, vols)
			}
		}
	})
	t.Run("schema", func(t *testing.T) {
		if _, err := h.template(t, "--set", "valkey.auth.existingSecret=Not_A_Name"); err == nil {
			t.Error("an invalid Secret name rendered")
		}
		if _, err := h.template(t, "--set", "store.tls.clientCertificate=yes"); err == nil {
			t.Error("a non-boolean clientCertificate rendered")
		}
	})
}
