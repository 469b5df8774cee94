package ballast

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExportPatches renders the patch of a CronJob and of a Pod with a native sidecar
// from the golden profiles (offline source): the pod spec path of the kind, sidecars
// under initContainers, every managed value (an unchanged one too).
func TestExportPatches(t *testing.T) {
	src, err := loadFileSource(filepath.Join(diffData, "profiles.yaml"), defaultIdentityLabels)
	if err != nil {
		t.Fatal(err)
	}
	always := corev1.ContainerRestartPolicyAlways
	labels := func(name, comp string) map[string]string {
		return map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/component": comp}
	}
	cases := map[string]struct {
		w    liveWorkload
		want string
	}{
		"cronjob": {
			w: liveWorkload{apiVersion: "batch/v1", kind: "CronJob", namespace: "shop", name: "nightly-report", ctrlKind: "Job",
				podPath: []string{"jobTemplate", "spec", "template", "spec"},
				template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("report", "batch")},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "report", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("700m")}}}}}}},
			want: `apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly-report
  namespace: shop
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: report
            resources:
              requests:
                cpu: 700m
                memory: 400Mi
              limits:
                memory: 480Mi
`,
		},
		"pod with a sidecar": {
			w: liveWorkload{apiVersion: "v1", kind: "Pod", namespace: "shop", name: "web-0",
				template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("web", "server")},
					Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "envoy", RestartPolicy: &always}, {Name: "init"}},
						Containers: []corev1.Container{{Name: "app"}, {Name: "unknown"}}}}},
			want: `apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: shop
spec:
  initContainers:
  - name: envoy
    resources:
      requests:
        cpu: 50m
        memory: 64Mi
      limits:
        memory: 96Mi
  containers:
  - name: app
    resources:
      requests:
        cpu: 300m
        memory: 192Mi
      limits:
        memory: 288Mi
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, note, err := exportOne(context.Background(), src, tc.w)
			if err != nil || e == nil {
				t.Fatalf("no patch: %v %s", err, note)
			}
			if d := cmp.Diff(tc.want, e.render()); d != "" {
				t.Error(d)
			}
		})
	}
	_, note, err := exportOne(context.Background(), src, liveWorkload{kind: "Deployment", namespace: "shop", name: "search", ctrlKind: "ReplicaSet",
		template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("search", "api")}}})
	if err != nil || note == "" {
		t.Fatalf("an Accruing profile: want a note, got %q, %v", note, err)
	}
}
