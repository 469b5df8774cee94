package sizing

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestParseRecommendations(t *testing.T) {
	containers := []v1.ContainerProfile{
		{Name: "app", Recommendations: map[string]v1.Recommendation{
			"cpu":               {Request: "288m"},
			"memory":            {Request: "192Mi", Limit: "288Mi"},
			"ephemeral-storage": {Request: "lots", Limit: "2160Mi"},
		}},
		{Name: "proxy", Recommendations: map[string]v1.Recommendation{
			"cpu":            {Request: "-5m", Limit: "0"},
			"nvidia.com/gpu": {Request: "1"},
		}},
		{Name: "idle", Recommendations: map[string]v1.Recommendation{"cpu": {}}},
		{Name: "huge", Recommendations: map[string]v1.Recommendation{"memory": {Request: "9Ei"}, "cpu": {Request: "0"}}},
	}
	recs, problems := ParseRecommendations(containers)
	want := Recommendations{
		"app": {
			"cpu":               rec("288m", ""),
			"memory":            rec("192Mi", "288Mi"),
			"ephemeral-storage": rec("", "2160Mi"),
		},
		"huge": {"cpu": rec("0", "")},
	}
	if diff := cmp.Diff(want, recs, cmpOpts...); diff != "" {
		t.Errorf("recommendations (-want +got):\n%s", diff)
	}
	wantErrs := map[string]error{
		"app ephemeral-storage request": resource.ErrFormatWrong,
		"proxy cpu request":             ErrNegative,
		"proxy cpu limit":               ErrZeroLimit,
		"proxy nvidia.com/gpu ":         ErrUnknownResource,
		"huge memory request":           ErrOutOfRange,
	}
	if len(problems) != len(wantErrs) {
		t.Errorf("%d problems, want %d: %v", len(problems), len(wantErrs), problems)
	}
	for _, p := range problems {
		key := p.Container + " " + p.Resource + " " + string(p.Field)
		if want, ok := wantErrs[key]; !ok || !errors.Is(p.Err, want) {
			t.Errorf("problem %q: %v (%s), want %v", key, p.Err, p, want)
		}
	}
}

func TestParsePercent(t *testing.T) {
	cases := map[string]struct {
		in   string
		want float64
		ok   bool
	}{
		"with percent sign":     {"15%", 15, true},
		"without percent sign":  {"15", 15, true},
		"decimal":               {"12.5%", 12.5, true},
		"leading dot":           {".5", 0.5, true},
		"zero":                  {"0%", 0, true},
		"empty":                 {"", 0, false},
		"percent sign only":     {"%", 0, false},
		"negative":              {"-5%", 0, false},
		"exponent":              {"1e2", 0, false},
		"two dots":              {"1.2.3", 0, false},
		"spaces":                {" 10%", 0, false},
		"double percent":        {"10%%", 0, false},
		"infinity is not valid": {"inf", 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ParsePercent(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParsePercent(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseRecommendationValue(f *testing.F) {
	for _, seed := range []string{"288m", "2", "192Mi", "134217727", "0", "-1", "1.5m", "9Ei", "1e3", "", " ", "Mi", "0.0001", "1E18", "123456789012345678901234567890"} {
		f.Add("cpu", "request", seed)
		f.Add("memory", "limit", seed)
	}
	f.Fuzz(func(t *testing.T, res, field, s string) {
		name := corev1.ResourceName(res)
		qv, err := ParseRecommendationValue(name, Field(field), s)
		if err != nil {
			return
		}
		if qv.Sign() < 0 {
			t.Fatalf("%q parsed to negative %s", s, qv.String())
		}
		if Field(field) == Limit && qv.IsZero() {
			t.Fatalf("%q parsed to a zero limit", s)
		}
		if u := toUnits(name, qv); u < 0 || u > maxUnits {
			t.Fatalf("%q parsed to %d units, outside [0, 2^62]", s, u)
		}
		back, err := resource.ParseQuantity(qv.String())
		if err != nil || back.Cmp(qv) != 0 {
			t.Fatalf("%q → %q does not round-trip: %v", s, qv.String(), err)
		}
		// Whole profile parsing never panics and never keeps what it reports.
		recs, problems := ParseRecommendations([]v1.ContainerProfile{{Name: "c", Recommendations: map[string]v1.Recommendation{res: {Request: s, Limit: s}}}})
		if len(problems) == 0 && len(recs["c"]) == 0 && s != "" {
			t.Fatalf("%q neither used nor reported", s)
		}
	})
}

func FuzzParsePercent(f *testing.F) {
	for _, seed := range []string{"10%", "15", "12.5%", ".5", "", "%", "-1", "1e2", "NaN", "inf", "1.2.3", "99999999999999999999999999999999%"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParsePercent(s)
		if !ok {
			if v != 0 {
				t.Fatalf("ParsePercent(%q) = %v with ok=false", s, v)
			}
			return
		}
		if v < 0 || v != v {
			t.Fatalf("ParsePercent(%q) = %v", s, v)
		}
	})
}
