package resize

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

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
