package identity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	nameKey      = "app.kubernetes.io/name"
	componentKey = "app.kubernetes.io/component"
	profileKey   = "ballast.tightlinesoftware.com/resource-profile"
)

func TestTuple(t *testing.T) {
	keys := []string{nameKey, componentKey, profileKey}
	cases := map[string]struct {
		labels       map[string]string
		wantTuple    map[string]string
		wantSelector map[string]string
	}{
		"every identity label present": {
			labels:       map[string]string{nameKey: "billing", componentKey: "api", profileKey: "prod", "other": "x"},
			wantTuple:    map[string]string{nameKey: "billing", componentKey: "api", profileKey: "prod"},
			wantSelector: map[string]string{nameKey: "billing", componentKey: "api", profileKey: "prod"},
		},
		"absent labels take placeholders and the missing sentinel": {
			labels:       map[string]string{nameKey: "nginx"},
			wantTuple:    map[string]string{nameKey: "nginx", componentKey: "nocomponent", profileKey: "noresourceprofile"},
			wantSelector: map[string]string{nameKey: "nginx", componentKey: "--missing--", profileKey: "--missing--"},
		},
		"an empty value counts as missing": {
			labels:       map[string]string{nameKey: "", componentKey: "api", profileKey: ""},
			wantTuple:    map[string]string{nameKey: "noname", componentKey: "api", profileKey: "noresourceprofile"},
			wantSelector: map[string]string{nameKey: "--missing--", componentKey: "api", profileKey: "--missing--"},
		},
		"a pod without labels still gets a full tuple": {
			labels:       nil,
			wantTuple:    map[string]string{nameKey: "noname", componentKey: "nocomponent", profileKey: "noresourceprofile"},
			wantSelector: map[string]string{nameKey: "--missing--", componentKey: "--missing--", profileKey: "--missing--"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotTuple, gotSelector := Tuple(keys, tc.labels)
			if diff := cmp.Diff(tc.wantTuple, gotTuple); diff != "" {
				t.Errorf("tupleLabels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSelector, gotSelector); diff != "" {
				t.Errorf("selectorLabels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlaceholder(t *testing.T) {
	cases := map[string]struct{ key, want string }{
		"component":                      {componentKey, "nocomponent"},
		"name":                           {nameKey, "noname"},
		"dash in the segment is dropped": {profileKey, "noresourceprofile"},
		"no slash: dots are dropped":     {"foo.bar.baz", "nofoobarbaz"},
		"uppercase is lowercased":        {"example.com/Tier", "notier"},
		"digits and underscores dropped": {"example.com/v2_name", "novname"},
		"a segment without letters":      {"example.com/123", "no"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Placeholder(tc.key); got != tc.want {
				t.Errorf("Placeholder(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

func TestSanitize(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"already clean":                  {"billing-api", "billing-api"},
		"uppercase is lowercased":        {"Web", "web"},
		"dots and underscores become -":  {"my_app.v2", "my-app-v2"},
		"leading and trailing - trimmed": {"-.x._", "x"},
		"a multi-byte rune is one -":     {"caf\u00e9s", "caf-s"},
		"nothing left":                   {"._.", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Sanitize(tc.in); got != tc.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
