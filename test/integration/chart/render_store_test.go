package chart

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/ballastk8s/ballast/pkg/store"
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

// TestRenderLockedStore: by default Valkey's default user is off and each binary has its own
// ACL user (pkg/store's rules, verbatim) with a generated password in its own Secret, which
// reaches valkey-server from the Secret and the binary as a mounted file; a changed password
// changes the Valkey pod's checksum (a restart); a NetworkPolicy admits only Ballast's pods.
func TestRenderLockedStore(t *testing.T) {
	h := newHelm(t)
	t.Run("defaults", func(t *testing.T) {
		m := h.mustTemplate(t)
		passwords := map[string]string{}
		for _, name := range []string{"ballast-valkey-auth", "ballast-valkey-agent-auth"} {
			sec := &corev1.Secret{}
			m.decode(t, "Secret", name, sec)
			passwords[name] = string(sec.Data["password"])
			if len(passwords[name]) != 40 {
				t.Fatalf("generated password of %s has %d characters, want 40", name, len(passwords[name]))
			}
		}
		if passwords["ballast-valkey-auth"] == passwords["ballast-valkey-agent-auth"] {
			t.Error("the agent and the control plane share a password")
		}
		pw := passwords["ballast-valkey-auth"]
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "ballast-valkey", d)
		again := h.mustTemplate(t)
		s2 := &corev1.Secret{}
		again.decode(t, "Secret", "ballast-valkey-auth", s2)
		if string(s2.Data["password"]) == pw {
			t.Error("two renders without a cluster produced the same password: it is not random")
		}
		d2 := &appsv1.Deployment{}
		again.decode(t, "Deployment", "ballast-valkey", d2)
		for _, k := range []string{"checksum/auth-agent", "checksum/auth-control"} {
			sec := map[string]string{"checksum/auth-agent": "ballast-valkey-agent-auth", "checksum/auth-control": "ballast-valkey-auth"}[k]
			sum := sha256.Sum256([]byte(base64.StdEncoding.EncodeToString([]byte(passwords[sec]))))
			if got := d.Spec.Template.Annotations[k]; got != hex.EncodeToString(sum[:]) {
				t.Errorf("%s = %q, not the checksum of %s's password", k, got, sec)
			}
			if d2.Spec.Template.Annotations[k] == d.Spec.Template.Annotations[k] {
				t.Errorf("%s did not change with the password: Valkey would keep the old one", k)
			}
		}
		c := d.Spec.Template.Spec.Containers[0]
		want := []string{"valkey-server", "/etc/valkey/valkey.conf", "--user", "default", "off",
			"--user", store.AgentUser, "on", ">$(VALKEY_AGENT_PASSWORD)"}
		want = append(want, store.AgentACLRules()...)
		want = append(append(want, "--user", store.ControlUser, "on", ">$(VALKEY_CONTROL_PASSWORD)"), store.ControlACLRules()...)
		if !slices.Equal(c.Command, want) {
			t.Errorf("valkey command\n%q\nwant (pkg/store's rules)\n%q", c.Command, want)
		}
		for name, secret := range map[string]string{"VALKEY_AGENT_PASSWORD": "ballast-valkey-agent-auth",
			"VALKEY_CONTROL_PASSWORD": "ballast-valkey-auth", "REDISCLI_AUTH": "ballast-valkey-auth"} {
			var ref *corev1.SecretKeySelector
			for _, e := range c.Env {
				if e.Name == name && e.ValueFrom != nil {
					ref = e.ValueFrom.SecretKeyRef
				}
			}
			if ref == nil || ref.Name != secret || ref.Key != "password" {
				t.Errorf("env %s: %+v, want %s's password", name, ref, secret)
			}
		}
		if probe := c.ReadinessProbe.Exec.Command; !slices.Contains(probe, "--user") || !slices.Contains(probe, store.ControlUser) {
			t.Errorf("readiness probe %q does not authenticate as the control user", probe)
		}
		cm := &corev1.ConfigMap{}
		m.decode(t, "ConfigMap", "ballast-valkey", cm)
		if strings.Contains(cm.Data["valkey.conf"], "requirepass") {
			t.Error("the password belongs in the Secret, not the ConfigMap")
		}
		for _, w := range [][4]string{{"Deployment", fullname, store.ControlUser, "ballast-valkey-auth"},
			{"DaemonSet", "ballast-node", store.AgentUser, "ballast-valkey-agent-auth"}} {
			args, mounts, vols := storeWiring(t, m, w[0], w[1])
			if !slices.Contains(args, "--store-password-file=/etc/ballast/store-auth/password") || !slices.Contains(args, "--store-username="+w[2]) {
				t.Errorf("%s args %q lack the password file or the user %s", w[1], args, w[2])
			}
			if mounts["store-auth"] != "/etc/ballast/store-auth" || vols["store-auth"] == nil || vols["store-auth"].SecretName != w[3] {
				t.Errorf("%s mounts %v volumes %v, want the Secret %s", w[1], mounts, vols, w[3])
			}
		}
		for _, p := range passwords {
			if strings.Contains(m.raw, p) {
				// A password may only appear base64-encoded in its Secret.
				t.Error("a generated password appears in clear text in the rendered manifests")
			}
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
	t.Run("existing secrets", func(t *testing.T) {
		// Offline too: nothing is generated, so nothing changes between renders.
		out, err := h.run(ctx(t), "template", release, chartDir(), "--namespace", namespace,
			"--set", "valkey.auth.existingSecret=my-store", "--set", "valkey.auth.existingSecretPasswordKey=pw",
			"--set", "valkey.auth.agentExistingSecret=my-agents", "--set", "valkey.auth.agentExistingSecretPasswordKey=apw")
		if err != nil {
			t.Fatal(err)
		}
		m := parseManifests(t, out)
		if m.has("Secret", "ballast-valkey-auth") || m.has("Secret", "ballast-valkey-agent-auth") {
			t.Error("a password was generated although the existingSecrets name them")
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", "ballast-valkey", d)
		refs := map[string]string{}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				refs[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			}
		}
		if refs["VALKEY_AGENT_PASSWORD"] != "my-agents/apw" || refs["VALKEY_CONTROL_PASSWORD"] != "my-store/pw" {
			t.Errorf("valkey env %v", refs)
		}
		for _, w := range [][3]string{{"Deployment", fullname, "my-store"}, {"DaemonSet", "ballast-node", "my-agents"}} {
			_, _, vols := storeWiring(t, m, w[0], w[1])
			key := map[string]string{"my-store": "pw", "my-agents": "apw"}[w[2]]
			if v := vols["store-auth"]; v == nil || v.SecretName != w[2] || v.Items[0].Key != key || v.Items[0].Path != "password" {
				t.Errorf("%s volume %+v", w[1], v)
			}
		}
	})
	t.Run("offline render with generated passwords", func(t *testing.T) {
		// helm template without a cluster cannot keep a generated password: refused.
		for name, args := range map[string][]string{
			"none set":           nil,
			"only control's set": {"--set", "valkey.auth.existingSecret=my-store"},
			"only agents' set":   {"--set", "valkey.auth.agentExistingSecret=my-agents"},
		} {
			_, err := h.run(ctx(t), append([]string{"template", release, chartDir(), "--namespace", namespace}, args...)...)
			if err == nil || !strings.Contains(err.Error(), "valkey.auth.agentExistingSecret") ||
				!strings.Contains(err.Error(), "new password for the Secret") {
				t.Errorf("%s: err = %v, want the offline-password refusal", name, err)
			}
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
		if slices.Contains(d.Spec.Template.Spec.Containers[0].Command, "--user") {
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
