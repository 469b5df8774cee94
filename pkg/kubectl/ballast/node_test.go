package ballast

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The debug service account comes from --service-account, else from the agent pod's
// environment as the chart renders it; it must live in the agent's namespace (the chart's
// debug Role grants minting there).
func TestDebugServiceAccount(t *testing.T) {
	pod := func(env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ballast-system", Name: "ballast-node-x7k2p"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ballast-node", Env: env}}}}
	}
	named := corev1.EnvVar{Name: debugServiceAccountEnv, Value: "ballast-system/rel-ballast-debug"}
	cases := map[string]struct {
		flag    string
		pod     *corev1.Pod
		want    string
		wantErr string
	}{
		"from the pod":         {pod: pod(corev1.EnvVar{Name: "NODE_NAME"}, named), want: "rel-ballast-debug"},
		"flag wins":            {flag: "other", pod: pod(named), want: "other"},
		"flag with namespace":  {flag: "ballast-system/other", pod: pod(), want: "other"},
		"older chart":          {pod: pod(), wantErr: "upgrade the chart, or give --service-account"},
		"another namespace":    {flag: "kube-system/default", pod: pod(), wantErr: "not in the agent's namespace"},
		"malformed":            {flag: "ballast-system/a/b", pod: pod(), wantErr: "want NAME or NAMESPACE/NAME"},
		"empty name after ns/": {flag: "ballast-system/", pod: pod(), wantErr: "want NAME"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := &nodeOptions{serviceAccount: c.flag}
			got, err := o.debugServiceAccount(c.pod)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("service account %q (err %v), want %q", got, err, c.want)
			}
		})
	}
}

// Without the pods/proxy port the plugin names the port-forward path with the exact
// debug token to mint.
func TestNoProxyPortNamesPortForward(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ballast-system", Name: "ballast-node-x7k2p"},
		Spec: corev1.PodSpec{NodeName: "worker-1", Containers: []corev1.Container{{Name: "ballast-node",
			Env: []corev1.EnvVar{{Name: debugServiceAccountEnv, Value: "ballast-system/ballast-debug"}}}}}}
	_, _, err := (&nodeOptions{}).proxyPort(p)
	want := "kubectl -n ballast-system create token ballast-debug --audience ballast-node-debug/worker-1 --duration 10m"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "port-forward ballast-node-x7k2p 8082") {
		t.Fatalf("error %v, want one naming %q", err, want)
	}
}
