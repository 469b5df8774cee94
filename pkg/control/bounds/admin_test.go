package bounds

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// TestAdminBounds: the node cap is the smaller of the admin's maximum and the largest
// allocatable among the trusted nodes; without bounds, the largest of every node.
func TestAdminBounds(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	liar := node("liar", "1000", "16Ti") // reports a huge node about itself
	trusted := node("trusted", "8", "32Gi")
	trusted.Labels = map[string]string{"pool": "trusted"}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(liar, trusted).Build()
	mem := resource.MustParse("16Gi")
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "trusted"}}
	cases := map[string]struct {
		admin *ballastv1.NodeBounds
		want  map[corev1.ResourceName]sizing.Range
	}{
		"no bounds: every node counts, the liar too": {
			want: map[corev1.ResourceName]sizing.Range{
				corev1.ResourceCPU:    {Max: 1000_000, HasMax: true, MaxFrom: "largest node allocatable 1k"},
				corev1.ResourceMemory: {Max: 16 << 40, HasMax: true, MaxFrom: "largest node allocatable 16Ti"},
			},
		},
		"max memory wins over every node's report": {
			admin: &ballastv1.NodeBounds{MaxNodeMemory: &mem},
			want: map[corev1.ResourceName]sizing.Range{
				corev1.ResourceCPU:    {Max: 1000_000, HasMax: true, MaxFrom: "largest node allocatable 1k"},
				corev1.ResourceMemory: {Max: 16 << 30, HasMax: true, MaxFrom: "BallastConfig spec.bounds 16Gi"},
			},
		},
		"trusted nodes only": {
			admin: &ballastv1.NodeBounds{TrustedNodeSelector: sel},
			want: map[corev1.ResourceName]sizing.Range{
				corev1.ResourceCPU:    {Max: 8000, HasMax: true, MaxFrom: "largest trusted node allocatable 8"},
				corev1.ResourceMemory: {Max: 32 << 30, HasMax: true, MaxFrom: "largest trusted node allocatable 32Gi"},
			},
		},
		"trusted nodes and a lower max": {
			admin: &ballastv1.NodeBounds{TrustedNodeSelector: sel, MaxNodeMemory: &mem},
			want: map[corev1.ResourceName]sizing.Range{
				corev1.ResourceCPU:    {Max: 8000, HasMax: true, MaxFrom: "largest trusted node allocatable 8"},
				corev1.ResourceMemory: {Max: 16 << 30, HasMax: true, MaxFrom: "BallastConfig spec.bounds 16Gi"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := New(c)
			src.Admin = func() *ballastv1.NodeBounds { return tc.admin }
			o, err := src.Read(context.Background(), "default")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, o.NodeMax); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// A selector change is seen at once even while the node cap is memoized (watched).
	src := New(c)
	admin := (*ballastv1.NodeBounds)(nil)
	src.Admin = func() *ballastv1.NodeBounds { return admin }
	if err := src.Watch(&fakeInformer{}); err != nil {
		t.Fatal(err)
	}
	if o, _ := src.Read(context.Background(), "default"); o.NodeMax[corev1.ResourceCPU].Max != 1000_000 {
		t.Fatalf("cpu cap %v, want the liar's", o.NodeMax[corev1.ResourceCPU])
	}
	admin = &ballastv1.NodeBounds{TrustedNodeSelector: sel}
	if o, _ := src.Read(context.Background(), "default"); o.NodeMax[corev1.ResourceCPU].Max != 8000 {
		t.Errorf("after the selector changed, cpu cap %v, want the trusted node's 8", o.NodeMax[corev1.ResourceCPU])
	}
	bad := &ballastv1.NodeBounds{TrustedNodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Bogus"}}}}
	admin = bad
	if _, err := src.Read(context.Background(), "default"); err == nil {
		t.Error("an invalid selector was not an error")
	}
}
