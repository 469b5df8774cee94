package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestChartCRDsMatchGenerated: the chart ships exactly the generated CRDs. Helm installs
// crds/ on first install; the upgrade hook applies the copies embedded in the image, so the
// two must never differ. Fix a failure with:
//
//	cp pkg/apis/ballast/v1/crds/*.yaml charts/ballast/crds/
func TestChartCRDsMatchGenerated(t *testing.T) {
	generated, err := ballastv1.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(generated) == 0 {
		t.Fatal("no generated CRDs embedded")
	}
	want := map[string]string{}
	for _, m := range generated {
		want[m.Name] = string(m.Data)
	}
	dir := filepath.Join(chartDir(), "crds")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(b)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("charts/ballast/crds differs from pkg/apis/ballast/v1/crds (-generated +chart); run\n"+
			"  cp pkg/apis/ballast/v1/crds/*.yaml charts/ballast/crds/\n%s", diff)
	}
}
