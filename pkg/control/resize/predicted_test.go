package resize

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/resolve"

	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

func TestPredicted(t *testing.T) {
	got, err := Predicted(resizeplan.Resources{MilliCPU: 8500, Bytes: 2304 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"cpu":"8500m","memory":"2304Mi"}`; got != want {
		t.Fatalf("Predicted = %s, want %s", got, want)
	}
}

// TestPredictFromTemplate: the template's managed requests take the recommendation as
// admission writes it (request clamped to the limit, one unit below it for a Burstable
// pod), unmanaged containers keep theirs, and the total counts like the scheduler.
func TestPredictFromTemplate(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: mcpu(1000), corev1.ResourceMemory: bytes(1 << 30)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: bytes(512 << 20)}}},
		{Name: "proxy", Resources: req(100, 64)},
	}}}
	recs := sizing.Recommendations{"app": {
		corev1.ResourceCPU:    {Request: 300, HasRequest: true},
		corev1.ResourceMemory: {Request: 768 << 20, HasRequest: true},
	}}
	p := sizing.Params{Managed: sizing.Managed{
		{Resource: corev1.ResourceCPU, Field: sizing.Request}:    true,
		{Resource: corev1.ResourceMemory, Field: sizing.Request}: true,
	}}
	got := PredictFromTemplate("ns", tmpl, recs, p)
	// app: 300m, memory clamped to the 512Mi limit; proxy unchanged.
	if want := (resizeplan.Resources{MilliCPU: 400, Bytes: 512<<20 + 64<<20}); got != want {
		t.Fatalf("prediction %+v, want %+v", got, want)
	}
}

// TestPredictedAnnotatorReconcile: the annotator writes the prediction on the Deployment
// behind the profile's admission-sized pods (two pods, one workload, one value), a second
// pass leaves it as it is, and in dry-run it writes nothing.
func TestPredictedAnnotatorReconcile(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ctrlRef := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptr.To(true)}}
	}
	pod := func(name, mode string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, OwnerReferences: ctrlRef("ReplicaSet", "web-7d9"),
			Labels: map[string]string{ballastv1.ModeLabel: mode}, Annotations: map[string]string{ballastv1.ProfileRefAnnotation: "web"}}}
	}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: req(1000, 1024)}}}}
	newClient := func() client.Client {
		return fake.NewClientBuilder().WithScheme(s).
			WithIndex(&corev1.Pod{}, enrollment.ProfileRefIndex, func(o client.Object) []string {
				return []string{o.GetAnnotations()[ballastv1.ProfileRefAnnotation]}
			}).
			WithObjects(
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: appsv1.DeploymentSpec{Template: tmpl}},
				&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-7d9", OwnerReferences: ctrlRef("Deployment", "web")}},
				pod("web-7d9-a", ballastv1.ModeResize), pod("web-7d9-b", ballastv1.ModeApply)).
			Build()
	}
	in := PredictedInput{Profile: &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		Recommendations: sizing.Recommendations{"app": {corev1.ResourceCPU: {Request: 250, HasRequest: true}}},
		Params:          sizing.Params{Managed: sizing.Managed{{Resource: corev1.ResourceCPU, Field: sizing.Request}: true}}}
	annotation := func(c client.Client) string {
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		return d.Annotations[PredictedRequestsAnnotation]
	}
	for name, tc := range map[string]struct {
		dryRun bool
		want   string
	}{
		"published":              {want: `{"cpu":"250m","memory":"1Gi"}`},
		"dry-run writes nothing": {dryRun: true, want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient()
			a := NewPredictedAnnotator(c, c, config.NewState(nil), resolve.New(c), tc.dryRun)
			if err := a.Reconcile(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			if got := annotation(c); got != tc.want {
				t.Fatalf("annotation %q, want %q", got, tc.want)
			}
			// A second pass with the same prediction writes nothing new.
			if err := a.Reconcile(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			if got := annotation(c); got != tc.want {
				t.Fatalf("after a second pass: annotation %q, want %q", got, tc.want)
			}
		})
	}
}
