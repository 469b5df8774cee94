package v1

import (
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestEveryCRDFieldIsDescribed: `kubectl explain` shows no "<no description>" for any
// field of any Ballast CRD.
func TestEveryCRDFieldIsDescribed(t *testing.T) {
	ms, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		var crd map[string]any
		if err := yaml.Unmarshal(m.Data, &crd); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
			schema := v.(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
			var missing []string
			undescribed(schema, "", &missing)
			slices.Sort(missing)
			for _, f := range missing {
				t.Errorf("%s: %s has no description", m.Name, f)
			}
		}
	}
}

// undescribed appends the property paths under s that have no description.
func undescribed(s map[string]any, path string, out *[]string) {
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		p := p.(map[string]any)
		child := path + "." + name
		if d, _ := p["description"].(string); d == "" && child != ".apiVersion" && child != ".kind" && child != ".metadata" {
			*out = append(*out, child)
		}
		undescribed(p, child, out)
		if items, ok := p["items"].(map[string]any); ok {
			undescribed(items, child+"[]", out)
		}
		if add, ok := p["additionalProperties"].(map[string]any); ok {
			undescribed(add, child+"{}", out)
		}
	}
}
