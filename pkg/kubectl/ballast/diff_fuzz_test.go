package ballast

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDiffEdit sizes arbitrary YAML with the golden profiles: it must never panic, and
// whatever it writes must parse and differ from the input only under resources keys.
func FuzzDiffEdit(f *testing.F) {
	for _, p := range []string{"manifests/anchors.yaml", "manifests/batch.yaml", "manifests/web.yaml", "manifests/wide-indent.yaml", "helm/values.yaml"} {
		b, err := os.ReadFile(filepath.Join(diffData, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, p == "helm/values.yaml")
	}
	src, err := loadFileSource(filepath.Join(diffData, "profiles.yaml"), defaultIdentityLabels)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte, helm bool) {
		yf, err := parseYAMLFile("in", in)
		if err != nil {
			return
		}
		before, err := tryDecodeAll(in)
		if err != nil {
			return
		}
		sz := &sizer{src: src, namespace: "shop"}
		if helm {
			err = sz.sizeHelmValues(context.Background(), yf, "shop--chart--default-a9696153", map[string]helmTarget{"resources": {"shop--chart--default-a9696153", "app"}})
		} else {
			err = sz.sizeManifests(context.Background(), yf)
		}
		if err != nil {
			t.Fatal(err)
		}
		out := yf.apply()
		if string(out) == string(in) {
			return
		}
		after, err := tryDecodeAll(out)
		if err != nil {
			t.Fatalf("the edited file does not parse: %v\n--- in\n%s\n--- out\n%s", err, in, out)
		}
		// reflect.DeepEqual first: alias-heavy inputs decode to large trees.
		if b, a := withoutResources(before, nil), withoutResources(after, nil); !reflect.DeepEqual(b, a) {
			t.Fatalf("something outside resources changed:\n%s\n--- in\n%s\n--- out\n%s", cmp.Diff(b, a), in, out)
		}
	})
}
