package identity

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Hashes below were computed independently with sha256sum / Python hashlib.
const defaultDisc = "default-a9696153" // ClusterResourcePolicy//default

func TestDiscriminator(t *testing.T) {
	cases := map[string]struct {
		kind, namespace, name string
		want                  string
	}{
		"cluster policy default": {"ClusterResourcePolicy", "", "default", defaultDisc},
		"namespaced policy, sanitized and cut to 24": {
			"ResourcePolicy", "team-a", "High Priority.Web_Tier.Overrides", "high-priority-web-tier-o-2781faf7",
		},
		"a cut ending in - is trimmed": {
			"ClusterResourcePolicy", "", "abcdefghijklmnopqrstuvw-xyz", "abcdefghijklmnopqrstuvw-3b205b24",
		},
		"nothing readable falls back to policy": {"ClusterResourcePolicy", "", "...", "policy-3f44eba3"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Discriminator(tc.kind, tc.namespace, tc.name); got != tc.want {
				t.Errorf("Discriminator(%q, %q, %q) = %q, want %q", tc.kind, tc.namespace, tc.name, got, tc.want)
			}
		})
	}
}

func TestProfileName(t *testing.T) {
	longKeys := []string{"example.com/k0", "example.com/k1", "example.com/k2", "example.com/k3", "example.com/k4"}
	longValues := []string{strings.Repeat("a", 63), strings.Repeat("b", 63), strings.Repeat("c", 63),
		strings.Repeat("d", 30), strings.Repeat("e", 63)}
	cases := map[string]struct {
		keys          []string
		labels        map[string]string
		discriminator string
		want          string
	}{
		"three clean values need no hash": {
			keys:          []string{nameKey, componentKey, profileKey},
			labels:        map[string]string{nameKey: "billing", componentKey: "api", profileKey: "prod"},
			discriminator: defaultDisc,
			want:          "billing--api--prod--" + defaultDisc,
		},
		"a missing label is its placeholder, no hash": {
			keys:          []string{nameKey, componentKey},
			labels:        map[string]string{nameKey: "nginx"},
			discriminator: defaultDisc,
			want:          "nginx--nocomponent--" + defaultDisc,
		},
		"no policy": {
			keys:          []string{nameKey, componentKey},
			labels:        map[string]string{nameKey: "checkout", componentKey: "server"},
			discriminator: "nopolicy",
			want:          "checkout--server--nopolicy",
		},
		"uppercase value is hashed": {
			keys:          []string{nameKey, componentKey},
			labels:        map[string]string{nameKey: "Web", componentKey: "api"},
			discriminator: defaultDisc,
			want:          "web--api-73ca8f23--" + defaultDisc,
		},
		"lowercase twin of the uppercase value is not": {
			keys:          []string{nameKey, componentKey},
			labels:        map[string]string{nameKey: "web", componentKey: "api"},
			discriminator: defaultDisc,
			want:          "web--api--" + defaultDisc,
		},
		"a present value spelling the placeholder is hashed": {
			keys:          []string{nameKey, componentKey},
			labels:        map[string]string{nameKey: "nginx", componentKey: "nocomponent"},
			discriminator: defaultDisc,
			want:          "nginx--nocomponent-bbb0253f--" + defaultDisc,
		},
		"a value containing the separator is hashed": {
			keys:          []string{nameKey, componentKey},
			labels:        map[string]string{nameKey: "a--b", componentKey: "api"},
			discriminator: defaultDisc,
			want:          "a--b--api-daf3c457--" + defaultDisc,
		},
		"an over-long tuple is cut, trimmed of -, and hashed": {
			keys: longKeys,
			labels: map[string]string{longKeys[0]: longValues[0], longKeys[1]: longValues[1],
				longKeys[2]: longValues[2], longKeys[3]: longValues[3], longKeys[4]: longValues[4]},
			discriminator: defaultDisc,
			want:          strings.Join(longValues[:4], "--") + "-c70af5cc--" + defaultDisc,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tuple, selector := Tuple(tc.keys, tc.labels)
			got := ProfileName(tc.keys, tuple, selector, tc.discriminator)
			if got != tc.want {
				t.Errorf("ProfileName = %q, want %q", got, tc.want)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("%q is not a DNS-1123 subdomain: %v", got, errs)
			}
		})
	}
}

func TestProfileNameLengthBoundary(t *testing.T) {
	// 253 characters exactly stays readable; one more forces the hash and fits in 253.
	keys := []string{"example.com/a", "example.com/b", "example.com/c", "example.com/d"}
	suffix := "--" + defaultDisc
	for _, extra := range []int{0, 1} {
		values := []string{strings.Repeat("a", 63), strings.Repeat("b", 63), strings.Repeat("c", 63)}
		last := 253 - len(suffix) - (3*63 + 3*2) + extra
		values = append(values, strings.Repeat("d", last))
		labels := map[string]string{}
		for i, k := range keys {
			labels[k] = values[i]
		}
		tuple, selector := Tuple(keys, labels)
		got := ProfileName(keys, tuple, selector, defaultDisc)
		readable := strings.Join(values, "--") + suffix
		if extra == 0 && got != readable {
			t.Errorf("253-character name: got %q, want %q", got, readable)
		}
		if extra == 1 && (got == readable || len(got) > MaxNameLength) {
			t.Errorf("254-character tuple: got %q (len %d), want a hashed name ≤ 253", got, len(got))
		}
	}
}

func TestMeasurementHash(t *testing.T) {
	keys := []string{nameKey, componentKey}
	_, selector := Tuple(keys, map[string]string{nameKey: "nginx"})
	cases := map[string]struct{ policyKey, want string }{
		"cluster policy": {PolicyKey("ClusterResourcePolicy", "", "default"), "cf57119953b26609"},
		"no policy":      {"", "55b2eb2624e0e6f7"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MeasurementHash(keys, selector, tc.policyKey); got != tc.want {
				t.Errorf("MeasurementHash = %q, want %q", got, tc.want)
			}
		})
	}
	if got := PolicyKey("ClusterResourcePolicy", "", "default"); got != "ClusterResourcePolicy//default" {
		t.Errorf("PolicyKey = %q", got)
	}
}

// labelValueAlphabet leans on the characters that make naming interesting.
const labelValueAlphabet = "abcABC019-_.n"

// randomLabelValue returns "" (missing) or a valid label value, sometimes a placeholder.
func randomLabelValue(r *rand.Rand, key string) string {
	switch r.IntN(8) {
	case 0:
		return ""
	case 1:
		return Placeholder(key)
	}
	n := 1 + r.IntN(63)
	if r.IntN(4) == 0 {
		n = 1 + r.IntN(4)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = labelValueAlphabet[r.IntN(len(labelValueAlphabet))]
	}
	b[0], b[n-1] = 'a'+byte(r.IntN(3)), 'A'+byte(r.IntN(3))
	if r.IntN(2) == 0 {
		b[n-1] = '0' + byte(r.IntN(10))
	}
	return string(b)
}

func TestProfileNameProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	discriminators := []string{"nopolicy", defaultDisc, Discriminator("ResourcePolicy", "ns", strings.Repeat("x.", 40))}
	for round := range 200 {
		keys := make([]string, 1+r.IntN(5))
		for i := range keys {
			keys[i] = fmt.Sprintf("example.com/key-%d", i)
		}
		disc := discriminators[round%len(discriminators)]
		seen := map[string]string{} // name → canonical selector
		for range 200 {
			labels := map[string]string{}
			for _, k := range keys {
				labels[k] = randomLabelValue(r, k)
				if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
					t.Fatalf("generator produced invalid label value %q: %v", labels[k], errs)
				}
			}
			tuple, selector := Tuple(keys, labels)
			name := ProfileName(keys, tuple, selector, disc)
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				t.Fatalf("labels %v: %q is not a DNS-1123 subdomain: %v", labels, name, errs)
			}
			c := canonical(keys, selector)
			if prev, ok := seen[name]; ok && prev != c {
				t.Fatalf("selectors %q and %q share the name %q", prev, c, name)
			}
			seen[name] = c
		}
	}
}

func FuzzProfileName(f *testing.F) {
	f.Add("billing", "api", "default")
	f.Add("Web", "api", "default")
	f.Add("", "nocomponent", "...")
	f.Add("a--b", "", "x")
	f.Add(strings.Repeat("a", 63), strings.Repeat("B", 63), strings.Repeat("p", 253))
	keys := []string{nameKey, componentKey, "example.com/v1", "example.com/v2", "example.com/v3"}
	f.Fuzz(func(t *testing.T, v1, v2, policyName string) {
		for _, v := range []string{v1, v2} {
			if len(validation.IsValidLabelValue(v)) > 0 {
				t.Skip()
			}
		}
		// Repeat the values so over-long tuples are reached too.
		labels := map[string]string{keys[0]: v1, keys[1]: v2, keys[2]: v1, keys[3]: v2, keys[4]: v1}
		disc := Discriminator("ClusterResourcePolicy", "", policyName)
		tuple, selector := Tuple(keys, labels)
		name := ProfileName(keys, tuple, selector, disc)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("%q is not a DNS-1123 subdomain: %v", name, errs)
		}
		// A different selector tuple must get a different name.
		if upper := strings.ToUpper(v1); upper != v1 {
			labels[keys[0]] = upper
			tuple2, selector2 := Tuple(keys, labels)
			if other := ProfileName(keys, tuple2, selector2, disc); other == name {
				t.Fatalf("%q and %q both named %q", v1, upper, name)
			}
		}
	})
}
