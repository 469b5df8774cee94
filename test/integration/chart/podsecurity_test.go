package chart

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInstallRefusesStrictPodSecurity: on a reachable cluster, installing into a namespace
// that enforces Pod Security "baseline" or "restricted" fails with the fix (the agent's
// hostPath volume needs "privileged"); "privileged" and an unlabelled namespace pass the check.
func TestInstallRefusesStrictPodSecurity(t *testing.T) {
	h := newHelm(t)
	cx := ctx(t)
	for level, wantErr := range map[string]bool{"restricted": true, "baseline": true, "privileged": false, "": false} {
		ns := "psa-" + level
		if level == "" {
			ns = "psa-unlabelled"
		}
		labels := map[string]string{}
		if level != "" {
			labels["pod-security.kubernetes.io/enforce"] = level
		}
		if err := srv.Kube.Client.Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
		// No PVC, so the storage guards stay out of the way.
		out, err := h.run(cx, "install", release, chartDir(), "--dry-run=server", "--kubeconfig", srv.Kube.Kubeconfig,
			"--namespace", ns, "--set", "valkey.dataStorage.enabled=false", "--set", "valkey.dataStorage.useClusterDefaultClass=false")
		fix := "kubectl label namespace " + ns + " pod-security.kubernetes.io/enforce=privileged"
		switch {
		case wantErr && (err == nil || !strings.Contains(err.Error(), fix)):
			t.Errorf("namespace enforcing %q: err = %v, want the fix %q\n%s", level, err, fix, out)
		case !wantErr && err != nil && strings.Contains(err.Error(), "Pod Security"):
			// (Other errors are fine here: this package's API server may not have the CRDs
			// yet, which fails the dry run after rendering.)
			t.Errorf("namespace enforcing %q refused: %v", level, err)
		}
	}
}
