package identity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProfileAttributes(t *testing.T) {
	cases := map[string]struct {
		keys  []string
		tuple map[string]string
		want  []Attribute
	}{
		"chart default identity labels": {
			keys:  []string{nameKey, componentKey},
			tuple: map[string]string{nameKey: "nginx", componentKey: "nocomponent"},
			want:  []Attribute{{"name", "nginx"}, {"component", "nocomponent"}},
		},
		"dashes become underscores": {
			keys:  []string{"example.com/business-unit"},
			tuple: map[string]string{"example.com/business-unit": "payments"},
			want:  []Attribute{{"business_unit", "payments"}},
		},
		"colliding segments use the whole sanitized key": {
			keys:  []string{nameKey, "example.com/name", componentKey},
			tuple: map[string]string{nameKey: "a", "example.com/name": "b", componentKey: "c"},
			want: []Attribute{
				{"app_kubernetes_io_name", "a"},
				{"example_com_name", "b"},
				{"component", "c"},
			},
		},
		"a segment spelling the reserved profile attribute uses the whole key": {
			keys:  []string{"example.com/profile"},
			tuple: map[string]string{"example.com/profile": "gold"},
			want:  []Attribute{{"example_com_profile", "gold"}},
		},
		"keys that collide even in full stay distinct": {
			keys:  []string{"a.b/c", "a_b/c"},
			tuple: map[string]string{"a.b/c": "x", "a_b/c": "y"},
			want:  []Attribute{{"a_b_c", "x"}, {"a_b_c_2", "y"}},
		},
		"a key without a prefix is used whole": {
			keys:  []string{"Tier"},
			tuple: map[string]string{"Tier": "notier"},
			want:  []Attribute{{"tier", "notier"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ProfileAttributes(tc.keys, tc.tuple)); diff != "" {
				t.Errorf("ProfileAttributes (-want +got):\n%s", diff)
			}
		})
	}
}
